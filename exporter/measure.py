"""Lazy, cached, single-flight measurement of one signal.

Measured only when scraped; the outcome (success or failure) is cached for the
TTL; concurrent scrapes share the one measurement in flight; the measurement
is cut at the deadline. A scrape that cannot wait for it gets None and the
measurement goes on to serve the next scrape.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Callable

from exporter.outcomes import Outcome, classify
from exporter.signals import Signal, Sources
from exporter.validate import complete

log = logging.getLogger("orpycamcp.measure")


class SignalCache:
    def __init__(
        self,
        signal: Signal,
        sources: Sources,
        ttl: float,
        deadline: float,
        monotonic: Callable[[], float] = time.monotonic,
        wall_clock: Callable[[], float] = time.time,
    ) -> None:
        self.signal = signal
        self.sources = sources
        self.ttl = ttl
        self.deadline = deadline
        self._monotonic = monotonic
        self._wall_clock = wall_clock
        self._outcome: Outcome | None = None
        self._outcome_at = 0.0
        self._in_flight: asyncio.Task[Outcome] | None = None
        self.measurements = 0
        self.generation = 0  # bumped with every new outcome, so a scrape can tell if anything changed

    @property
    def last(self) -> Outcome | None:
        """The last finished outcome, fresh or not."""
        return self._outcome

    def fresh(self) -> bool:
        return self._fresh() is not None

    def _fresh(self) -> Outcome | None:
        if self._outcome is not None and self._monotonic() - self._outcome_at < self.ttl:
            return self._outcome
        return None

    async def get(self, wait: float) -> Outcome | None:
        """The cached outcome, or a new one waited for at most `wait` seconds."""
        fresh = self._fresh()
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
            outcome = await self._measure()
            self._outcome = outcome
            self._outcome_at = self._monotonic()
            self.generation += 1
            return outcome
        finally:
            self._in_flight = None

    async def _measure(self) -> Outcome:
        self.measurements += 1
        previous = self._outcome.last_success if self._outcome else None
        started = self._monotonic()
        try:
            async with asyncio.timeout(self.deadline):
                raw = await self.signal.measure(self.sources)
            samples = complete(self.signal.name, raw)
        except Exception as exc:  # every failure is mapped in one place: outcomes.classify
            failure = classify(exc, self.deadline)
            duration = self._monotonic() - started
            log.warning(
                "signal %s unmeasured: %s: %s",
                self.signal.name,
                failure.reason,
                failure.detail,
                extra={"signal": self.signal.name, "reason": failure.reason, "duration_ms": round(duration * 1000, 1)},
                exc_info=failure.reason == "internal_error",
            )
            return Outcome(self.signal.name, None, duration, previous, failure)
        duration = self._monotonic() - started
        return Outcome(self.signal.name, samples, duration, self._wall_clock(), None)

    async def wait_idle(self) -> None:
        """Let a measurement in flight finish (used at shutdown and in tests)."""
        task = self._in_flight
        if task is not None:
            await asyncio.wait({task})
