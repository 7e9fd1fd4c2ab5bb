"""`diagnose`'s look at a table signal's contract (a declared backlog's, or a
built-in's: dlq, preservation) against the live database: the tenants whose
schema lacks the table (the first few named, and a similarly named table one
of them holds), the columns the table lacks or holds with another type than
its pending values', the pending values (status words) no row holds, and the
values of a value set (groups, labels, states) the rows hold but the
declaration does not list, with their rows, largest first.

Read from the catalog (tables, columns) and, for the values, with the
backlog's own tenant batches over the tenants that have the table. Tenant
names appear here, on the operator's terminal; never in the metrics."""

from __future__ import annotations

import difflib
from collections import Counter
from collections.abc import Sequence
from typing import NamedTuple

from exporter.conditions import Condition
from exporter.declarations import Backlog, Scope
from exporter.printable import quoted
from exporter.signals.backlog import global_table, predicate
from exporter.sources.postgres.identifiers import SCHEMA_PREFIX, quote_identifier
from exporter.sources.postgres.source import Postgres
from exporter.tools.times import Finding, schemas_read

SHOWN = 5  # schemas, and values, named on one line
SIMILAR = 0.7  # how alike (difflib's ratio) a table's name must be to the declared one to be named in its place

# The schemas (among $1) holding a table or view named $2.
HOLDING_SQL = (
    "SELECT n.nspname AS schema FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = ANY($1::text[]) AND c.relname = $2 AND c.relkind IN ('r', 'p', 'v', 'm', 'f')"
)
# The tables and views schema $1 holds.
TABLES_SQL = (
    "SELECT c.relname AS name FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'v', 'm', 'f') ORDER BY 1"
)
# The columns (among $3) the table $2 of schema $1 holds, their type and its kind (pg_type.typcategory).
COLUMNS_SQL = (
    "SELECT a.attname AS name, format_type(a.atttypid, NULL) AS type, t.typcategory::text AS category"
    " FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid"
    " JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace JOIN pg_catalog.pg_type t ON t.oid = a.atttypid"
    " WHERE n.nspname = $1 AND c.relname = $2 AND a.attname = ANY($3::text[]) AND a.attnum > 0"
    " AND NOT a.attisdropped"
)
# The type categories (pg_type.typcategory) a column compared with a text, or a whole number, may have:
# string types and enums; numeric types.
TEXT_CATEGORIES = frozenset({"S", "E"})
NUMBER_CATEGORIES = frozenset({"N"})


class ValueSet(NamedTuple):
    """A backlog's closed set of values: its key in the declaration, the column and the values (label text)."""

    key: str
    column: str
    values: tuple[str, ...]
    catch_all: str | None


def value_sets(backlog: Backlog) -> list[ValueSet]:
    """The value sets, by their key in the declaration: one label column's is `groups`, each of several `labels`'."""
    grouping = backlog.grouping
    sets = []
    for label in grouping:
        key = "groups" if len(grouping) == 1 else f"labels.{label.label}.values"
        sets.append(ValueSet(key, label.column, label.values, label.catch_all))
    if backlog.states is not None:
        sets.append(ValueSet("states.values", backlog.states.column, backlog.states.values, backlog.states.catch_all))
    return sets


def columns_of(backlog: Backlog) -> list[str]:
    """Every column the backlog's statement reads, once each."""
    listed: list[str | None] = [condition.column for condition in backlog.pending]
    listed += [*(label.column for label in backlog.grouping), backlog.oldest]
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


def declare_hint(backlog: Backlog, value_set: ValueSet) -> str:
    """Where the values go: a built-in's value set of an edited contract (no catch-all), or a backlog's."""
    if backlog.label_columns is not None:
        return (
            f"if they are the platform's, declare them in signals.{backlog.name}.{value_set.key} of the printed"
            " contract and give it as the declarations file (docs/adapting.md)"
        )
    return (
        f"declare them in {value_set.key}, or opt in to a catch-all value"
        " (docs/backlogs.md#values-nobody-declared-the-catch-all-opt-in)"
    )


def value_findings(
    backlog: Backlog, value_set: ValueSet, found: Counter[str | None], pending_only: bool
) -> list[Finding]:
    outside = undeclared(found, value_set.values)
    nulls = [count for value, count in outside if value is None]
    listed = [f"{quoted(value)} {rows(count)}" for value, count in outside if value is not None]
    read = "the pending rows" if pending_only else "every row"
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
                    declare_hint(backlog, value_set),
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


def similar(backlog: Backlog, names: Sequence[str]) -> str | None:
    """The name among `names` most like the declared table's, if one is alike enough."""
    found = difflib.get_close_matches(backlog.table[-1], names, n=1, cutoff=SIMILAR)
    return found[0] if found else None


def kind_of(condition: Condition) -> tuple[str, frozenset[str]]:
    """What a condition's values are, and the type categories a column compared with them may have."""
    if all(isinstance(value, str) for value in condition.values):
        return "text", TEXT_CATEGORIES
    return "number", NUMBER_CATEGORIES


def type_findings(backlog: Backlog, schema: str, types: dict[str, tuple[str, str]]) -> list[Finding]:
    """The pending conditions' columns whose type cannot hold their values."""
    result = []
    for condition in backlog.pending:
        kind, categories = kind_of(condition)
        column_type, category = types[condition.column]
        if category not in categories:
            result.append(
                Finding(
                    f"warn {backlog.name}: {schema}.{backlog.table[-1]}.{condition.column} is of type {column_type},"
                    f" compared with {kind} values in pending",
                    "declare in pending the column that holds the state, with values of its type",
                )
            )
    return result


def word_findings(backlog: Backlog, condition: Condition, found: Counter[str | None]) -> list[Finding]:
    """A pending value (a status word) no row of the table holds, with the values the rows do hold."""
    if condition.negated or not found:
        return []
    missing = [str(value) for value in condition.values if str(value) not in found]
    if not missing:
        return []
    held = [f"{quoted(value)} {rows(count)}" for value, count in undeclared(found, ()) if value is not None]
    words = ", ".join(repr(word) for word in missing)
    return [
        Finding(
            f"warn {backlog.name}: {backlog.table[-1]}.{condition.column} is never {words} in any row;"
            f" it holds {named(held) or 'only NULL'}",
            "if the platform names this state otherwise, declare its word in pending"
            " (a healthy platform may simply have no such row yet)",
        )
    ]


async def counted_values(
    backlog: Backlog, postgres: Postgres, schemas: Sequence[str], column: str, pending_only: bool
) -> Counter[str | None]:
    """Rows per value of `column` in the tables read (in the schemas given), only the pending ones if asked."""
    where, args = predicate(backlog) if pending_only else (None, ())
    if backlog.scope is Scope.TENANT:
        tables = postgres.narrowed([schema.removeprefix(SCHEMA_PREFIX) for schema in schemas])

        def batch(batch_schemas: Sequence[str]) -> str:
            return values_sql(column, [f"{s}.{quote_identifier(backlog.table[0])}" for s in batch_schemas], where)

        counted = await tables.fetch_tenant_batches(f"{backlog.name} values", batch, args)
    else:
        counted = await postgres.fetch(values_sql(column, [global_table(backlog)], where), *args)
    found: Counter[str | None] = Counter()
    for row in counted:
        found[row["value"]] += row["n"]
    return found


async def check(backlog: Backlog, postgres: Postgres) -> list[Finding]:
    """What of `backlog`'s declaration the database does not hold."""
    schemas = await schemas_read(backlog, postgres)
    held = {row["schema"] for row in await postgres.fetch(HOLDING_SQL, schemas, backlog.table[-1])}
    result = []
    lacking = [schema for schema in schemas if schema not in held]
    if lacking:
        kind = "schemas" if backlog.scope is Scope.TENANT else "schema"
        alike = similar(backlog, [row["name"] for row in await postgres.fetch(TABLES_SQL, lacking[0])])
        instead = "" if alike is None else f"; {lacking[0]} holds a similarly named table: {alike}"
        result.append(
            Finding(
                f"warn {backlog.name}: table {backlog.table[-1]} missing in {len(lacking)} of {len(schemas)}"
                f" {kind}: {named(lacking)}{instead}",
                "create it (with the exporter role's SELECT) in every schema the backlog reads, or declare the"
                " table the platform has",
            )
        )
    if not held:
        return result
    first = min(held)
    columns = columns_of(backlog)
    present = {
        row["name"]: (row["type"], row["category"])
        for row in await postgres.fetch(COLUMNS_SQL, first, backlog.table[-1], columns)
    }
    missing = [column for column in columns if column not in present]
    if missing:
        result.append(
            Finding(
                f"warn {backlog.name}: {first}.{backlog.table[-1]} has no column {named(missing)}",
                "declare the columns the table has (contract: orpycamcp-exporter contract)",
            )
        )
        return result
    mistyped = type_findings(backlog, first, present)
    if mistyped:
        return result + mistyped
    reading = sorted(held)
    words_missing = False
    for condition in backlog.pending:
        words = word_findings(
            backlog, condition, await counted_values(backlog, postgres, reading, condition.column, False)
        )
        words_missing = words_missing or bool(words)
        result += words
    # The rows the measurement reads: every row with states or arrivals, else the pending ones; every row
    # too when a pending value never occurs (no row would be pending, and nothing be checked).
    pending_only = not (backlog.scans_all_rows or words_missing)
    for value_set in value_sets(backlog):
        found = await counted_values(backlog, postgres, reading, value_set.column, pending_only)
        result += value_findings(backlog, value_set, found, pending_only)
    return result
