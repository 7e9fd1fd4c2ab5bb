"""housekeeping: what the platform's daily purges leave behind, over the tenants they walk.

ADR-021 (MVP-1 and MVP-3) promises two daily purges in the schema of every
tenant whose status is 'active' (beside the tenant list's own conditions; a
suspended tenant's rows are kept, so reading them would page for a purge that
runs):

- terminal dead letters (`evento_dead_letter`, status `resolved` or
  `discarded`) are deleted once `resolved_at` is 90 days old, per
  origin_group; `pending` is never purged;
- `notification_processed_events` (the notification dedup guard) rows are
  deleted once `processed_at` is 7 days old.

While a purge runs, the oldest row it leaves is at most its horizon plus one
interval old; the alerts compare the oldest times read here with those
horizons. A terminal dead letter with a NULL `resolved_at` breaks the
platform's invariant (`transition_status` sets both in one UPDATE) and is never
purged (NULL is never `< now() - interval`): it is counted, never a failure.

Those tenants are read through the batched tenant reading the table signals use
(exporter.sources.postgres.source fetch_tenant_batches); the oldest time is absent
when no row is there (none resolved yet, no notification processed).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import replace

import asyncpg

from exporter.conditions import Condition
from exporter.contract.fixed import DEAD_LETTERS, DEDUP, PROCESSED_AT, PURGED_TENANTS_STATUS, RESOLVED_AT, TERMINAL
from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.postgres.column_types import INTEGER, ResultTypes, time_column
from exporter.sources.postgres.source import Postgres
from exporter.zones import UTC, epoch_sql, instant_sql
from registry.families import HOUSEKEEPING_DEDUP_OLDEST, HOUSEKEEPING_TERMINAL_OLDEST, HOUSEKEEPING_TERMINAL_UNDATED

NAME = "housekeeping"

# The tables, columns and statuses the purges delete by: the contract's (exporter/contract/fixed.py).
RESOLVED = f"{DEAD_LETTERS}.{RESOLVED_AT}"
PROCESSED = f"{DEDUP}.{PROCESSED_AT}"

TYPES = ResultTypes(NAME, DEAD_LETTERS, {"undated": INTEGER})


def branches(schema: str) -> tuple[str, str]:
    """One tenant's terminal dead letters per origin_group and its dedup table, each
    already aggregated (kind, grp, ts, undated): the oldest dedup row is read from
    the index on processed_at (min of the bare column), a NULL in it by an index
    probe, so its cost does not grow with the rows the purge keeps."""
    statuses = ", ".join(f"'{status}'" for status in TERMINAL)
    return (
        f"SELECT 'dl' AS kind, origin_group AS grp, {instant_sql(f'min({RESOLVED_AT})', UTC)} AS ts,"
        f" count(*) - count({RESOLVED_AT}) AS undated"
        f" FROM {schema}.{DEAD_LETTERS} WHERE status IN ({statuses}) GROUP BY origin_group",
        f"SELECT 'dd' AS kind, NULL::text AS grp, {instant_sql(f'min({PROCESSED_AT})', UTC)} AS ts,"
        f" (SELECT count(*) FROM (SELECT FROM {schema}.{DEDUP} WHERE {PROCESSED_AT} IS NULL LIMIT 1) AS n) AS undated"
        f" FROM {schema}.{DEDUP}",
    )


def batch_sql(schemas: Sequence[str]) -> str:
    # Each tenant's rows aggregated in its branch, then once over the batch.
    union = "\n UNION ALL ".join(branch for schema in schemas for branch in branches(schema))
    return (
        f"WITH rows AS MATERIALIZED ({union})\n"
        f"SELECT kind, grp, {epoch_sql('min(ts)')} AS oldest, sum(undated)::bigint AS undated"
        " FROM rows GROUP BY kind, grp"
    )


class Oldest:
    """The oldest times (the least of every batch's) and the undated counts (their sum)."""

    def __init__(self) -> None:
        self.terminal: dict[tuple[str, ...], float] = {}
        self.undated: dict[tuple[str, ...], int] = {}
        self.dedup: float | None = None

    def add(self, row: asyncpg.Record) -> None:
        if row["kind"] == "dd":
            if row["undated"]:
                raise ContractViolation(NAME, PROCESSED, "NULL in a row read")
            if row["oldest"] is not None:
                seconds = instant_seconds(NAME, PROCESSED, row["oldest"])
                self.dedup = seconds if self.dedup is None else min(self.dedup, seconds)
            return
        if row["grp"] is None:
            raise ContractViolation(NAME, f"{DEAD_LETTERS}.origin_group", "NULL in a row read")
        group = (row["grp"],)
        self.undated[group] = self.undated.get(group, 0) + row["undated"]
        if row["oldest"] is not None:
            seconds = instant_seconds(NAME, RESOLVED, row["oldest"])
            self.terminal[group] = min(self.terminal.get(group, seconds), seconds)

    def samples(self) -> list[Sample]:
        return [
            *(Sample(HOUSEKEEPING_TERMINAL_OLDEST.name, group, seconds) for group, seconds in self.terminal.items()),
            *(Sample(HOUSEKEEPING_TERMINAL_UNDATED.name, group, count) for group, count in self.undated.items()),
            *(() if self.dedup is None else (Sample(HOUSEKEEPING_DEDUP_OLDEST.name, (), self.dedup),)),
        ]


async def purged_tenants(postgres: Postgres) -> frozenset[str]:
    """The tenants the purge jobs walk: the tenant list's whose status is also 'active',
    read as the tenant list is (its errors, its refusal of a NULL where it looks)."""
    tenants = postgres.settings.tenants
    column, value = PURGED_TENANTS_STATUS
    return frozenset(
        await postgres.tenant_slugs(replace(tenants, measured=(*tenants.measured, Condition(column, (value,)))))
    )


async def measure(sources: Sources) -> list[Sample]:
    postgres = sources.require_postgres(NAME)
    within = await purged_tenants(postgres)
    with time_column(NAME, RESOLVED):
        rows = await postgres.fetch_tenant_batches(NAME, batch_sql, (), TYPES, within=within)
    oldest = Oldest()
    for row in rows:
        oldest.add(row)
    return oldest.samples()


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure, reads_tenants=True)
