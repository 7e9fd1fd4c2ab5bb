"""`diagnose`'s look at a declared backlog's contract against the live
database: the tenants whose schema lacks the table (the first few named), the
columns the table lacks, and the values of a value set (groups, states) the
rows hold but the declaration does not list, with their rows, largest first.

Read from the catalog (tables, columns) and, for the values, with the
backlog's own tenant batches over the tenants that have the table. Tenant
names appear here, on the operator's terminal; never in the metrics."""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from exporter.backlogs import Backlog, Scope
from exporter.signals.backlog import global_table, predicate
from exporter.sources.identifiers import SCHEMA_PREFIX, quote_identifier
from exporter.sources.postgres import Postgres
from exporter.tools.times import Finding, schemas_read

SHOWN = 5  # schemas, and values, named on one line

# The schemas (among $1) holding a table or view named $2.
HOLDING_SQL = (
    "SELECT n.nspname AS schema FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = ANY($1::text[]) AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
)
# The columns (among $3) the table $2 of schema $1 holds.
COLUMNS_SQL = (
    "SELECT a.attname AS name FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
    " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = ANY($3::text[]) AND a.attnum > 0"
    " AND NOT a.attisdropped"
)


class ValueSet(NamedTuple):
    """A backlog's closed set of values: its key in the declaration, the column and the values (label text)."""

    key: str
    column: str
    values: tuple[str, ...]
    catch_all: str | None


def value_sets(backlog: Backlog) -> list[ValueSet]:
    sets = []
    if backlog.group_by is not None and backlog.groups is not None:
        sets.append(ValueSet("groups", backlog.group_by, backlog.groups, backlog.group_catch_all))
    if backlog.states is not None:
        sets.append(ValueSet("states.values", backlog.states.column, backlog.states.values, backlog.states.catch_all))
    return sets


def columns_of(backlog: Backlog) -> list[str]:
    """Every column the backlog's statement reads, once each."""
    listed: list[str | None] = [condition.column for condition in backlog.pending]
    listed += [backlog.group_by, backlog.oldest]
    listed += [backlog.states.column if backlog.states else None, backlog.arrivals.column if backlog.arrivals else None]
    return list(dict.fromkeys(column for column in listed if column is not None))


def named(items: Sequence[str]) -> str:
    shown = ", ".join(items[:SHOWN])
    return shown if len(items) <= SHOWN else f"{shown} and {len(items) - SHOWN} more"


def rows(count: int) -> str:
    return f"{count:,} row" + ("" if count == 1 else "s")


def values_sql(column: str, table_of: Sequence[str], where: str | None) -> str:
    """Rows per value of `column` (as text; NULL kept) over the tables, only those matching `where` if given."""
    quoted = quote_identifier(column)
    condition = f" WHERE {where}" if where else ""
    union = "\n UNION ALL ".join(f"SELECT {quoted}::text AS value FROM {table}{condition}" for table in table_of)
    return f"WITH read AS MATERIALIZED ({union})\nSELECT value, count(*) AS n FROM read GROUP BY value"


def undeclared(found: Counter[str | None], declared: Sequence[str]) -> list[tuple[str | None, int]]:
    """The values outside `declared` (NULL included), largest first, then by value."""
    outside = [(value, count) for value, count in found.items() if value is None or value not in declared]
    return sorted(outside, key=lambda item: (-item[1], "" if item[0] is None else item[0]))


def value_findings(backlog: Backlog, value_set: ValueSet, found: Counter[str | None]) -> list[Finding]:
    outside = undeclared(found, value_set.values)
    nulls = [count for value, count in outside if value is None]
    listed = [f"{value!r} {rows(count)}" for value, count in outside if value is not None]
    read = "every row" if backlog.scans_all_rows else "the pending rows"
    some = f"{len(listed)} value" + ("" if len(listed) == 1 else "s")
    result = []
    if listed:
        where = f"{backlog.table[-1]}.{value_set.column}"
        if value_set.catch_all is not None:
            result.append(
                Finding(
                    f"     {backlog.name}: {where} holds {some} outside {value_set.key} in {read},"
                    f" counted as {value_set.catch_all!r}: {named(listed)}"
                )
            )
        else:
            result.append(
                Finding(
                    f"warn {backlog.name}: {where} holds {some} outside {value_set.key} in {read}: {named(listed)}",
                    f"declare them in {value_set.key}, or opt in to a catch-all value"
                    " (docs/backlogs.md#values-nobody-declared-the-catch-all-opt-in)",
                )
            )
    if nulls:
        result.append(
            Finding(
                f"warn {backlog.name}: {backlog.table[-1]}.{value_set.column} is NULL in {rows(nulls[0])} of {read}",
                "declare the column NOT NULL and give those rows a value",
            )
        )
    return result


async def check(backlog: Backlog, postgres: Postgres) -> list[Finding]:
    """What of `backlog`'s declaration the database does not hold."""
    schemas = await schemas_read(backlog, postgres)
    held = {row["schema"] for row in await postgres.fetch(HOLDING_SQL, schemas, backlog.table[-1])}
    result = []
    lacking = [schema for schema in schemas if schema not in held]
    if lacking:
        kind = "schemas" if backlog.scope is Scope.TENANT else "schema"
        result.append(
            Finding(
                f"warn {backlog.name}: table {backlog.table[-1]} missing in {len(lacking)} of {len(schemas)}"
                f" {kind}: {named(lacking)}",
                "create it (with the exporter role's SELECT) in every schema the backlog reads, or declare the"
                " table the platform has",
            )
        )
    if not held:
        return result
    first = min(held)
    columns = columns_of(backlog)
    present = {row["name"] for row in await postgres.fetch(COLUMNS_SQL, first, backlog.table[-1], columns)}
    missing = [column for column in columns if column not in present]
    if missing:
        result.append(
            Finding(
                f"warn {backlog.name}: {first}.{backlog.table[-1]} has no column {named(missing)}",
                "declare the columns the table has (contract: orpycamcp-exporter contract)",
            )
        )
        return result
    # The rows the measurement reads: every row with states or arrivals, else the pending ones.
    where, args = (None, ()) if backlog.scans_all_rows else predicate(backlog)
    for value_set in value_sets(backlog):
        found: Counter[str | None] = Counter()
        if backlog.scope is Scope.TENANT:
            tables = postgres.narrowed([schema.removeprefix(SCHEMA_PREFIX) for schema in schemas if schema in held])

            def batch(batch_schemas: Sequence[str], column: str = value_set.column) -> str:
                return values_sql(column, [f"{s}.{quote_identifier(backlog.table[0])}" for s in batch_schemas], where)

            counted = await tables.fetch_tenant_batches(f"{backlog.name} values", batch, args)
        else:
            counted = await postgres.fetch(values_sql(value_set.column, [global_table(backlog)], where), *args)
        for row in counted:
            found[row["value"]] += row["n"]
        result += value_findings(backlog, value_set, found)
    return result
