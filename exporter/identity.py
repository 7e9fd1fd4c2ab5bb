"""Which database the exporter measures, read from the database itself: a meta
gauge the shipped rules merge replicas and count the platform's databases by
(docs/sharding.md).

`<system identifier>/<database OID>`: pg_control_system() gives the identifier
initdb wrote into the control file, which a physical standby shares with its
primary; the OID tells apart two databases of one PostgreSQL instance. Both
are the same through PgBouncer (either pool mode), on any host of a multi-host
URL that serves this cluster, and for every replica of the exporter. Readable
by any role (no grant beyond CONNECT).

Read like the replay lag: at most once per TTL, when scraped, one small
statement in the exporter's read-only transaction, bounded by the deadline.
The identity cannot change between two readings, so a page shows the last
reading that ended, however old: while the next one runs past the scrape's
wait, and however long the scrape took after it (a TTL that ends between
the reading and the page changes nothing). When the last reading failed the
family is absent and orpycamcp_database_identity_failure_info says why: never
a guess, never a value read before a failed reading. scrape_timeout only
before the first reading ended.
"""

from __future__ import annotations

import asyncio
import logging

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.errors import IdentityOutsideRule
from exporter.lifecycle import Lifecycle, cancel_and_wait
from exporter.outcomes import classify
from exporter.reasons import Reason
from exporter.samples import Sample
from exporter.sources.postgres import Postgres
from exporter.timeouts import Timeouts
from registry.families import DATABASE_IDENTITY, DATABASE_IDENTITY_FAILURE, DATABASE_IDENTITY_RULE

log = logging.getLogger("orpycamcp.identity")

IDENTITY_SQL = (
    "SELECT (SELECT system_identifier FROM pg_control_system()) AS system_identifier,"
    " (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database()) AS database_oid"
)
# pg_control_system() returns the unsigned 64-bit identifier as a signed bigint.
_UINT64 = 1 << 64


def identity_of(system_identifier: object, database_oid: object) -> str:
    """The published identity, or IdentityOutsideRule for anything else (a NULL, a non-integer)."""
    if isinstance(system_identifier, bool) or not isinstance(system_identifier, int):
        raise IdentityOutsideRule(system_identifier, DATABASE_IDENTITY_RULE.pattern)
    if isinstance(database_oid, bool) or not isinstance(database_oid, int) or database_oid <= 0:
        raise IdentityOutsideRule(database_oid, DATABASE_IDENTITY_RULE.pattern)
    value = f"{system_identifier % _UINT64}/{database_oid}"
    if not DATABASE_IDENTITY_RULE.accepts(value):
        raise IdentityOutsideRule(value, DATABASE_IDENTITY_RULE.pattern)
    return value


class DatabaseIdentity:
    """The identity, read again once the TTL has passed (failures too); the last
    reading is served until the next one ends. Never raises while open."""

    def __init__(self, postgres: Postgres, ttl: float, timeouts: Timeouts, clock: Clock = SYSTEM_CLOCK) -> None:
        self.postgres = postgres
        self.ttl = ttl
        self.timeouts = timeouts
        self.clock = clock
        self._identity: str | None = None
        self._failure: Reason | None = None
        self._at: float | None = None
        self._in_flight: asyncio.Task[None] | None = None
        self._life = Lifecycle("the database identity reader")
        self.generation = 0

    def fresh(self) -> bool:
        return self._at is not None and self.clock.monotonic() - self._at < self.ttl

    def samples(self) -> tuple[Sample, ...]:
        """The identity as last read, fresh or not, or why it could not be (scrape_timeout: no reading ended yet)."""
        if self._at is None:
            return (Sample(DATABASE_IDENTITY_FAILURE.name, (Reason.SCRAPE_TIMEOUT.value,), 1),)
        if self._identity is not None:
            return (Sample(DATABASE_IDENTITY.name, (self._identity,), 1),)
        reason = self._failure or Reason.INTERNAL_ERROR
        return (Sample(DATABASE_IDENTITY_FAILURE.name, (reason.value,), 1),)

    async def refresh(self, wait: float) -> None:
        """Read the identity again if it is older than the TTL, waiting at most `wait` seconds
        (a reading still running then serves the next scrape; this one shows the last)."""
        self._life.ensure_open()
        if self.fresh():
            return
        if self._in_flight is None:
            self._in_flight = asyncio.create_task(self._read(), name="read-database-identity")
        try:
            await asyncio.wait_for(asyncio.shield(self._in_flight), timeout=max(wait, 0.0))
        except TimeoutError:
            return

    async def _read(self) -> None:
        try:
            try:
                async with asyncio.timeout(self.timeouts.deadline):
                    row = (await self.postgres.fetch(IDENTITY_SQL))[0]
                self._identity, self._failure = identity_of(row["system_identifier"], row["database_oid"]), None
            except Exception as exc:  # one place maps it to a reason
                failure = classify(exc, self.timeouts.deadline)
                log.warning("database identity not read: %s: %s", failure.reason.value, failure.detail)
                self._identity, self._failure = None, failure.reason
            self._at = self.clock.monotonic()
            self.generation += 1
        finally:
            self._in_flight = None

    async def close(self) -> None:
        """Cancel the reading in flight and wait for it to end (bounded)."""
        self._life.close()
        await cancel_and_wait([self._in_flight])
