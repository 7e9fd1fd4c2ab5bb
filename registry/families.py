"""Every metric family the exporter can emit, in exposition order.

Nothing outside this table can be emitted: a sample whose family, label or
label value is not declared here makes its signal unmeasured.
"""

from __future__ import annotations

import re
from dataclasses import replace
from typing import NamedTuple

from registry.model import Family, MetricType, Registry, RegistryError, ValueRule, check_unique, product, single
from registry.values import (
    ARTIFACTS,
    DEADLETTER_STREAMS,
    FAILURE_REASONS,
    ORIGIN_GROUPS,
    PHASES,
    PREFIX,
    SIGNALS,
    STREAM_GROUPS,
    UNDELIVERED_UNKNOWN_REASONS,
    VERSION,
)

META = "meta"


def meta_family(name: str, help: str, *, type: MetricType = MetricType.GAUGE, sparse: bool = False) -> Family:
    """A family of the exporter's own state, without labels: one series, or none when sparse."""
    return Family(name=name, help=help, signal=META, type=type, sparse=sparse)


SIGNAL_MEASURED = Family(
    name=PREFIX + "signal_measured",
    help="1 if the last measurement of the signal was complete, 0 if it could not be verified.",
    signal=META,
    labels=("signal",),
    combinations=single(SIGNALS),
)
SIGNAL_FAILURE = Family(
    name=PREFIX + "signal_failure_info",
    help="1 for the reason the signal is unmeasured now; absent while it is measured.",
    signal=META,
    labels=("signal", "reason"),
    combinations=product(SIGNALS, FAILURE_REASONS),
    sparse=True,
)
SIGNAL_LAST_SUCCESS = Family(
    name=PREFIX + "signal_last_success_timestamp_seconds",
    help="Unix time of the last complete measurement of the signal; absent if never.",
    signal=META,
    labels=("signal",),
    combinations=single(SIGNALS),
    sparse=True,
)
SIGNAL_DURATION = Family(
    name=PREFIX + "signal_measurement_duration_seconds",
    help="How long the last measurement of the signal took, successful or not.",
    signal=META,
    labels=("signal",),
    combinations=single(SIGNALS),
    sparse=True,
)
# How old the data of the measurement on the page is: the shipped rules merge
# the copies of one database (a primary and its standbys) by the newest data,
# never by the largest value (docs/sharding.md).
SIGNAL_DATA_TIME = Family(
    name=PREFIX + "signal_data_timestamp_seconds",
    help="Unix time of the data the signal's values on this page were read from: when the measurement began,"
    " less the hot standby's replay lag (the Redis replica's lag for streams); absent while the signal is unmeasured.",
    signal=META,
    labels=("signal",),
    combinations=single(SIGNALS),
    sparse=True,
)
# Each signal's own cadence (exporter/cadence.py): the shipped rules allow a
# signal's data to be as old as its own TTL before it counts as not measured now.
SIGNAL_TTL = Family(
    name=PREFIX + "signal_ttl_seconds",
    help="Seconds a measurement of the signal is served from cache before it is measured again (its own TTL).",
    signal=META,
    labels=("signal",),
    combinations=single(SIGNALS),
)
DLQ_PENDING = Family(
    name=PREFIX + "dlq_pending_events",
    help="Dead-lettered events pending an administrator, summed over all tenants.",
    signal="dlq",
    labels=("origin_group",),
    combinations=single(ORIGIN_GROUPS),
)
DLQ_OLDEST = Family(
    name=PREFIX + "dlq_oldest_pending_timestamp_seconds",
    help="Unix time the oldest pending dead-lettered event was created; absent when none is pending.",
    signal="dlq",
    labels=("origin_group",),
    combinations=single(ORIGIN_GROUPS),
    sparse=True,
)
PRESERVATION_EXHAUSTED = Family(
    name=PREFIX + "preservation_exhausted_artifacts",
    help="Preservation artifacts whose retries are exhausted, summed over all tenants.",
    signal="preservation",
    labels=("artifact", "phase"),
    combinations=product(ARTIFACTS, PHASES),
)
# The built-in table signals' families: the pending counts, then the oldest (None: none).
# Their names and label names are ADR-041's; a declarations file may replace the
# tables, columns, status words and label values they are read from, so their
# combinations (see extended's `replaced`).
TABLE_SIGNAL_FAMILIES: dict[str, tuple[Family, Family | None]] = {
    "dlq": (DLQ_PENDING, DLQ_OLDEST),
    "preservation": (PRESERVATION_EXHAUSTED, None),
}
AUDIT_BREAKS = Family(
    name=PREFIX + "audit_chain_breaks",
    help="Breaks found by the last complete audit-chain verification run.",
    signal="audit_chain",
    sparse=True,
)
AUDIT_DECLARED_BREAKS = Family(
    name=PREFIX + "audit_chain_declared_breaks",
    help="Breaks already declared at the last complete audit-chain verification run.",
    signal="audit_chain",
    sparse=True,
)
AUDIT_VERIFICATION_OK = Family(
    name=PREFIX + "audit_chain_verification_ok",
    help="1 if the last complete audit-chain verification run succeeded, 0 if it failed.",
    signal="audit_chain",
    sparse=True,
)
AUDIT_LAST_VERIFICATION = Family(
    name=PREFIX + "audit_chain_last_verification_timestamp_seconds",
    help="Unix time the last complete audit-chain verification run finished.",
    signal="audit_chain",
    sparse=True,
)
# The platform's migration advisory lock (ADR-041 C19), in the database read.
MIGRATION_LOCK_HELD = Family(
    name=PREFIX + "migration_lock_held",
    help='1 while a session holds the platform\'s migration advisory lock (ADR-041 C19, the key "ORPYCAM1")'
    " in the database read (pg_locks), 0 while none does.",
    signal="migration_lock",
)
MIGRATION_LOCK_WAITERS = Family(
    name=PREFIX + "migration_lock_waiters",
    help="Sessions blocked in pg_advisory_lock waiting for the migration lock (pg_locks, not granted); the"
    " platform's migrators retry pg_try_advisory_lock and are never counted here.",
    signal="migration_lock",
)
MIGRATION_LOCK_HOLDER_START = Family(
    name=PREFIX + "migration_lock_holder_session_start_timestamp_seconds",
    help="Unix time the session holding the migration lock started (pg_stat_activity.backend_start; the lock"
    " was taken at or after it); absent while the lock is free or the start is hidden from the exporter's role.",
    signal="migration_lock",
    sparse=True,
)
MIGRATION_LOCK_HOLDER_START_UNKNOWN = Family(
    name=PREFIX + "migration_lock_holder_session_start_unknown",
    help="1 while the migration lock is held by another role's session whose start pg_stat_activity hides"
    " from the exporter's role (no pg_read_all_stats or pg_monitor); absent otherwise.",
    signal="migration_lock",
    sparse=True,
)
# What the platform's daily purges leave behind (ADR-021 MVP-1, MVP-3), over every tenant.
HOUSEKEEPING_TERMINAL_OLDEST = Family(
    name=PREFIX + "housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds",
    help="Unix time the oldest terminal (resolved or discarded) dead letter of the origin group was resolved,"
    " over all tenants; the platform's daily purge deletes them 90 days after; absent when none is terminal"
    " with a resolved_at.",
    signal="housekeeping",
    labels=("origin_group",),
    combinations=single(ORIGIN_GROUPS),
    sparse=True,
)
HOUSEKEEPING_TERMINAL_UNDATED = Family(
    name=PREFIX + "housekeeping_dead_letter_terminal_without_resolved_at",
    help="Terminal (resolved or discarded) dead letters with a NULL resolved_at, summed over all tenants;"
    " the platform's purge never deletes them.",
    signal="housekeeping",
    labels=("origin_group",),
    combinations=single(ORIGIN_GROUPS),
)
HOUSEKEEPING_DEDUP_OLDEST = Family(
    name=PREFIX + "housekeeping_notification_dedup_oldest_processed_timestamp_seconds",
    help="Unix time the oldest notification dedup row (notification_processed_events) was processed, over all"
    " tenants; the platform's daily purge deletes them 7 days after; absent when the table is empty everywhere.",
    signal="housekeeping",
    sparse=True,
)
STREAM_PENDING = Family(
    name=PREFIX + "stream_pending_messages",
    help="Messages in the consumer group's pending entries list (delivered, not acknowledged).",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
)
STREAM_OLDEST_PENDING = Family(
    name=PREFIX + "stream_oldest_pending_timestamp_seconds",
    help="Unix time encoded in the smallest pending entry ID of the group; absent when nothing is pending.",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
    sparse=True,
)
STREAM_OLDEST_PENDING_DELIVERIES = Family(
    name=PREFIX + "stream_oldest_pending_deliveries",
    help="Times the group's oldest pending entry was delivered (its XPENDING delivery counter, claims included);"
    " absent when nothing is pending.",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
    sparse=True,
)
STREAM_UNDELIVERED = Family(
    name=PREFIX + "stream_undelivered_entries",
    help="Entries of the stream not yet delivered to the consumer group (XINFO GROUPS lag, Redis 7.0+);"
    " absent while Redis cannot count them or counts them wrong (orpycamcp_stream_undelivered_unknown).",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
    sparse=True,
)
STREAM_UNDELIVERED_UNKNOWN = Family(
    name=PREFIX + "stream_undelivered_unknown",
    help="1 while the group's undelivered count is withheld: Redis's lag is nil or contradicts the stream's"
    " length, last ID or counters (redis/redis#13957); absent while it is published.",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
    sparse=True,
)
STREAM_UNDELIVERED_UNKNOWN_GROUPS = Family(
    name=PREFIX + "stream_undelivered_unknown_groups",
    help="Consumer groups whose undelivered count is withheld, by the first rule Redis's lag failed.",
    signal="streams",
    labels=("reason",),
    combinations=single(UNDELIVERED_UNKNOWN_REASONS),
)
STREAM_CONSUMERS = Family(
    name=PREFIX + "stream_consumers",
    help="Consumers the consumer group knows (XINFO CONSUMERS), alive or not.",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
)
STREAM_CONSUMER_IDLE = Family(
    name=PREFIX + "stream_consumer_idle_seconds",
    help="Seconds since the group's most recently seen consumer last tried to read or claim (the smallest"
    " XINFO CONSUMERS idle); absent when the group has no consumer.",
    signal="streams",
    labels=("stream", "group"),
    combinations=STREAM_GROUPS,
    sparse=True,
)
DEADLETTER_ENTRIES = Family(
    name=PREFIX + "deadletter_stream_entries",
    help="Entries in the dead-letter stream (XLEN).",
    signal="streams",
    labels=("stream",),
    combinations=single(DEADLETTER_STREAMS),
)
DEADLETTER_OLDEST = Family(
    name=PREFIX + "deadletter_stream_oldest_entry_timestamp_seconds",
    help="Unix time encoded in the first entry ID of the dead-letter stream; absent when it is empty.",
    signal="streams",
    labels=("stream",),
    combinations=single(DEADLETTER_STREAMS),
    sparse=True,
)
DEADLETTER_ENTRY_101 = Family(
    name=PREFIX + "deadletter_stream_entry_101_timestamp_seconds",
    help="Unix time encoded in the ID of the dead-letter stream's 101st entry, the first that cannot share the"
    " first stream node (100 entries at Redis's default stream-node-max-entries); absent with 100 entries or fewer.",
    signal="streams",
    labels=("stream",),
    combinations=single(DEADLETTER_STREAMS),
    sparse=True,
)
REDIS_REPLICA_LAG = meta_family(
    PREFIX + "redis_replica_lag_seconds",
    "How far behind its master the Redis replica the streams are read from may be: seconds since it last"
    " heard from its master, or since its link went down; absent when the server read is a master.",
    sparse=True,
)
DATABASE_REPLAY_LAG = meta_family(
    PREFIX + "database_replay_lag_seconds",
    "How far the hot standby the exporter reads from lags behind its primary (0 when it has replayed"
    " all it received from a connected primary); absent on a primary.",
    sparse=True,
)
# Which database the exporter measures, as the database itself says: PostgreSQL's
# system identifier (equal on a primary and its physical standbys, written once
# by initdb) and the database's OID within it. The shipped rules merge replicas
# and count the platform's databases by it (docs/sharding.md).
DATABASE_IDENTITY_RULE = ValueRule(
    pattern=r"[0-9]{1,20}/[0-9]{1,10}",
    description="`<system identifier>/<database OID>`, decimal digits",
    max_length=31,
)
DATABASE_IDENTITY = Family(
    name=PREFIX + "database_identity_info",
    help="Always 1; database_identity names the database measured: <PostgreSQL system identifier>/<database OID>,"
    " the same on a primary and its standbys; absent while it cannot be read.",
    signal=META,
    labels=("database_identity",),
    combinations=(),
    sparse=True,
    rule=DATABASE_IDENTITY_RULE,
)
DATABASE_IDENTITY_FAILURE = Family(
    name=PREFIX + "database_identity_failure_info",
    help="1 for the reason the database's identity cannot be read now; absent while it is read.",
    signal=META,
    labels=("reason",),
    combinations=single(FAILURE_REASONS),
    sparse=True,
)
BUILD_INFO = Family(
    name=PREFIX + "exporter_build_info",
    help="Always 1; the version label names the running exporter.",
    signal=META,
    labels=("version",),
    combinations=single((VERSION,)),
)
# The HTTP server's own state, not a measurement: read when a page is sent
# (exporter.http.connections), never cached with the measured families.
HTTP_CONNECTIONS = meta_family(PREFIX + "exporter_http_connections", "HTTP connections open now, idle ones included.")
HTTP_CONNECTIONS_SHED = meta_family(
    PREFIX + "exporter_http_connections_shed_total",
    "HTTP connections closed to stay under the connection cap, the longest idle first.",
    type=MetricType.COUNTER,
)

# The process itself, with the names, types and units of the Prometheus client
# libraries, so dashboards and rules written for any exporter read them; sampled
# when a page is sent (exporter.process), absent where /proc cannot be read.
PROCESS_START_TIME = meta_family(
    "process_start_time_seconds", "Start time of the process since unix epoch in seconds.", sparse=True
)
PROCESS_CPU = meta_family(
    "process_cpu_seconds_total",
    "Total user and system CPU time spent in seconds.",
    type=MetricType.COUNTER,
    sparse=True,
)
PROCESS_RESIDENT_MEMORY = meta_family("process_resident_memory_bytes", "Resident memory size in bytes.", sparse=True)
PROCESS_VIRTUAL_MEMORY = meta_family("process_virtual_memory_bytes", "Virtual memory size in bytes.", sparse=True)
PROCESS_OPEN_FDS = meta_family("process_open_fds", "Number of open file descriptors.", sparse=True)
PROCESS_MAX_FDS = meta_family("process_max_fds", "Maximum number of open file descriptors.", sparse=True)

FAMILIES: tuple[Family, ...] = (
    SIGNAL_MEASURED,
    SIGNAL_FAILURE,
    SIGNAL_LAST_SUCCESS,
    SIGNAL_DURATION,
    SIGNAL_DATA_TIME,
    SIGNAL_TTL,
    DLQ_PENDING,
    DLQ_OLDEST,
    PRESERVATION_EXHAUSTED,
    AUDIT_BREAKS,
    AUDIT_DECLARED_BREAKS,
    AUDIT_VERIFICATION_OK,
    AUDIT_LAST_VERIFICATION,
    MIGRATION_LOCK_HELD,
    MIGRATION_LOCK_WAITERS,
    MIGRATION_LOCK_HOLDER_START,
    MIGRATION_LOCK_HOLDER_START_UNKNOWN,
    HOUSEKEEPING_TERMINAL_OLDEST,
    HOUSEKEEPING_TERMINAL_UNDATED,
    HOUSEKEEPING_DEDUP_OLDEST,
    STREAM_PENDING,
    STREAM_OLDEST_PENDING,
    STREAM_OLDEST_PENDING_DELIVERIES,
    STREAM_UNDELIVERED,
    STREAM_UNDELIVERED_UNKNOWN,
    STREAM_UNDELIVERED_UNKNOWN_GROUPS,
    STREAM_CONSUMERS,
    STREAM_CONSUMER_IDLE,
    DEADLETTER_ENTRIES,
    DEADLETTER_OLDEST,
    DEADLETTER_ENTRY_101,
    REDIS_REPLICA_LAG,
    DATABASE_REPLAY_LAG,
    DATABASE_IDENTITY,
    DATABASE_IDENTITY_FAILURE,
    BUILD_INFO,
    HTTP_CONNECTIONS,
    HTTP_CONNECTIONS_SHED,
    PROCESS_CPU,
    PROCESS_OPEN_FDS,
    PROCESS_MAX_FDS,
    PROCESS_VIRTUAL_MEMORY,
    PROCESS_RESIDENT_MEMORY,
    PROCESS_START_TIME,
)
CONNECTION_FAMILIES: tuple[Family, ...] = (HTTP_CONNECTIONS, HTTP_CONNECTIONS_SHED)
PROCESS_FAMILIES: tuple[Family, ...] = (
    PROCESS_CPU,
    PROCESS_OPEN_FDS,
    PROCESS_MAX_FDS,
    PROCESS_VIRTUAL_MEMORY,
    PROCESS_RESIDENT_MEMORY,
    PROCESS_START_TIME,
)
# Rendered per response after the cached page: they must come last to keep registry order.
TAIL_FAMILIES: tuple[Family, ...] = CONNECTION_FAMILIES + PROCESS_FAMILIES

check_unique(FAMILIES)
if FAMILIES[-len(TAIL_FAMILIES) :] != TAIL_FAMILIES:
    raise RegistryError(TAIL_FAMILIES[0].name, "the per-response families must close the registry")

BY_NAME: dict[str, Family] = {family.name: family for family in FAMILIES}


def families_of(signal: str) -> tuple[Family, ...]:
    """The value families a signal emits, in registry order."""
    return tuple(family for family in FAMILIES if family.signal == signal)


for _signal in SIGNALS:
    if not families_of(_signal):
        raise RegistryError(_signal, "signal has no value family in the registry")


# A stream signal declared apart from `streams` is named streams_<name>: the
# shipped rules tell the bus's signals from the database's by that prefix.
STREAM_SIGNAL_NAME = re.compile(r"streams_[a-z0-9_]{1,32}")


class StreamSignalShape(NamedTuple):
    """A signal of its own reading these (stream, group) pairs and dead-letter streams."""

    name: str
    groups: tuple[tuple[str, str], ...]
    deadletter_streams: tuple[str, ...]


# The families a stream signal apart emits for its pairs (its withheld undelivered counts
# are marked per pair; orpycamcp_stream_undelivered_unknown_groups, which has no pair
# label, counts the streams signal's groups only: a second part would repeat its series).
PAIR_FAMILIES = (
    STREAM_PENDING,
    STREAM_OLDEST_PENDING,
    STREAM_OLDEST_PENDING_DELIVERIES,
    STREAM_UNDELIVERED,
    STREAM_UNDELIVERED_UNKNOWN,
    STREAM_CONSUMERS,
    STREAM_CONSUMER_IDLE,
)
DEADLETTER_FAMILIES = (DEADLETTER_ENTRIES, DEADLETTER_OLDEST, DEADLETTER_ENTRY_101)


def _stream_parts(family: Family, stream_signals: tuple[StreamSignalShape, ...]) -> tuple[Family, ...]:
    """The parts of a streams family the stream signals declared apart emit, after the streams signal's."""
    if family in PAIR_FAMILIES:
        return tuple(replace(family, signal=s.name, combinations=s.groups) for s in stream_signals if s.groups)
    if family in DEADLETTER_FAMILIES:
        return tuple(
            replace(family, signal=s.name, combinations=single(s.deadletter_streams))
            for s in stream_signals
            if s.deadletter_streams
        )
    return ()


def _check_read_once(
    stream_groups: tuple[tuple[str, str], ...],
    deadletter_streams: tuple[str, ...],
    stream_signals: tuple[StreamSignalShape, ...],
) -> None:
    """Each pair and dead-letter stream is read by one signal: never a series twice on the page.
    `stream_groups`, `deadletter_streams`: every one the streams signal reads."""
    for s in stream_signals:
        if not STREAM_SIGNAL_NAME.fullmatch(s.name):
            raise RegistryError(s.name, "a stream signal's name is streams_ and [a-z0-9_]{1,32}")
    pairs = stream_groups + tuple(p for s in stream_signals for p in s.groups)
    if len(set(pairs)) != len(pairs):
        raise RegistryError(STREAM_PENDING.name, "a (stream, group) pair is read by two signals")
    streams = deadletter_streams + tuple(d for s in stream_signals for d in s.deadletter_streams)
    if len(set(streams)) != len(streams):
        raise RegistryError(DEADLETTER_ENTRIES.name, "a dead-letter stream is read by two signals")


def _replacing(replaced: tuple[Family, ...]) -> dict[str, Family]:
    """The replacements by name, each a table signal's family with other label values only."""
    table_families = {f.name: f for pair in TABLE_SIGNAL_FAMILIES.values() for f in pair if f is not None}
    for family in replaced:
        builtin = table_families.get(family.name)
        if builtin is None:
            raise RegistryError(family.name, "only a built-in table signal's family may be replaced")
        if replace(family, combinations=builtin.combinations) != builtin:
            raise RegistryError(family.name, "a replaced family keeps its name, signal, help and label names (ADR-041)")
    if len({family.name for family in replaced}) != len(replaced):
        raise RegistryError(replaced[0].name, "a family is replaced twice")
    return {family.name: family for family in replaced}


def extended(
    signals: tuple[str, ...],
    families: tuple[Family, ...],
    stream_groups: tuple[tuple[str, str], ...] = (),
    deadletter_streams: tuple[str, ...] = (),
    stream_signals: tuple[StreamSignalShape, ...] = (),
    replaced: tuple[Family, ...] = (),
    builtin_streams: tuple[tuple[tuple[str, str], ...], tuple[str, ...]] = (STREAM_GROUPS, DEADLETTER_STREAMS),
) -> Registry:
    """The built-in registry extended at start with more signals and their value
    families, with more (stream, group) pairs and dead-letter streams for
    the streams signal's families (declared after the built-in ones), and with
    stream signals of their own (their parts of the streams families after the
    streams signal's, their names after `signals`): the per-signal families
    then accept the new signals too, and the new families come after the
    built-in ones, before build_info (and the process families, which always
    close the page). A family of `replaced` takes the place of the built-in
    family of its name: a table signal's, only its combinations differing.
    `builtin_streams`: the streams signal's own pairs and dead-letter streams,
    the shipped ones unless the contract replaces them."""
    groups = builtin_streams[0] + stream_groups
    deadletters = single(builtin_streams[1] + deadletter_streams)
    _check_read_once(groups, builtin_streams[1] + deadletter_streams, stream_signals)
    replacing = _replacing(replaced)
    everything = SIGNALS + signals + tuple(s.name for s in stream_signals)
    more: dict[Family, tuple[tuple[str, ...], ...]] = {
        SIGNAL_MEASURED: single(everything),
        SIGNAL_LAST_SUCCESS: single(everything),
        SIGNAL_DURATION: single(everything),
        SIGNAL_DATA_TIME: single(everything),
        SIGNAL_TTL: single(everything),
        SIGNAL_FAILURE: product(everything, FAILURE_REASONS),
        STREAM_PENDING: groups,
        STREAM_OLDEST_PENDING: groups,
        STREAM_OLDEST_PENDING_DELIVERIES: groups,
        STREAM_UNDELIVERED: groups,
        STREAM_UNDELIVERED_UNKNOWN: groups,
        STREAM_CONSUMERS: groups,
        STREAM_CONSUMER_IDLE: groups,
        DEADLETTER_ENTRIES: deadletters,
        DEADLETTER_OLDEST: deadletters,
        DEADLETTER_ENTRY_101: deadletters,
    }
    builtin = tuple(
        part
        for family in FAMILIES
        if family is not BUILD_INFO and family not in TAIL_FAMILIES
        for part in (
            replacing.get(family.name, replace(family, combinations=more[family]) if family in more else family),
            *_stream_parts(family, stream_signals),
        )
    )
    return Registry(
        families=(*builtin, *families, BUILD_INFO, *TAIL_FAMILIES),
        signals=everything,
        meta=META,
    )


BUILTIN: Registry = extended((), ())
