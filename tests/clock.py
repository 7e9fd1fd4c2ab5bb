"""A clock the tests move by hand, so a TTL expires (and an idle connection
closes) when the test says so instead of after a real sleep. Deadlines stay
real: they are asyncio timeouts on the event loop's own clock, which this one
does not touch."""

from __future__ import annotations

import heapq
import itertools
from collections.abc import Callable

from exporter.clock import Clock, Timer

# Arbitrary but plausible starting points: a monotonic reading well above 0 (so
# "never measured" at 0.0 is in the past) and a wall time in 2026.
START_MONOTONIC = 1_000.0
START_WALL = 1_764_600_000.0


class FakeTimer:
    def __init__(self, callback: Callable[[], None]) -> None:
        self.callback = callback
        self.cancelled = False

    def cancel(self) -> None:
        self.cancelled = True


class FakeClock:
    """`monotonic()` and `wall()` stand still until `advance()` moves both and
    fires, in order, the timers (`call_later`) that fall due."""

    def __init__(self, monotonic: float = START_MONOTONIC, wall: float = START_WALL) -> None:
        self._monotonic = monotonic
        self._wall = wall
        self._timers: list[tuple[float, int, FakeTimer]] = []
        self._order = itertools.count()

    def monotonic(self) -> float:
        return self._monotonic

    def wall(self) -> float:
        return self._wall

    def call_later(self, delay: float, callback: Callable[[], None]) -> Timer:
        timer = FakeTimer(callback)
        heapq.heappush(self._timers, (self._monotonic + max(delay, 0.0), next(self._order), timer))
        return timer

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        end = self._monotonic + seconds
        while self._timers and self._timers[0][0] <= end:
            due, _, timer = heapq.heappop(self._timers)
            self._wall += due - self._monotonic
            self._monotonic = due
            if not timer.cancelled:
                timer.callback()
        self._wall += end - self._monotonic
        self._monotonic = end

    @property
    def clock(self) -> Clock:
        """The exporter's view of this clock, for `build_exporter(..., clock=...)`."""
        return Clock(monotonic=self.monotonic, wall=self.wall, call_later=self.call_later)


class LeapingClock:
    """A monotonic clock a TTL and more later at every reading: every TTL
    checked has ended since the reading before, in particular between a
    reading and the rendering of its page. Its timers never fire."""

    def __init__(self, leap: float) -> None:
        self.leap = leap
        self.now = START_MONOTONIC
        self.idle = FakeClock()

    def monotonic(self) -> float:
        self.now += self.leap
        return self.now

    @property
    def clock(self) -> Clock:
        return Clock(monotonic=self.monotonic, wall=self.idle.wall, call_later=self.idle.call_later)
