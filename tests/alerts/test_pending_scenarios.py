"""The pending-list alerts over 110 minutes of a real Redis worked as the platform's
consumers work it (ADR-021: ack on success, a reclaim sweep every 30 s claiming
entries idle for 60 s, dead-lettering at the fifth delivery), one entry written
a second on orpycamcp.document.events, measured every 30 s (the exporter's TTL).

* workflow-service: a poison pill dead-lettered at its fifth delivery (minutes
  5 to 9), then stopped for an hour (minutes 20 to 80) and caught up at five
  times the write rate: healthy work, no page.
* signature-service: from minute 30 one entry hangs in its consumer while the
  rest flow (its sweep broken): OrpycamcpStreamPendingTooOld within 15 minutes.
* notification-service: a poison pill from minute 10 whose dead-lettering
  fails (R-4): OrpycamcpStreamDeadLetteringFailing 3 minutes after its count
  passes 5, and never the slow-consumer alert.
"""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from registry import BUILTIN
from tests.redis_streams import emptied_with_groups, streams_source

from .replay import Check, Recording, alert_labels, promtool_test

pytestmark = pytest.mark.anyio

STREAM = "orpycamcp.document.events"
DEAD = "orpycamcp.workflow.deadletter"
STEP_S = 30
MINUTES = 110
WRITES_PER_STEP = 30  # one entry a second
MIN_IDLE_S = 60
MAX_DELIVERIES = 5
STUCK = "OrpycamcpStreamPendingTooOld"
FAILING = "OrpycamcpStreamDeadLetteringFailing"


@dataclass
class Consumer:
    """One consumer group's service: reads, acknowledges what it processed, and sweeps."""

    group: str
    in_flight: list[str] = field(default_factory=list)
    delivered_at: dict[str, int] = field(default_factory=dict)  # poison pills: the last delivery (simulated s)
    poison_at_s: int | None = None  # the first entry read at this time fails every delivery
    dead_lettering_fails: bool = False
    hangs_at_s: int | None = None  # the first entry read at this time never returns, and the sweep is broken
    stopped: tuple[int, int] | None = None  # (from, to): scaled to zero, in-flight acknowledged first
    held: set[str] = field(default_factory=set)

    async def step(self, db: Redis, now_s: int) -> None:
        if self.in_flight:
            await db.xack(STREAM, self.group, *self.in_flight)
        self.in_flight = []
        if self.stopped is not None and self.stopped[0] <= now_s < self.stopped[1]:
            return
        if self.hangs_at_s is None:
            await self.sweep(db, now_s)
        catching_up = self.stopped is not None and now_s >= self.stopped[1]
        count = 5 * WRITES_PER_STEP if catching_up else WRITES_PER_STEP
        # [[stream, [(ID, fields), ...]]] (redis-py types the RESP3 form too)
        reply: Any = await db.xreadgroup(self.group, "c1", {STREAM: ">"}, count=count)
        ids = [entry_id for _, entries in reply for entry_id, _ in entries]
        if ids and now_s in (self.poison_at_s, self.hangs_at_s):
            self.held.add(ids[0])
            self.delivered_at[ids[0]] = now_s
            ids = ids[1:]
        self.in_flight = ids

    async def sweep(self, db: Redis, now_s: int) -> None:
        """reclaim_stale for the held entries: claimed once idle, dead-lettered at max_deliveries."""
        for entry_id in sorted(self.held):
            if now_s - self.delivered_at[entry_id] < MIN_IDLE_S:
                continue
            (pending,) = await db.xpending_range(STREAM, self.group, entry_id, entry_id, 1)
            before = int(pending["times_delivered"])
            await db.xclaim(STREAM, self.group, "c1", min_idle_time=0, message_ids=[entry_id])
            self.delivered_at[entry_id] = now_s
            if before + 1 >= MAX_DELIVERIES:  # the handler failed again (or no fresh attempt): dead-letter
                await db.xadd(DEAD, {"event": "failed", "id": entry_id})
                if not self.dead_lettering_fails:
                    await db.xack(STREAM, self.group, entry_id)
                    self.held.discard(entry_id)


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    async with emptied_with_groups(redis.url) as client:
        yield client


def minutes(count: float) -> int:
    return int(count * 60)


async def replay(db: Redis, url: str) -> Recording:
    consumers = [
        Consumer("workflow-service", poison_at_s=minutes(5), stopped=(minutes(20), minutes(80))),
        Consumer("signature-service", hangs_at_s=minutes(30)),
        Consumer("notification-service", poison_at_s=minutes(10), dead_lettering_fails=True),
    ]
    source = streams_source(url, deadline=5.0)
    recording = Recording(step_s=STEP_S)
    start_s = int(time.time()) - minutes(MINUTES) - 600  # every ID in the past
    try:
        for step in range(minutes(MINUTES) // STEP_S + 1):
            now_s = step * STEP_S
            pipe = db.pipeline(transaction=False)
            for second in range(WRITES_PER_STEP):
                pipe.xadd(
                    STREAM, {"event": "document.signed"}, id=f"{(start_s + now_s - STEP_S + second + 1) * 1000}-0"
                )
            await pipe.execute()
            for consumer in consumers:
                await consumer.step(db, now_s)
            await recording.measure(source, BUILTIN, start_s + now_s)
    finally:
        await source.close()
    return recording


def expected(at_s: int, since_s: int, group: str, alert: str) -> Check | None:
    """`alert` fires for `group` alone from `since_s` on (a step either side left unchecked)."""
    if abs(at_s - since_s) <= STEP_S:
        return None
    firing = (alert_labels(alert, stream=STREAM, group=group),) if at_s > since_s else ()
    return Check(at_s, alert, firing)


async def test_catch_up_is_no_page_a_stuck_entry_and_failing_dead_letters_are(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    recording = await replay(db, redis.url)
    deliveries = "orpycamcp_stream_oldest_pending_deliveries"
    (counts,) = [v for k, v in recording.values.items() if k.startswith(deliveries) and "notification-service" in k]
    assert max(counts.values()) > MAX_DELIVERIES + 5  # the sweep kept claiming it, a delivery a minute
    oldest = "orpycamcp_stream_oldest_pending_timestamp_seconds"
    (workflow,) = [v for k, v in recording.values.items() if k.startswith(oldest) and "workflow-service" in k]
    # The catch-up held hour-old entries pending: the age the alert used to page on.
    assert max(step * STEP_S - ts for step, ts in workflow.items()) > minutes(55)

    checks = []
    for at_s in range(0, minutes(MINUTES) + 1, STEP_S):
        # Hung at minute 30: the oldest and unchanged for 10 minutes, then `for` 5 minutes.
        checks.append(expected(at_s, minutes(45), "signature-service", STUCK))
        # Five deliveries by minute 14, the sixth (a claim) at 15: past 5 for 3 minutes.
        checks.append(expected(at_s, minutes(18), "notification-service", FAILING))
    promtool_test(recording, [check for check in checks if check is not None], tmp_path, evaluation_s=STEP_S)
