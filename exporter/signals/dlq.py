"""dlq: pending dead-lettered events per origin_group, summed over all tenants,
and the creation time of the oldest one."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import datetime

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, epoch_seconds
from exporter.sources import Sources
from registry.families import DLQ_OLDEST, DLQ_PENDING

NAME = "dlq"


def batch_sql(schemas: Sequence[str]) -> str:
    # Aggregate once over a materialized union: no per-tenant GROUP BY to plan.
    union = "\n UNION ALL ".join(
        f"SELECT origin_group, created_at FROM {schema}.evento_dead_letter WHERE status = 'pending'"
        for schema in schemas
    )
    return (
        f"WITH pending AS MATERIALIZED ({union})\n"
        "SELECT origin_group, count(*) AS events, min(created_at) AS oldest,"
        " count(*) - count(created_at) AS undated"
        " FROM pending GROUP BY origin_group"
    )


async def measure(sources: Sources) -> list[Sample]:
    rows = await sources.require_postgres(NAME).fetch_tenant_batches(NAME, batch_sql)
    events: dict[str, int] = {}
    oldest: dict[str, datetime] = {}
    for row in rows:
        group = row["origin_group"]
        if group is None:
            raise ContractViolation(NAME, "evento_dead_letter.origin_group", "NULL in a pending event")
        if row["undated"]:
            raise ContractViolation(NAME, "evento_dead_letter.created_at", "NULL in a pending event")
        events[group] = events.get(group, 0) + row["events"]
        if group not in oldest or row["oldest"] < oldest[group]:
            oldest[group] = row["oldest"]
    return [Sample(DLQ_PENDING.name, (group,), count) for group, count in events.items()] + [
        Sample(DLQ_OLDEST.name, (group,), epoch_seconds(NAME, "evento_dead_letter.created_at", created))
        for group, created in oldest.items()
    ]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure, reads_tenants=True)
