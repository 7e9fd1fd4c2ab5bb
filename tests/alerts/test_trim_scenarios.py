"""OrpycamcpDeadletterStreamEntriesTooOld over 120 days of a real Redis trimmed as
the platform trims its dead-letter streams (ADR-021 MVP-2: `XTRIM <stream> MINID ~
<now - 30 days>` once a day), from one dead letter a week to 10,000 a day.

Trimmed every day: no page at any rate, although the quiet streams keep entries
months past the horizon. The trim stopped on day 60: a page within 2 days from
10 dead letters a day up (a stream holding more than 100 entries); never at one
a week (17 entries in 120 days: all may share one node, nothing a trim would
remove)."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator
from pathlib import Path

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from registry.families import extended
from tests.redis_streams import emptied_with_groups, streams_source

from .replay import Check, Recording, alert_labels, promtool_test

pytestmark = pytest.mark.anyio

DAY_S = 86_400
STEP_S = DAY_S  # a measurement a day, just before the day's trim: the oldest state of the day
DAYS = 120
STOP_DAY = 60
HORIZON_S = 30 * DAY_S
ALERT = "OrpycamcpDeadletterStreamEntriesTooOld"
# Dead letters a day.
RATES = {"1-a-week": 1 / 7, "10-a-day": 10, "100-a-day": 100, "1000-a-day": 1000, "10000-a-day": 10_000}
# Entries added by the server itself: 1,200,000 XADDs through a client would take a minute.
ADD = """
for i = 0, tonumber(ARGV[3]) - 1 do
  redis.call('XADD', KEYS[1], string.format('%d-0', tonumber(ARGV[1]) + i * tonumber(ARGV[2])), 'event', 'failed')
end
"""


def stream(rate: str, trim: str) -> str:
    return f"orpycamcp.replay.{rate}.{trim}.deadletter"


STREAMS = tuple(stream(rate, trim) for rate in RATES for trim in ("trimmed", "stopped"))


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    async with emptied_with_groups(redis.url) as client:
        yield client


async def add_between(db: Redis, name: str, per_day: float, start_ms: int, after_ms: int, until_ms: int) -> None:
    """The dead letters of a stream receiving `per_day` evenly from `start_ms`, written in (after_ms, until_ms]."""
    spacing_ms = round(DAY_S * 1000 / per_day)
    first = -(-(after_ms + 1 - start_ms) // spacing_ms)  # the first index past after_ms
    last = (until_ms - start_ms) // spacing_ms
    if last >= first:
        await db.eval(ADD, 1, name, str(start_ms + first * spacing_ms), str(spacing_ms), str(last - first + 1))


async def replay(db: Redis, url: str) -> Recording:
    registry = extended((), (), deadletter_streams=STREAMS)
    source = streams_source(url, deadline=5.0)
    recording = Recording(step_s=STEP_S, repeat=24)
    end_s = int(time.time()) - DAY_S  # every ID in the past
    start_s = end_s - DAYS * DAY_S
    try:
        for day in range(DAYS + 1):
            now_s = start_s + day * DAY_S
            for rate, per_day in RATES.items():
                for trim in ("trimmed", "stopped"):
                    await add_between(
                        db, stream(rate, trim), per_day, start_s * 1000, (now_s - DAY_S) * 1000, now_s * 1000
                    )
            await recording.measure(source, registry, now_s)
            for rate in RATES:
                names = [stream(rate, "trimmed")] + ([stream(rate, "stopped")] if day < STOP_DAY else [])
                for name in names:
                    await db.xtrim(name, minid=str((now_s - HORIZON_S) * 1000), approximate=True)
    finally:
        await source.close()
    return recording


def firing(*rates: str) -> tuple[dict[str, str], ...]:
    return tuple(alert_labels(ALERT, stream=stream(rate, "stopped")) for rate in rates)


async def test_a_daily_approximate_trim_never_pages_and_a_stopped_one_pages_within_two_days(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    recording = await replay(db, redis.url)
    # The quiet streams trimmed every day keep entries far past the horizon: the
    # first entry's age says nothing (the alert before #37 paged on it).
    oldest = "orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds"
    for rate in ("1-a-week", "10-a-day"):
        (firsts,) = [v for k, v in recording.values.items() if k.startswith(oldest) and stream(rate, "trimmed") in k]
        assert max(step * STEP_S - first for step, first in firsts.items()) > HORIZON_S + 2 * DAY_S, rate

    stop_s = STOP_DAY * DAY_S
    checks = [Check(at, ALERT) for at in range(0, stop_s, 3600)]
    stopped = firing("10-a-day", "100-a-day", "1000-a-day", "10000-a-day")
    checks += [Check(at, ALERT, stopped) for at in range(stop_s + 2 * DAY_S, DAYS * DAY_S + 1, DAY_S)]
    promtool_test(recording, checks, tmp_path, evaluation_s=3600)
