"""Declared backlogs: one signal per backlog of the configuration file, each
measured completely or not at all, like the built-in signals.

A tenant-scope backlog reads its table in every active tenant's schema on the
same batched, prepared statements as dlq; a global-scope backlog reads one
table. Identifiers are quoted; pending values are bound parameters, each
distinct value bound once and referred to from every tenant's branch.
"""

from __future__ import annotations

import functools
from collections.abc import Sequence
from datetime import UTC, datetime
from typing import NamedTuple

import asyncpg

from exporter.backlogs import Backlog, Scope, Value
from exporter.errors import ArgumentDoesNotFit, ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, epoch_seconds
from exporter.sources import Sources
from exporter.sources.identifiers import quote_identifier
from registry.backlogs import OLDEST_PENDING, PENDING_ITEMS


class Predicate(NamedTuple):
    """The WHERE clause of a backlog's pending rows and the values it binds."""

    sql: str
    args: tuple[Value, ...]


def predicate(backlog: Backlog) -> Predicate:
    numbers: dict[tuple[type, Value], int] = {}
    args: list[Value] = []

    def bind(value: Value) -> str:
        key = (type(value), value)
        if key not in numbers:
            args.append(value)
            numbers[key] = len(args)
        return f"${numbers[key]}"

    clauses = []
    for condition in backlog.pending:
        column = quote_identifier(condition.column)
        refs = [bind(value) for value in condition.values]
        if len(refs) == 1:
            clauses.append(f"{column} {'<>' if condition.negated else '='} {refs[0]}")
        else:
            clauses.append(f"{column} {'NOT IN' if condition.negated else 'IN'} ({', '.join(refs)})")
    return Predicate(" AND ".join(clauses), tuple(args))


def branch_sql(backlog: Backlog, table: str, where: str) -> str:
    """One table's pending rows: the group and oldest columns, as `grp` and `ts`."""
    columns = []
    if backlog.group_by is not None:
        columns.append(f"{quote_identifier(backlog.group_by)} AS grp")
    if backlog.oldest is not None:
        columns.append(f"{quote_identifier(backlog.oldest)} AS ts")
    return f"SELECT {', '.join(columns) or '1 AS item'} FROM {table} WHERE {where}"


def tenant_table(backlog: Backlog, schema: str) -> str:
    return f"{schema}.{quote_identifier(backlog.table[0])}"


def global_table(backlog: Backlog) -> str:
    return ".".join(quote_identifier(part) for part in backlog.table)


def aggregate_sql(backlog: Backlog, branches: Sequence[str]) -> str:
    # As dlq: aggregate once over a materialized union, no per-branch GROUP BY to plan.
    selected = ["count(*) AS items"]
    if backlog.oldest is not None:
        selected += ["min(ts) AS oldest", "count(*) - count(ts) AS undated"]
    grouped = backlog.group_by is not None
    union = "\n UNION ALL ".join(branches)
    return (
        f"WITH pending AS MATERIALIZED ({union})\n"
        f"SELECT {'grp, ' if grouped else ''}{', '.join(selected)} FROM pending{' GROUP BY grp' if grouped else ''}"
    )


def batch_sql(backlog: Backlog, where: str, schemas: Sequence[str]) -> str:
    return aggregate_sql(backlog, [branch_sql(backlog, tenant_table(backlog, schema), where) for schema in schemas])


def group_label(value: object) -> str:
    # Integer columns give ints; declared groups are compared as their text.
    return value if isinstance(value, str) else str(value)


def oldest_seconds(backlog: Backlog, value: object) -> float:
    where = f"{backlog.table[-1]}.{backlog.oldest}"
    if not isinstance(value, datetime):
        raise ContractViolation(backlog.name, where, f"not a timestamp column ({type(value).__name__})")
    if value.tzinfo is None:
        value = value.replace(tzinfo=UTC)  # a timestamp without time zone is read as UTC
    return epoch_seconds(backlog.name, where, value)


async def read(backlog: Backlog, sources: Sources) -> list[asyncpg.Record]:
    postgres = sources.require_postgres(backlog.name)
    where, args = predicate(backlog)
    try:
        if backlog.scope is Scope.TENANT:
            return await postgres.fetch_tenant_batches(backlog.name, functools.partial(batch_sql, backlog, where), args)
        return await postgres.fetch(aggregate_sql(backlog, [branch_sql(backlog, global_table(backlog), where)]), *args)
    except ArgumentDoesNotFit as exc:
        # A declared value of the wrong type for its column (text for an integer column, ...).
        raise ContractViolation(backlog.name, "pending", str(exc)) from None


async def measure(backlog: Backlog, sources: Sources) -> list[Sample]:
    rows = await read(backlog, sources)
    items: dict[tuple[str, ...], int] = {}
    oldest: dict[tuple[str, ...], float] = {}
    for row in rows:
        labels: tuple[str, ...] = (backlog.name,)
        if backlog.group_by is not None:
            if row["grp"] is None:
                raise ContractViolation(
                    backlog.name, f"{backlog.table[-1]}.{backlog.group_by}", "NULL in a pending row"
                )
            labels = (backlog.name, group_label(row["grp"]))
        if not row["items"]:
            continue  # an ungrouped batch without a pending row
        items[labels] = items.get(labels, 0) + row["items"]
        if backlog.oldest is not None:
            if row["undated"]:
                raise ContractViolation(backlog.name, f"{backlog.table[-1]}.{backlog.oldest}", "NULL in a pending row")
            seconds = oldest_seconds(backlog, row["oldest"])
            if labels not in oldest or seconds < oldest[labels]:
                oldest[labels] = seconds
    return [Sample(PENDING_ITEMS, labels, count) for labels, count in items.items()] + [
        Sample(OLDEST_PENDING, labels, seconds) for labels, seconds in oldest.items()
    ]


def signal(backlog: Backlog) -> Signal:
    """The signal of one declared backlog, named by it."""
    return Signal(
        name=backlog.name,
        source=Source.POSTGRES,
        measure=functools.partial(measure, backlog),
        reads_tenants=backlog.scope is Scope.TENANT,
    )
