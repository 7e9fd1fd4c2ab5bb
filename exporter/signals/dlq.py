"""dlq: pending dead-lettered events per origin_group, summed over all tenants,
and the creation time of the oldest one.

`created_at` is read as an instant whatever its type (timestamptz, or a
timestamp or date written in UTC, the contract's zone; exporter.zones), one
tenant's type may differ from another's, and the oldest is read as seconds
since the epoch: a time Python cannot hold is named, never decoded."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.column_types import INTEGER, ResultTypes, time_column
from exporter.zones import UTC, epoch_sql, instant_sql
from registry.families import DLQ_OLDEST, DLQ_PENDING

NAME = "dlq"
CREATED_AT = "evento_dead_letter.created_at"
TYPES = ResultTypes(NAME, "evento_dead_letter", {"events": INTEGER, "undated": INTEGER})


def batch_sql(schemas: Sequence[str]) -> str:
    # Aggregate once over a materialized union: no per-tenant GROUP BY to plan.
    union = "\n UNION ALL ".join(
        f"SELECT origin_group, {instant_sql('created_at', UTC)} AS created_at"
        f" FROM {schema}.evento_dead_letter WHERE status = 'pending'"
        for schema in schemas
    )
    return (
        f"WITH pending AS MATERIALIZED ({union})\n"
        f"SELECT origin_group, count(*) AS events, {epoch_sql('min(created_at)')} AS oldest,"
        " count(*) - count(created_at) AS undated"
        " FROM pending GROUP BY origin_group"
    )


async def measure(sources: Sources) -> list[Sample]:
    with time_column(NAME, CREATED_AT):
        rows = await sources.require_postgres(NAME).fetch_tenant_batches(NAME, batch_sql, types=TYPES)
    events: dict[str, int] = {}
    oldest: dict[str, float] = {}
    for row in rows:
        group = row["origin_group"]
        if group is None:
            raise ContractViolation(NAME, "evento_dead_letter.origin_group", "NULL in a pending event")
        if row["undated"]:
            raise ContractViolation(NAME, CREATED_AT, "NULL in a pending event")
        events[group] = events.get(group, 0) + row["events"]
        created = instant_seconds(NAME, CREATED_AT, row["oldest"])
        if group not in oldest or created < oldest[group]:
            oldest[group] = created
    return [Sample(DLQ_PENDING.name, (group,), count) for group, count in events.items()] + [
        Sample(DLQ_OLDEST.name, (group,), created) for group, created in oldest.items()
    ]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure, reads_tenants=True)
