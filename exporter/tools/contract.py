"""`orpycamcp-exporter contract`: the whole data contract the exporter reads,
as one YAML document: the tenant list, every built-in signal's tables,
columns, status values, time columns and closed label values, the streams
and, given a declarations file, what it declares (in the file's own format).

The table signals' parts are their declarations in force (shipped,
exporter/contract/tables.py, or replaced by the file's `signals:`), the
others' those their statements read (exporter/contract/fixed.py; a test
holds the two, and the reference DDL, equal); the label values are the
registry's. The printed document, edited, is a declarations file."""

from __future__ import annotations

from typing import Any

import yaml

from exporter.audit_runs import DEFAULT_AUDIT_RUNS, AuditRuns
from exporter.conditions import Condition, Value
from exporter.contract.fixed import fixed_signals, pairs, streams_signal
from exporter.contract.replaced import POSTGRESQL
from exporter.contract.tables import shipped_or_replaced
from exporter.declarations import NO_DECLARATIONS, Backlog, Declarations, LabelColumn, Scope
from exporter.declared_streams import SHIPPED_STREAMS, DeclaredStreams
from exporter.sources.postgres.identifiers import SCHEMA_PREFIX
from exporter.tenant_list import TenantList
from registry import VERSION

HEADER = f"""\
# The data contract orpycamcp-exporter {VERSION} reads (orpycamcp-exporter contract).
# signals: what the built-in signals read; tenants: which tenants are measured;
# backlogs and streams: what the declarations file declares (docs/backlogs.md).
# Time columns: a timestamptz is read as it is; a timestamp without time zone
# as a time in `timezone`. Label values are closed: anything else leaves the
# signal unmeasured (unregistered_value). See docs/adapting.md.
"""


def _condition(condition: Condition) -> Value | list[Value] | dict[str, list[Value]]:
    values = list(condition.values)
    if condition.negated:
        return {"not": values}
    return values[0] if len(values) == 1 else values


def _conditions(conditions: tuple[Condition, ...]) -> dict[str, Any]:
    return {condition.column: _condition(condition) for condition in conditions}


def tenants_part(tenants: TenantList) -> dict[str, Any]:
    return {
        "table": tenants.name,
        "slug": tenants.slug,
        "schema": f"{SCHEMA_PREFIX}<slug>",
        "measured": _conditions(tenants.measured),
    }


def _label_part(label: LabelColumn) -> dict[str, Any]:
    part: dict[str, Any] = {"column": label.column, "values": list(label.values)}
    if label.catch_all is not None:
        part["catch_all"] = label.catch_all
    return part


def table_signal_part(table: Backlog) -> dict[str, Any]:
    """A built-in table signal's declaration, as `signals.<name>` of a declarations file writes it:
    its one label as group_by and groups, or each label's column and values under `labels`."""
    part: dict[str, Any] = {
        "source": POSTGRESQL,
        "scope": table.scope.value,
        "table": ".".join(table.table),
        "pending": _conditions(table.pending),
    }
    grouping = table.grouping
    if len(grouping) == 1:
        part["group_by"] = grouping[0].column
        part["groups"] = list(grouping[0].values)
        if grouping[0].catch_all is not None:
            part["group_catch_all"] = grouping[0].catch_all
    else:
        part["labels"] = {label.label: _label_part(label) for label in grouping}
    if table.oldest is not None:
        part["oldest"] = table.oldest
        part["timezone"] = table.timezone
    return part


def audit_part(runs: AuditRuns) -> dict[str, Any]:
    """audit_chain's runs, as `signals.audit_chain` of a declarations file writes them."""
    return {
        "source": POSTGRESQL,
        "scope": Scope.GLOBAL.value,
        "table": ".".join(runs.table),
        "complete": _conditions(runs.complete),
        "latest": list(runs.latest),
        "columns": dict(runs.columns),
        "timezone": runs.timezone,
    }


def builtin_signals(declarations: Declarations = NO_DECLARATIONS) -> dict[str, Any]:
    """What the built-in signals read, and the closed values of their labels: the shipped
    contract's, or what the declarations file replaces of it."""
    bus = SHIPPED_STREAMS if declarations.bus is None else declarations.bus
    return {
        **{table.name: table_signal_part(table) for table in shipped_or_replaced(declarations.tables)},
        "audit_chain": audit_part(declarations.audit or DEFAULT_AUDIT_RUNS),
        "migration_lock": fixed_signals()["migration_lock"],
        "housekeeping": fixed_signals()["housekeeping"],
        "streams": streams_signal(*bus.pairs_and_dead_letters),
    }


def backlog_part(backlog: Backlog) -> dict[str, Any]:
    """A declared backlog, as the declarations file writes it."""
    part: dict[str, Any] = {
        "help": backlog.help,
        "scope": backlog.scope.value,
        "table": ".".join(backlog.table),
        "pending": _conditions(backlog.pending),
    }
    if backlog.group_by is not None and backlog.groups is not None:
        part["group_by"] = backlog.group_by
        part["groups"] = list(backlog.groups)
    if backlog.group_catch_all is not None:
        part["group_catch_all"] = backlog.group_catch_all
    if backlog.oldest is not None:
        part["oldest"] = backlog.oldest
    if backlog.oldest is not None or backlog.arrivals is not None:
        part["timezone"] = backlog.timezone
    if backlog.states is not None:
        states: dict[str, Any] = {"column": backlog.states.column, "values": list(backlog.states.values)}
        if backlog.states.catch_all is not None:
            states["catch_all"] = backlog.states.catch_all
        part["states"] = states
    if backlog.arrivals is not None:
        arrivals: dict[str, Any] = {
            "column": backlog.arrivals.column,
            "windows": [window.label for window in backlog.arrivals.windows],
        }
        if backlog.arrivals.alert_above:
            arrivals["alert_above"] = dict(backlog.arrivals.alert_above)
        part["arrivals"] = arrivals
    return part


def streams_part(streams: DeclaredStreams) -> dict[str, Any]:
    """The declared streams, as the declarations file writes them."""
    part: dict[str, Any] = {}
    if streams.consumer_groups:
        part["consumer_groups"] = pairs(streams.consumer_groups)
    if streams.dead_letter_streams:
        part["dead_letter_streams"] = list(streams.dead_letter_streams)
    if streams.signals:
        part["signals"] = {
            signal.name: {
                **({"consumer_groups": pairs(signal.groups)} if signal.groups else {}),
                **({"dead_letter_streams": list(signal.deadletter_streams)} if signal.deadletter_streams else {}),
            }
            for signal in streams.signals
        }
    return part


def contract_document(declarations: Declarations) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": VERSION,
        "tenants": tenants_part(declarations.tenants),
        "signals": builtin_signals(declarations),
    }
    if declarations.backlogs:
        document["backlogs"] = {backlog.name: backlog_part(backlog) for backlog in declarations.backlogs}
    if declarations.streams:
        document["streams"] = streams_part(declarations.streams)
    return document


def contract_yaml(declarations: Declarations) -> str:
    """The contract as YAML text: block style, keys in the order above, any name quoted as YAML needs."""
    body = yaml.safe_dump(
        contract_document(declarations), sort_keys=False, allow_unicode=True, default_flow_style=False, width=100
    )
    return HEADER + body
