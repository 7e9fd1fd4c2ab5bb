"""The parts of the printed contract no declarations file changes: the
migration lock's key and catalogs (a file may repeat them as printed, any
other value is refused), and the streams signal's part around its pairs and
dead-letter streams (those a file may replace: exporter.declared_streams)."""

from __future__ import annotations

from typing import Any

from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS, UNDELIVERED_UNKNOWN_REASONS


def pairs(groups: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    """(stream, group) pairs as the contract writes them: each stream's groups."""
    by_stream: dict[str, list[str]] = {}
    for stream, group in groups:
        by_stream.setdefault(stream, []).append(group)
    return by_stream


# CERROJO_MIGRACIONES, the platform's migration advisory lock (ADR-041 C19,
# /work/shared/platform-records/002_470949ef92db8c5b.txt: "pg_try_advisory_lock
# sobre una constante fija (CERROJO_MIGRACIONES, los ocho bytes ASCII de
# «ORPYCAM1», legible en pg_locks)"): those eight bytes as one big-endian bigint;
# pg_locks shows its high half as classid, its low half as objid, objsubid 1.
LOCK_KEY = int.from_bytes(b"ORPYCAM1", "big")
CLASSID = LOCK_KEY >> 32
OBJID = LOCK_KEY & 0xFFFFFFFF


# What the platform's daily purges delete (ADR-021): MVP-3 "DELETE FROM
# evento_dead_letter WHERE status IN ('resolved', 'discarded') ... AND
# resolved_at < now() - make_interval(days => $3)", MVP-1 "DELETE FROM
# notification_processed_events WHERE processed_at < now() - make_interval(days => $1)",
# both in the schema of every tenant the jobs list: "public.tenants WHERE status='active'
# AND provisioning_status='active'" (a suspended tenant's rows are never purged).
PURGED_TENANTS_STATUS = ("status", "active")
DEAD_LETTERS = "evento_dead_letter"
TERMINAL = ("resolved", "discarded")
RESOLVED_AT = "resolved_at"
DEDUP = "notification_processed_events"
PROCESSED_AT = "processed_at"


def streams_signal(groups: tuple[tuple[str, str], ...], deadletter_streams: tuple[str, ...]) -> dict[str, Any]:
    """The streams signal's part of the contract, reading these pairs and dead-letter streams."""
    return {
        "source": "redis",
        "consumer_groups": pairs(groups),
        "dead_letter_streams": list(deadletter_streams),
        # Why a group's undelivered count may be withheld (orpycamcp_stream_undelivered_unknown_groups).
        "undelivered_unknown_reasons": list(UNDELIVERED_UNKNOWN_REASONS),
    }


def fixed_signals() -> dict[str, dict[str, Any]]:
    """migration_lock's and housekeeping's parts of the contract (never replaced), and the
    streams signal's as shipped."""
    return {
        # ADR-041 C19: read from the catalogs every role may read, in the database read.
        "migration_lock": {
            "source": "postgresql",
            "scope": "database",
            "tables": ["pg_catalog.pg_locks", "pg_catalog.pg_stat_activity"],
            "advisory_lock": {"key": "ORPYCAM1", "bigint": LOCK_KEY, "classid": CLASSID, "objid": OBJID, "objsubid": 1},
            "holder_start": "pg_stat_activity.backend_start",
        },
        # ADR-021 MVP-3 and MVP-1: the rows the daily purges delete, in every tenant's schema.
        "housekeeping": {
            "source": "postgresql",
            "scope": "tenant",
            # Beside the tenant list's conditions: the purge jobs skip every other status.
            "tenants": {PURGED_TENANTS_STATUS[0]: PURGED_TENANTS_STATUS[1]},
            "tables": {
                DEAD_LETTERS: {
                    "terminal": {"status": list(TERMINAL)},
                    "oldest": RESOLVED_AT,
                    "labels": {"origin_group": {"column": "origin_group"}},
                },
                DEDUP: {"oldest": PROCESSED_AT},
            },
        },
        "streams": streams_signal(STREAM_GROUPS, DEADLETTER_STREAMS),
    }
