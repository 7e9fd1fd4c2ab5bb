"""`orpycamcp-exporter contract`: the whole data contract the exporter reads,
as one YAML document: the tenant list, every built-in signal's tables,
columns, status values, time columns and closed label values, the streams
and, given a declarations file, what it declares (in the file's own format).

The built-in signals' tables and columns are those their statements read
(exporter/signals/*.py; a test holds the two, and the reference DDL, equal);
their label values are the registry's."""

from __future__ import annotations

from typing import Any

import yaml

from exporter.backlogs import Backlog, Declarations
from exporter.conditions import Condition, Value
from exporter.declared_streams import DeclaredStreams
from exporter.sources.identifiers import SCHEMA_PREFIX
from exporter.tenant_list import TenantList
from registry import VERSION
from registry.values import (
    ARTIFACTS,
    DEADLETTER_STREAMS,
    ORIGIN_GROUPS,
    PHASES,
    STREAM_GROUPS,
    UNDELIVERED_UNKNOWN_REASONS,
)

HEADER = f"""\
# The data contract orpycamcp-exporter {VERSION} reads (orpycamcp-exporter contract).
# signals: what the built-in signals read; tenants: which tenants are measured;
# backlogs and streams: what the declarations file declares (docs/backlogs.md).
# Time columns: a timestamptz is read as it is; a timestamp without time zone
# as a time in `timezone`. Label values are closed: anything else leaves the
# signal unmeasured (unregistered_value). See docs/adapting.md.
"""
UTC = "UTC"


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


def _pairs(pairs: tuple[tuple[str, str], ...]) -> dict[str, list[str]]:
    by_stream: dict[str, list[str]] = {}
    for stream, group in pairs:
        by_stream.setdefault(stream, []).append(group)
    return by_stream


def builtin_signals() -> dict[str, Any]:
    """What the four built-in signals read, and the closed values of their labels."""
    return {
        "dlq": {
            "source": "postgresql",
            "scope": "tenant",
            "table": "evento_dead_letter",
            "pending": {"status": "pending"},
            "group_by": "origin_group",
            "groups": list(ORIGIN_GROUPS),
            "oldest": "created_at",
            "timezone": UTC,
        },
        "preservation": {
            "source": "postgresql",
            "scope": "tenant",
            "table": "preservation_retry",
            "pending": {"status": "exhausted"},
            "labels": {
                "artifact": {"column": "artifact", "values": list(ARTIFACTS)},
                "phase": {"column": "phase", "values": list(PHASES)},
            },
        },
        "audit_chain": {
            "source": "postgresql",
            "scope": "global",
            "table": "public.audit_chain_runs",
            "complete": {"scope": "complete"},
            "latest": ["finished_at", "id"],
            "columns": {
                "breaks": "breaks",
                "declared_breaks": "declared_breaks",
                "verification_ok": "verification_ok",
                "finished_at": "finished_at",
            },
            "timezone": UTC,
        },
        "streams": {
            "source": "redis",
            "consumer_groups": _pairs(STREAM_GROUPS),
            "dead_letter_streams": list(DEADLETTER_STREAMS),
            # Why a group's undelivered count may be withheld (orpycamcp_stream_undelivered_unknown_groups).
            "undelivered_unknown_reasons": list(UNDELIVERED_UNKNOWN_REASONS),
        },
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
        part["consumer_groups"] = _pairs(streams.consumer_groups)
    if streams.dead_letter_streams:
        part["dead_letter_streams"] = list(streams.dead_letter_streams)
    if streams.signals:
        part["signals"] = {
            signal.name: {
                **({"consumer_groups": _pairs(signal.groups)} if signal.groups else {}),
                **({"dead_letter_streams": list(signal.deadletter_streams)} if signal.deadletter_streams else {}),
            }
            for signal in streams.signals
        }
    return part


def contract_document(declarations: Declarations) -> dict[str, Any]:
    document: dict[str, Any] = {
        "version": VERSION,
        "tenants": tenants_part(declarations.tenants),
        "signals": builtin_signals(),
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
