"""audit_chain: the latest complete verification run of the audit chain.

Partial runs never count. With no complete run ever, the signal is measured
and its value series are absent: the alerts call that "never verified".
"""

from __future__ import annotations

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, epoch_seconds
from exporter.sources import Sources
from registry.families import (
    AUDIT_BREAKS,
    AUDIT_DECLARED_BREAKS,
    AUDIT_LAST_VERIFICATION,
    AUDIT_VERIFICATION_OK,
)

NAME = "audit_chain"

LATEST_COMPLETE_RUN_SQL = (
    "SELECT breaks, declared_breaks, verification_ok, finished_at"
    " FROM public.audit_chain_runs WHERE scope = 'complete'"
    " ORDER BY finished_at DESC, id DESC LIMIT 1"
)


async def measure(sources: Sources) -> list[Sample]:
    rows = await sources.require_postgres(NAME).fetch(LATEST_COMPLETE_RUN_SQL)
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
        Sample(AUDIT_VERIFICATION_OK.name, (), 1 if run["verification_ok"] else 0),
        Sample(
            AUDIT_LAST_VERIFICATION.name, (), epoch_seconds(NAME, "audit_chain_runs.finished_at", run["finished_at"])
        ),
    ]


SIGNAL = Signal(name=NAME, source=Source.POSTGRES, measure=measure)
