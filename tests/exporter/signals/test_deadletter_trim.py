"""The dead-letter streams as their daily `XTRIM <stream> MINID ~ <cutoff>` leaves
them on a real Redis (ADR-021 MVP-2): approximate trimming removes whole stream
nodes only, so entries past the horizon survive in the first node; the 101st
entry cannot share that node."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from tests.redis_streams import emptied_with_groups
from tests.scrapes import scrape_once

pytestmark = pytest.mark.anyio

DEAD = "orpycamcp.signature.deadletter"
OLDEST = "orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds"
ENTRY_101 = "orpycamcp_deadletter_stream_entry_101_timestamp_seconds"
ENTRIES = "orpycamcp_deadletter_stream_entries"
LABELS = (("stream", DEAD),)
BASE_MS = 1_760_000_000_000
CUTOFF_MS = BASE_MS + 1_000_000


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    async with emptied_with_groups(redis.url) as client:
        yield client


async def page_values(redis: LocalRedis) -> dict[str, dict[tuple[tuple[str, str], ...], float]]:
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    return {name: {k: v for k, v in page.family(name).items() if k == LABELS} for name in (ENTRIES, OLDEST, ENTRY_101)}


async def add(db: Redis, milliseconds: list[int]) -> None:
    pipe = db.pipeline(transaction=False)
    for index, ms in enumerate(milliseconds):
        pipe.xadd(DEAD, {"event": "failed", "n": str(index)}, id=f"{ms}-0")
    await pipe.execute()


async def test_a_trimmed_stream_keeps_old_entries_in_its_first_node_only(redis: LocalRedis, db: Redis) -> None:
    # 250 dead letters past the horizon, one within it: the record's case.
    await add(db, [BASE_MS + index for index in range(250)] + [CUTOFF_MS + 5])
    assert await db.xtrim(DEAD, minid=str(CUTOFF_MS), approximate=True) == 200
    values = await page_values(redis)
    # 51 left, 50 of them past the horizon: the first entry is old, healthy as it is.
    assert values[ENTRIES] == {LABELS: 51}
    assert values[OLDEST] == {LABELS: (BASE_MS + 200) / 1000}
    # 100 entries or fewer: they may all share one node, so no 101st entry.
    assert values[ENTRY_101] == {}


async def test_the_101st_entry_is_past_the_horizon_only_while_the_trim_is_not_running(
    redis: LocalRedis, db: Redis
) -> None:
    old = [BASE_MS + index for index in range(350)]
    await add(db, [*old, CUTOFF_MS + 5, CUTOFF_MS + 6])
    values = await page_values(redis)
    assert values[ENTRY_101] == {LABELS: (BASE_MS + 100) / 1000}
    # Trimmed: whole nodes of 100 entries go, the 101st entry is within the horizon.
    assert await db.xtrim(DEAD, minid=str(CUTOFF_MS), approximate=True) == 300
    values = await page_values(redis)
    assert values[ENTRIES] == {LABELS: 52}
    assert values[ENTRY_101] == {}
    await add(db, [CUTOFF_MS + 10 + index for index in range(60)])
    values = await page_values(redis)
    assert values[OLDEST] == {LABELS: (BASE_MS + 300) / 1000}
    # The 101st entry always follows the cutoff of the last trim: younger than the horizon.
    assert values[ENTRY_101] == {LABELS: (CUTOFF_MS + 10 + 48) / 1000}
    assert values[ENTRY_101][LABELS] * 1000 >= CUTOFF_MS
