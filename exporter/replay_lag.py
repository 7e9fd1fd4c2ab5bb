"""The replay lag of the hot standby the exporter reads from: a meta gauge,
measured apart from the signals so that it can never make one unmeasured.

Measured at most once per TTL, when scraped, by one small statement; absent
on a primary, and absent for a scrape when it cannot be read in time (the
signals say why the database cannot be read).

A standby's `now() - pg_last_xact_replay_timestamp()` grows while its
primary is idle, though nothing is missing. So when a WAL receiver is
running and has replayed everything it received, the lag is 0; otherwise
(the standby disconnected from its primary, or replaying WAL from an
archive) it is the age of the last replayed transaction, which overstates
the lag of a standby whose primary has been idle. A standby that has
replayed no transaction since it started, and is not caught up, reports
nothing.
"""

from __future__ import annotations

import asyncio
import logging
import math

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.lifecycle import Lifecycle, cancel_and_wait
from exporter.samples import Sample
from exporter.sources.postgres import Postgres
from exporter.timeouts import Timeouts
from registry.families import DATABASE_REPLAY_LAG

log = logging.getLogger("orpycamcp.replica")


class ReplayLag:
    """The replay lag, cached for the TTL like a signal; never raises while open."""

    def __init__(self, postgres: Postgres, ttl: float, timeouts: Timeouts, clock: Clock = SYSTEM_CLOCK) -> None:
        self.postgres = postgres
        self.ttl = ttl
        self.timeouts = timeouts
        self.clock = clock
        self._seconds: float | None = None
        self._at: float | None = None
        self._in_flight: asyncio.Task[float | None] | None = None
        self._life = Lifecycle("the replay-lag reader")
        self.generation = 0

    def fresh(self) -> bool:
        return self._at is not None and self.clock.monotonic() - self._at < self.ttl

    def samples(self) -> tuple[Sample, ...]:
        """The gauge as last read, if it is fresh and the database is a standby."""
        if not self.fresh() or self._seconds is None:
            return ()
        return (Sample(DATABASE_REPLAY_LAG.name, (), self._seconds),)

    async def refresh(self, wait: float) -> None:
        """Read the lag again if it is older than the TTL, waiting at most `wait` seconds."""
        self._life.ensure_open()
        if self.fresh():
            return
        if self._in_flight is None:
            self._in_flight = asyncio.create_task(self._read(), name="measure-replay-lag")
        try:
            await asyncio.wait_for(asyncio.shield(self._in_flight), timeout=max(wait, 0.0))
        except TimeoutError:
            return

    async def _read(self) -> float | None:
        try:
            try:
                async with asyncio.timeout(self.timeouts.deadline):
                    # The same reading the signals' staleness rule uses (exporter/freshness.py).
                    link = await self.postgres.standby_link()
                self._seconds = None if link is None or math.isinf(link.staleness) else link.staleness
            except Exception as exc:  # the signals report what is wrong with the database
                log.debug("replay lag not read: %s: %s", type(exc).__name__, exc)
                self._seconds = None
            self._at = self.clock.monotonic()
            self.generation += 1
            return self._seconds
        finally:
            self._in_flight = None

    async def close(self) -> None:
        """Cancel the reading in flight and wait for it to end (bounded)."""
        self._life.close()
        await cancel_and_wait([self._in_flight])
