"""audit_chain: the latest complete verification run of the audit chain.

Partial runs never count. With no complete run ever, the signal is measured
and its value series are absent: the alerts call that "never verified".

What is read comes from the contract (exporter.audit_runs): the shipped
public.audit_chain_runs, or the table, condition, order and columns a
declarations file states; the condition's values are bound. The columns are
of the types the contract states (integers, a boolean), as the statement's
result description says, before a value is read; `finished_at` is read as an
instant (a timestamp or a date in the declared zone, UTC unless replaced), as
seconds since the epoch.
"""

from __future__ import annotations

import functools

from exporter.audit_runs import DEFAULT_AUDIT_RUNS, AuditRuns
from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.postgres.column_types import BOOLEAN, INTEGER, ResultTypes, time_column
from registry.families import (
    AUDIT_BREAKS,
    AUDIT_DECLARED_BREAKS,
    AUDIT_LAST_VERIFICATION,
    AUDIT_VERIFICATION_OK,
)

NAME = "audit_chain"


def result_types(runs: AuditRuns) -> ResultTypes:
    return ResultTypes(NAME, runs.table[1], {"breaks": INTEGER, "declared_breaks": INTEGER, "verification_ok": BOOLEAN})


async def measure(runs: AuditRuns, sources: Sources) -> list[Sample]:
    finished_at = runs.column("finished_at")
    sql, args = runs.query()
    with time_column(NAME, finished_at):
        rows = await sources.require_postgres(NAME).fetch(sql, *args, types=result_types(runs))
    if not rows:
        return []
    run = rows[0]
    for item in ("breaks", "declared_breaks", "verification_ok", "finished_at"):
        if run[item] is None:
            raise ContractViolation(NAME, runs.column(item), "NULL in the latest complete run")
    for item in ("breaks", "declared_breaks"):
        if run[item] < 0:
            raise ContractViolation(NAME, runs.column(item), f"negative value {run[item]}")
    return [
        Sample(AUDIT_BREAKS.name, (), run["breaks"]),
        Sample(AUDIT_DECLARED_BREAKS.name, (), run["declared_breaks"]),
        Sample(AUDIT_VERIFICATION_OK.name, (), 1 if run["verification_ok"] is True else 0),
        Sample(AUDIT_LAST_VERIFICATION.name, (), instant_seconds(NAME, finished_at, run["finished_at"])),
    ]


def signal(runs: AuditRuns) -> Signal:
    """The audit_chain signal reading `runs` (the shipped contract's, or a file's)."""
    return Signal(name=NAME, source=Source.POSTGRES, measure=functools.partial(measure, runs))


SIGNAL = signal(DEFAULT_AUDIT_RUNS)
