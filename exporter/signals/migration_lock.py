"""migration_lock: the platform's migration advisory lock, read from pg_locks.

ADR-041 C19 (/work/shared/platform-records/002_470949ef92db8c5b.txt, "C19 — Un
cerrojo global"): `orpycamcp_common.migrations.cerrojo` takes
`pg_try_advisory_lock` on one fixed constant, CERROJO_MIGRACIONES, "the eight
ASCII bytes of «ORPYCAM1», readable in pg_locks", retried every 0.5 s up to
MIGRATIONS_LOCK_TIMEOUT_S (600 s), after which the service fails closed. The
key is those eight bytes read as one big-endian bigint (0x4F52505943414D31);
pg_locks shows a bigint advisory key as its high half in `classid`, its low
half in `objid` and `objsubid` 1, in the database the lock was taken in.

pg_locks is readable by every role, so held and waiters are exact for the
least-privilege role. How long the lock is held is not in pg_locks: the
holder's session start (pg_stat_activity.backend_start; a migrator connects,
takes the lock, migrates, exits) bounds it. pg_stat_activity hides it from a
role without pg_read_all_stats (or pg_monitor) for another role's session:
then the start is withheld (`..._holder_session_start_unknown` 1), never a
wrong age. `xact_start` is not read: the lock outlives the per-file
transactions, so a transaction's start says less than the session's.

A hot standby has no advisory locks of its primary: the signal is unmeasured
there (`hot_standby`), never a held 0 the primary contradicts.
"""

from __future__ import annotations

from exporter.contract.fixed import CLASSID, OBJID
from exporter.errors import ContractViolation, HotStandby
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.postgres.column_types import BOOLEAN, INTEGER, ResultTypes
from exporter.zones import epoch_sql
from registry.families import (
    MIGRATION_LOCK_HELD,
    MIGRATION_LOCK_HOLDER_START,
    MIGRATION_LOCK_HOLDER_START_UNKNOWN,
    MIGRATION_LOCK_WAITERS,
)

NAME = "migration_lock"

# CERROJO_MIGRACIONES (ADR-041 C19): the eight ASCII bytes of "ORPYCAM1" as a
# bigint, with the record's words, in the contract (exporter/contract/fixed.py).

LOCK_SQL = (
    "SELECT pg_is_in_recovery() AS standby,"
    " count(*) FILTER (WHERE l.granted) AS holders,"
    " count(*) FILTER (WHERE NOT l.granted) AS waiters,"
    " count(a.backend_start) FILTER (WHERE l.granted) AS holders_seen,"
    f" {epoch_sql('min(a.backend_start) FILTER (WHERE l.granted)')} AS holder_start"
    " FROM pg_catalog.pg_locks AS l"
    " LEFT JOIN pg_catalog.pg_stat_activity AS a ON a.pid = l.pid"
    " WHERE l.locktype = 'advisory'"
    " AND l.database = (SELECT oid FROM pg_catalog.pg_database WHERE datname = current_database())"
    f" AND l.classid = {CLASSID}::oid AND l.objid = {OBJID}::oid AND l.objsubid = 1"
)
TYPES = ResultTypes(
    NAME,
    "pg_locks",
    {"standby": BOOLEAN, "holders": INTEGER, "waiters": INTEGER, "holders_seen": INTEGER},
)
HOLDER_START = "pg_stat_activity.backend_start"


async def measure(sources: Sources) -> list[Sample]:
    rows = await sources.require_postgres(NAME).fetch(LOCK_SQL, types=TYPES)
    if len(rows) != 1:
        raise ContractViolation(NAME, "pg_locks", f"{len(rows)} rows from an aggregate")
    row = rows[0]
    if row["standby"]:
        raise HotStandby(NAME)
    holders: int = row["holders"]
    samples = [
        Sample(MIGRATION_LOCK_HELD.name, (), 1 if holders > 0 else 0),
        Sample(MIGRATION_LOCK_WAITERS.name, (), row["waiters"]),
    ]
    if holders == 0:
        return samples
    if row["holders_seen"] < holders:
        # Another role's session, and no pg_read_all_stats: its start is NULL.
        return [*samples, Sample(MIGRATION_LOCK_HOLDER_START_UNKNOWN.name, (), 1)]
    start = instant_seconds(NAME, HOLDER_START, row["holder_start"])
    return [*samples, Sample(MIGRATION_LOCK_HOLDER_START.name, (), start)]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure)
