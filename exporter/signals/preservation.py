"""preservation: artifacts whose retries are exhausted, per artifact and phase,
summed over all tenants (one preservation_retry row per artifact and phase)."""

from __future__ import annotations

from collections.abc import Sequence

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source
from exporter.sources import Sources
from exporter.sources.column_types import INTEGER, ResultTypes
from registry.families import PRESERVATION_EXHAUSTED

NAME = "preservation"
TYPES = ResultTypes(NAME, "preservation_retry", {"artifacts": INTEGER})


def batch_sql(schemas: Sequence[str]) -> str:
    union = "\n UNION ALL ".join(
        f"SELECT artifact, phase FROM {schema}.preservation_retry WHERE status = 'exhausted'" for schema in schemas
    )
    return (
        f"WITH exhausted AS MATERIALIZED ({union})\n"
        "SELECT artifact, phase, count(*) AS artifacts FROM exhausted GROUP BY artifact, phase"
    )


async def measure(sources: Sources) -> list[Sample]:
    rows = await sources.require_postgres(NAME).fetch_tenant_batches(NAME, batch_sql, types=TYPES)
    artifacts: dict[tuple[str, str], int] = {}
    for row in rows:
        artifact, phase = row["artifact"], row["phase"]
        if artifact is None or phase is None:
            raise ContractViolation(NAME, "preservation_retry.artifact/phase", "NULL in an exhausted row")
        key = (artifact, phase)
        artifacts[key] = artifacts.get(key, 0) + row["artifacts"]
    return [Sample(PRESERVATION_EXHAUSTED.name, key, count) for key, count in artifacts.items()]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure, reads_tenants=True)
