"""Lazy, cached, single-flight measurement of one signal.

Measured only when scraped; the outcome (success or failure) is cached for the
TTL; concurrent scrapes share the one measurement in flight; the measurement
is cut at the deadline. A scrape that cannot wait for it gets None and the
measurement goes on to serve the next scrape. Closing cancels the measurement
in flight; a cache closed measures nothing more. The pattern itself:
exporter/reading.py.
"""

from __future__ import annotations

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.measure import measure
from exporter.outcomes import Outcome
from exporter.reading import CachedReading
from exporter.signals import Signal
from exporter.sources import Sources
from exporter.timeouts import Timeouts
from registry import Registry


class SignalCache:
    def __init__(
        self,
        signal: Signal,
        sources: Sources,
        ttl: float,
        timeouts: Timeouts,
        registry: Registry,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.signal = signal
        self.registry = registry
        self.sources = sources
        self.timeouts = timeouts
        self.clock = clock
        self._reading = CachedReading(
            self._measure,
            keep_for=ttl,
            task=f"measure-{signal.name}",
            life=f"the cache of signal {signal.name}",
            clock=clock,
        )

    @property
    def ttl(self) -> float:
        return self._reading.keep_for

    @ttl.setter
    def ttl(self, seconds: float) -> None:
        self._reading.keep_for = seconds

    @property
    def measurements(self) -> int:
        return self._reading.reads

    @property
    def generation(self) -> int:
        """Changes with every new outcome, so a scrape can tell if anything changed."""
        return self._reading.generation

    @property
    def last(self) -> Outcome | None:
        """The last finished outcome, fresh or not."""
        return None if self._reading.last is None else self._reading.last.value

    def fresh(self) -> bool:
        """Whether the last outcome is younger than the TTL."""
        return self._reading.fresh()

    async def get(self, wait: float) -> Outcome | None:
        """The cached outcome, or a new one waited for at most `wait` seconds."""
        reading = await self._reading.get(wait)
        return None if reading is None else reading.value

    async def _measure(self) -> Outcome:
        previous = self.last.last_success if self.last is not None else None
        return await measure(self.signal, self.sources, self.timeouts, self.registry, previous, self.clock)

    async def close(self) -> None:
        """Cancel the measurement in flight and wait for it to end (bounded)."""
        await self._reading.close()
