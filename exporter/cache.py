"""Lazy, cached, single-flight measurement of one signal.

Measured only when scraped; the outcome (success or failure) is cached for the
TTL; concurrent scrapes share the one measurement in flight; the measurement
is cut at the deadline. A scrape that cannot wait for it gets None and the
measurement goes on to serve the next scrape. Closing cancels the measurement
in flight; a cache closed measures nothing more.
"""

from __future__ import annotations

import asyncio

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.lifecycle import Lifecycle, cancel_and_wait
from exporter.measure import measure
from exporter.outcomes import Outcome
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
        self.ttl = ttl
        self.timeouts = timeouts
        self.clock = clock
        self._outcome: Outcome | None = None
        self._outcome_at = 0.0
        self._in_flight: asyncio.Task[Outcome] | None = None
        self._life = Lifecycle(f"the cache of signal {signal.name}")
        self.measurements = 0
        self.generation = 0  # bumped with every new outcome, so a scrape can tell if anything changed

    @property
    def last(self) -> Outcome | None:
        """The last finished outcome, fresh or not."""
        return self._outcome

    def fresh(self) -> Outcome | None:
        """The last outcome if it is younger than the TTL."""
        if self._outcome is not None and self.clock.monotonic() - self._outcome_at < self.ttl:
            return self._outcome
        return None

    async def get(self, wait: float) -> Outcome | None:
        """The cached outcome, or a new one waited for at most `wait` seconds."""
        self._life.ensure_open()
        fresh = self.fresh()
        if fresh is not None:
            return fresh
        if self._in_flight is None:
            self._in_flight = asyncio.create_task(self._refresh(), name=f"measure-{self.signal.name}")
        try:
            return await asyncio.wait_for(asyncio.shield(self._in_flight), timeout=max(wait, 0.0))
        except TimeoutError:
            return None

    async def _refresh(self) -> Outcome:
        try:
            self.measurements += 1
            previous = self._outcome.last_success if self._outcome else None
            outcome = await measure(self.signal, self.sources, self.timeouts, self.registry, previous, self.clock)
            self._outcome = outcome
            self._outcome_at = self.clock.monotonic()
            self.generation += 1
            return outcome
        finally:
            self._in_flight = None

    async def close(self) -> None:
        """Cancel the measurement in flight and wait for it to end (bounded)."""
        self._life.close()
        await cancel_and_wait([self._in_flight])
