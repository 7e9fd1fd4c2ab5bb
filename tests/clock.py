"""A clock the tests move by hand, so a TTL expires when the test says so
instead of after a real sleep. Deadlines stay real: they are asyncio timeouts
on the event loop's own clock, which this one does not touch."""

from __future__ import annotations

from exporter.measure import Clock

# Arbitrary but plausible starting points: a monotonic reading well above 0 (so
# "never measured" at 0.0 is in the past) and a wall time in 2026.
START_MONOTONIC = 1_000.0
START_WALL = 1_764_600_000.0


class FakeClock:
    """`monotonic()` and `wall()` stand still until `advance()` moves both."""

    def __init__(self, monotonic: float = START_MONOTONIC, wall: float = START_WALL) -> None:
        self._monotonic = monotonic
        self._wall = wall

    def monotonic(self) -> float:
        return self._monotonic

    def wall(self) -> float:
        return self._wall

    def advance(self, seconds: float) -> None:
        if seconds < 0:
            raise ValueError(f"a clock does not go back ({seconds} s)")
        self._monotonic += seconds
        self._wall += seconds

    @property
    def clock(self) -> Clock:
        """The exporter's view of this clock, for `build_exporter(..., clock=...)`."""
        return Clock(monotonic=self.monotonic, wall=self.wall)
