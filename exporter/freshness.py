"""Replicas are only as good as their link: one rule for a Redis replica and a
PostgreSQL hot standby.

A replica serves what it has, however long ago it last heard from its master.
Each source says how far behind the server it reads may be (`ReplicaLink`:
Redis from `INFO replication`, read in the same round trip as the streams;
PostgreSQL from `STANDBY_SQL`); past the bound, the signals read there are
unmeasured with `replica_stale` rather than showing a stale value as current.
A server that never synchronised with its master may be behind by anything.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import NamedTuple

from exporter.errors import ReplicaStale
from exporter.samples import Sample
from registry.families import REDIS_REPLICA_LAG

# A standby's lag, as `orpycamcp_database_replay_lag_seconds` reports it: 0 when
# its WAL receiver runs and it has replayed all it received; else the age of
# the last replayed transaction (which overstates it while the primary is
# idle); NULL when it replayed nothing since it started and is not caught up.
STANDBY_SQL = """
SELECT pg_is_in_recovery() AS standby, CASE
    WHEN NOT pg_is_in_recovery() THEN NULL
    WHEN pg_last_wal_replay_lsn() >= pg_last_wal_receive_lsn()
         AND EXISTS (SELECT FROM pg_stat_wal_receiver) THEN 0
    WHEN pg_last_xact_replay_timestamp() IS NULL THEN NULL
    ELSE greatest(0, extract(epoch FROM now() - pg_last_xact_replay_timestamp()))
END::float8 AS lag
"""


class ReplicaLink(NamedTuple):
    """What a replica says of its link: how far behind its master it may be."""

    server: str  # "Redis replica 127.0.0.1:6380", "PostgreSQL standby"
    staleness: float  # seconds; math.inf when it never synchronised
    state: str  # the same, in words, for the reason's detail


def require_fresh(signal: str, link: ReplicaLink | None, bound: float, setting: str) -> None:
    """The one rule: a replica behind by more than `bound` seconds makes `signal` unmeasured."""
    if link is not None and link.staleness > bound:
        raise ReplicaStale(signal, link.server, link.state, bound, setting)


def standby_link(standby: bool, lag: float | None) -> ReplicaLink | None:
    """A PostgreSQL server's link from a `STANDBY_SQL` row; None on a primary."""
    if not standby:
        return None
    if lag is None:
        return ReplicaLink("PostgreSQL standby", math.inf, "has replayed no transaction and is not caught up")
    return ReplicaLink("PostgreSQL standby", lag, f"last replayed transaction {lag:.0f} s old, not caught up")


def redis_link(server: str, info: Mapping[str, object]) -> ReplicaLink | None:
    """A Redis server's link from its `INFO replication`; None on a master.

    With the link up, the replica has what its master sent up to its last word
    (`master_last_io_seconds_ago`: the master pings every
    `repl-ping-replica-period`, 10 s by default); with it down, it has nothing
    since `master_link_down_since_seconds` (-1 or missing: never synchronised).
    """
    if info.get("role") != "slave":
        return None
    name = f"Redis replica {server}"
    if info.get("master_link_status") == "up":
        last = _seconds(info.get("master_last_io_seconds_ago"))
        if last is not None:
            return ReplicaLink(name, last, f"link to its master up, last heard from it {last:.0f} s ago")
    down = _seconds(info.get("master_link_down_since_seconds"))
    if down is None:
        return ReplicaLink(name, math.inf, "has never synchronised with its master")
    return ReplicaLink(name, down, f"link to its master down for {down:.0f} s")


def _seconds(value: object) -> float | None:
    """A non-negative count of seconds from INFO, or None (absent, -1, not a number)."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int | float):
        number = float(value)
    elif isinstance(value, str):
        try:
            number = float(value)
        except ValueError:
            return None
    else:
        return None
    return number if math.isfinite(number) and number >= 0 else None


def redis_lag_samples(link: ReplicaLink | None) -> tuple[Sample, ...]:
    """The Redis replica gauge: absent on a master, or when unbounded (never synchronised)."""
    if link is None or math.isinf(link.staleness):
        return ()
    return (Sample(REDIS_REPLICA_LAG.name, (), link.staleness),)
