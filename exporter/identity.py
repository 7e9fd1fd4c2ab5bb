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

from exporter.errors import IdentityOutsideRule
from exporter.meta import MetaReader
from exporter.outcomes import classify
from exporter.reasons import Reason
from exporter.samples import Sample
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


class DatabaseIdentity(MetaReader[str | Reason]):
    """The identity, read again once the TTL has passed (failures too); the last
    reading is served until the next one ends."""

    task = "read-database-identity"
    what = "the database identity reader"

    def samples_of(self, value: str | Reason | None) -> tuple[Sample, ...]:
        """The identity as read, or why it could not be (scrape_timeout: no reading ended yet)."""
        if value is None:
            return (Sample(DATABASE_IDENTITY_FAILURE.name, (Reason.SCRAPE_TIMEOUT.value,), 1),)
        if isinstance(value, Reason):
            return (Sample(DATABASE_IDENTITY_FAILURE.name, (value.value,), 1),)
        return (Sample(DATABASE_IDENTITY.name, (value,), 1),)

    async def read(self) -> str | Reason:
        try:
            async with asyncio.timeout(self.timeouts.deadline):
                row = (await self.postgres.fetch(IDENTITY_SQL))[0]
            return identity_of(row["system_identifier"], row["database_oid"])
        except Exception as exc:  # one place maps it to a reason
            failure = classify(exc, self.timeouts.deadline)
            log.warning("database identity not read: %s: %s", failure.reason.value, failure.detail)
            return failure.reason
