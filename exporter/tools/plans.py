"""`diagnose`'s look at a table signal's plan: EXPLAIN of one tenant's
branch (the tenant whose table is largest), warning when the planner would read
a whole table of more than a few thousand rows for it."""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any, NamedTuple

from exporter.conditions import Value
from exporter.declarations import Backlog, Scope
from exporter.signals.backlog import branch_sql, global_table, predicate
from exporter.sources.postgres.identifiers import SCHEMA_PREFIX, quote_identifier
from exporter.sources.postgres.source import Postgres

# Above this many rows, a sequential scan per refresh is worth an index.
SEQSCAN_ROWS = 5_000

LARGEST_TENANT_TABLE_SQL = (
    "SELECT n.nspname AS schema FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE c.relname = $1 AND n.nspname = ANY($2::text[]) ORDER BY c.reltuples DESC LIMIT 1"
)
ROWS_SQL = "SELECT reltuples::bigint AS rows FROM pg_class WHERE oid = to_regclass($1)"


class SeqScan(NamedTuple):
    table: str  # schema.table, as the operator would write it
    rows: int


def _nodes(plan: dict[str, Any]) -> Iterator[dict[str, Any]]:
    yield plan
    for child in plan.get("Plans", ()):
        yield from _nodes(child)


def literal(value: Value) -> str:
    """A value as an SQL literal, for the index an operator may copy (never executed here)."""
    return str(value) if isinstance(value, int) else "'" + value.replace("'", "''") + "'"


def suggested_index(backlog: Backlog, table: str) -> str:
    """The index to create: for a tenant-scope backlog without a negated
    condition, one leading with the pending columns (its prepared statements
    run generic plans, which a partial index on literals cannot serve);
    otherwise a partial index on the pending predicate; with arrivals, an index
    on the arrival column besides. (A backlog with states reads every row: no
    index spares it that.)"""
    pending_index = _pending_index(backlog, table)
    if backlog.arrivals is not None:
        return f"{pending_index}; CREATE INDEX ON {table} ({quote_identifier(backlog.arrivals.column)})"
    return pending_index


def _pending_index(backlog: Backlog, table: str) -> str:
    columns = (*(label.column for label in backlog.grouping), backlog.oldest)
    keys = [quote_identifier(c) for c in columns if c is not None]
    if backlog.scope is Scope.TENANT and not any(condition.negated for condition in backlog.pending):
        leading = [quote_identifier(condition.column) for condition in backlog.pending]
        return f"CREATE INDEX ON {table} ({', '.join(dict.fromkeys(leading + keys))})"
    conditions = []
    for condition in backlog.pending:
        column = quote_identifier(condition.column)
        values = ", ".join(literal(value) for value in condition.values)
        if len(condition.values) == 1:
            conditions.append(f"{column} {'<>' if condition.negated else '='} {values}")
        else:
            conditions.append(f"{column} {'NOT IN' if condition.negated else 'IN'} ({values})")
    if not keys:
        keys = [quote_identifier(backlog.pending[0].column)]
    return f"CREATE INDEX ON {table} ({', '.join(keys)}) WHERE {' AND '.join(conditions)}"


async def explained_table(backlog: Backlog, postgres: Postgres) -> str | None:
    """The quoted table whose branch is explained: the largest active tenant's, or the global table."""
    if backlog.scope is Scope.GLOBAL:
        return global_table(backlog)
    schemas = [SCHEMA_PREFIX + slug for slug in await postgres.active_tenant_slugs()]
    rows = await postgres.fetch(LARGEST_TENANT_TABLE_SQL, backlog.table[0], schemas)
    if not rows:
        return None
    return f"{quote_identifier(rows[0]['schema'])}.{quote_identifier(backlog.table[0])}"


async def sequential_scans(backlog: Backlog, postgres: Postgres, table: str) -> list[SeqScan]:
    """Whole-table reads of more than SEQSCAN_ROWS rows in the plan of one branch."""
    where, args = predicate(backlog)
    rows = await postgres.fetch("EXPLAIN (FORMAT JSON, VERBOSE) " + branch_sql(backlog, table, where), *args)
    plan = json.loads(rows[0][0])[0]["Plan"]
    found = []
    for node in _nodes(plan):
        if node.get("Node Type") != "Seq Scan":
            continue
        name = f"{quote_identifier(node['Schema'])}.{quote_identifier(node['Relation Name'])}"
        size = (await postgres.fetch(ROWS_SQL, name))[0]["rows"]
        if size is not None and size > SEQSCAN_ROWS:
            found.append(SeqScan(f"{node['Schema']}.{node['Relation Name']}", size))
    return found
