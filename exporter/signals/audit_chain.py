"""audit_chain: the latest complete verification run of the audit chain.

Partial runs never count. With no complete run ever, the signal is measured
and its value series are absent: the alerts call that "never verified".

The columns are of the types the contract states (integers, a boolean), as the
statement's result description says, before a value is read; `finished_at`
is read as an instant (a timestamp or a date in UTC, the contract's zone),
as seconds since the epoch.
"""

from __future__ import annotations

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.postgres.column_types import BOOLEAN, INTEGER, ResultTypes, time_column
from exporter.zones import UTC, epoch_sql, instant_sql
from registry.families import (
    AUDIT_BREAKS,
    AUDIT_DECLARED_BREAKS,
    AUDIT_LAST_VERIFICATION,
    AUDIT_VERIFICATION_OK,
)

NAME = "audit_chain"

FINISHED_AT = "audit_chain_runs.finished_at"
# Ordered by the table's column itself, qualified (the bare name would be the
# result's): its index serves, and a timestamp orders as its UTC instants do.
LATEST_COMPLETE_RUN_SQL = (
    f"SELECT breaks, declared_breaks, verification_ok, {epoch_sql(instant_sql('finished_at', UTC))} AS finished_at"
    " FROM public.audit_chain_runs WHERE scope = 'complete'"
    " ORDER BY audit_chain_runs.finished_at DESC, id DESC LIMIT 1"
)
TYPES = ResultTypes(
    NAME, "audit_chain_runs", {"breaks": INTEGER, "declared_breaks": INTEGER, "verification_ok": BOOLEAN}
)


async def measure(sources: Sources) -> list[Sample]:
    with time_column(NAME, FINISHED_AT):
        rows = await sources.require_postgres(NAME).fetch(LATEST_COMPLETE_RUN_SQL, types=TYPES)
    if not rows:
        return []
    run = rows[0]
    for column in ("breaks", "declared_breaks", "verification_ok", "finished_at"):
        if run[column] is None:
            raise ContractViolation(NAME, f"audit_chain_runs.{column}", "NULL in the latest complete run")
    for column in ("breaks", "declared_breaks"):
        if run[column] < 0:
            raise ContractViolation(NAME, f"audit_chain_runs.{column}", f"negative value {run[column]}")
    return [
        Sample(AUDIT_BREAKS.name, (), run["breaks"]),
        Sample(AUDIT_DECLARED_BREAKS.name, (), run["declared_breaks"]),
        Sample(AUDIT_VERIFICATION_OK.name, (), 1 if run["verification_ok"] is True else 0),
        Sample(AUDIT_LAST_VERIFICATION.name, (), instant_seconds(NAME, FINISHED_AT, run["finished_at"])),
    ]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure)
