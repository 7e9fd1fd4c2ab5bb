"""The one cached, single-flight, closeable reading (exporter/reading.py): one read
for every caller while it runs, its value kept for the TTL, an exception passed
to the callers of that read and not kept, the last reading served past the wait
when asked for, nothing read once closed. Time is tests/clock.py's; a read ends
when the test says."""

from __future__ import annotations

import asyncio

import pytest

from exporter.errors import Closed
from exporter.reading import CachedReading
from tests.clock import FakeClock

pytestmark = pytest.mark.anyio
TTL = 10.0


class Reads:
    """Reads that end when the test releases them, numbered from 1, or raise when told to."""

    def __init__(self) -> None:
        self.release = asyncio.Event()
        self.started = 0
        self.fail: Exception | None = None

    async def __call__(self) -> int:
        self.started += 1
        await self.release.wait()
        if self.fail is not None:
            raise self.fail
        return self.started


def reading(reads: Reads, clock: FakeClock, serve_last: bool = False) -> CachedReading[int]:
    return CachedReading(
        reads, keep_for=TTL, task="test-read", life="the test reading", clock=clock.clock, serve_last=serve_last
    )


async def test_concurrent_callers_share_one_read_and_the_ttl_keeps_it() -> None:
    reads, clock = Reads(), FakeClock()
    cached = reading(reads, clock)
    waiting = [asyncio.ensure_future(cached.value()) for _ in range(5)]
    await asyncio.sleep(0)
    reads.release.set()
    assert await asyncio.gather(*waiting) == [1] * 5
    assert (reads.started, cached.generation, cached.fresh()) == (1, 1, True)
    clock.advance(TTL - 0.01)
    assert await cached.value() == 1
    clock.advance(0.01)
    assert not cached.fresh()
    assert await cached.value() == 2
    assert (reads.started, cached.reads, cached.generation) == (2, 2, 2)


async def test_an_exception_reaches_the_callers_of_its_read_and_is_not_kept() -> None:
    reads, clock = Reads(), FakeClock()
    cached = reading(reads, clock)
    reads.fail, reads.release = ValueError("refused"), asyncio.Event()
    reads.release.set()
    for _ in range(2):
        with pytest.raises(ValueError, match="refused"):
            await cached.value()
    assert (reads.started, cached.last, cached.generation) == (2, None, 0)


async def test_past_the_wait_none_or_the_last_reading_and_the_read_goes_on() -> None:
    for serve_last in (False, True):
        reads, clock = Reads(), FakeClock()
        cached = reading(reads, clock, serve_last)
        assert await cached.get(0) is None  # nothing read yet either way
        reads.release.set()
        first = await cached.get(60)
        assert first is not None
        assert first.value == 1
        reads.release.clear()
        clock.advance(TTL)
        served = await cached.get(0)
        assert served == (first if serve_last else None)
        assert reads.started == 2, "the read past the wait goes on"
        reads.release.set()
        again = await cached.get(60)
        assert again is not None
        assert (again.value, again.generation) == (2, 2)


async def test_closing_cancels_the_read_in_flight_and_reads_nothing_more() -> None:
    reads, clock = Reads(), FakeClock()
    cached = reading(reads, clock)
    assert await cached.get(0) is None
    task = cached.in_flight
    assert task is not None
    await cached.close()
    assert task.cancelled()
    with pytest.raises(Closed, match="the test reading is closed"):
        await cached.value()
    assert reads.started == 1
