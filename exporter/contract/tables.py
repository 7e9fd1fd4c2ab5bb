"""The built-in table signals' declarations (dlq, preservation), shipped as data.

Each is measured by the one table-signal mechanism of declared backlogs
(exporter.signals.backlog), from its frozen declaration here, into families
of its own the registry holds (ADR-041: their names, label names and label
values are the registry's). A declarations file's `signals.dlq` or
`signals.preservation` replaces one (exporter.backlogs), the families' label
values then being the replacement's."""

from __future__ import annotations

from exporter.conditions import Condition
from exporter.declarations import Backlog, LabelColumn, Scope, table_signal_output
from exporter.zones import UTC
from registry.families import DLQ_PENDING, PRESERVATION_EXHAUSTED
from registry.values import ARTIFACTS, ORIGIN_GROUPS, PHASES

# Pending dead-lettered events per origin_group, and the creation time of the oldest.
DLQ = Backlog(
    name="dlq",
    help=DLQ_PENDING.help,
    scope=Scope.TENANT,
    table=("evento_dead_letter",),
    pending=(Condition("status", ("pending",)),),
    oldest="created_at",
    timezone=UTC,
    label_columns=(LabelColumn("origin_group", ORIGIN_GROUPS, label="origin_group"),),
    output=table_signal_output("dlq"),
)

# Artifacts whose retries are exhausted, per artifact and phase (one row per artifact and phase).
PRESERVATION = Backlog(
    name="preservation",
    help=PRESERVATION_EXHAUSTED.help,
    scope=Scope.TENANT,
    table=("preservation_retry",),
    pending=(Condition("status", ("exhausted",)),),
    label_columns=(
        LabelColumn("artifact", ARTIFACTS, label="artifact"),
        LabelColumn("phase", PHASES, label="phase"),
    ),
    output=table_signal_output("preservation"),
)

TABLE_SIGNALS: tuple[Backlog, ...] = (DLQ, PRESERVATION)


def shipped_or_replaced(replaced: tuple[Backlog, ...]) -> tuple[Backlog, ...]:
    """The table signals' declarations in force: each replaced one, else the shipped one."""
    by_name = {table.name: table for table in replaced}
    return tuple(by_name.get(table.name, table) for table in TABLE_SIGNALS)
