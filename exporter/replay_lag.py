"""The replay lag of the hot standby the exporter reads from: a meta gauge,
measured apart from the signals so that it can never make one unmeasured.

Measured at most once per TTL, when scraped, by one small statement; absent
on a primary, and absent when it could not be read (the signals say why the
database cannot be read). A page shows the last reading that ended: while the
next one runs past the scrape's wait, and however long the scrape took after
it (a TTL that ends between the reading and the page changes nothing), so the
value shown is at most a TTL and a deadline old.

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

from exporter.meta import MetaReader
from exporter.samples import Sample
from registry.families import DATABASE_REPLAY_LAG

log = logging.getLogger("orpycamcp.replica")


class ReplayLag(MetaReader[float | None]):
    """The replay lag, cached for the TTL like a signal; the last reading is served
    until the next one ends."""

    task = "measure-replay-lag"
    what = "the replay-lag reader"

    def samples_of(self, value: float | None) -> tuple[Sample, ...]:
        """The gauge as read, if the database is a standby whose lag could be read."""
        return () if value is None else (Sample(DATABASE_REPLAY_LAG.name, (), value),)

    async def read(self) -> float | None:
        try:
            async with asyncio.timeout(self.timeouts.deadline):
                # The same reading the signals' staleness rule uses (exporter/freshness.py).
                link = await self.postgres.standby_link()
        except Exception as exc:  # the signals report what is wrong with the database
            log.debug("replay lag not read: %s: %s", type(exc).__name__, exc)
            return None
        return None if link is None or math.isinf(link.staleness) else link.staleness
