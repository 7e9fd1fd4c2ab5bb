"""The types the contract states for the columns the exporter reads, checked on
what the server itself says of them, before any value is used: never Python's
truthiness or duck typing (a text 'false' is a true string).

A statement's result columns are checked on its own result description (the
prepared statement's attributes, exporter.sources.postgres.source), before its rows are
fetched: a count must be an integer type, a flag a boolean. A time column is
read through exporter.zones.instant_sql, which the server refuses to plan for
a column of any type but timestamp, timestamptz and date (42883 for most,
42846 for those that add an interval but do not cast to a timestamp: time,
interval): that refusal names the column and its type too.
"""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass

from asyncpg.prepared_stmt import PreparedStatement

from exporter.errors import ColumnTypeMismatch
from exporter.sources.postgres.errors import DatabaseRefused

# The names PostgreSQL's catalog gives the types (pg_type.typname, as asyncpg reports them).
INTEGER = ("int2", "int4", "int8")
BOOLEAN = ("bool",)
TIME = ("timestamptz", "timestamp", "date")

# The time expression applied to a column of another type: no `+ interval` for it,
# or no cast of the sum to a timestamp.
NOT_A_TIME = ("42883", "42846")
# What the server says then, with the column's type (in English, lc_messages permitting).
FOUND_TYPE = re.compile(r"operator does not exist: (.+?) \+ interval|cannot cast type (.+?) to timestamp")


@dataclass(frozen=True)
class ResultTypes:
    """The types the contract states for some of a statement's result columns
    (by the column's name in the result), and where to say they come from."""

    signal: str
    table: str
    columns: Mapping[str, Sequence[str]]

    def check(self, statement: PreparedStatement) -> None:
        """Raises ColumnTypeMismatch for the first result column of another type than stated."""
        for attribute in statement.get_attributes():
            expected = self.columns.get(attribute.name)
            if expected is not None and attribute.type.name not in expected:
                raise ColumnTypeMismatch(self.signal, f"{self.table}.{attribute.name}", attribute.type.name, expected)


@contextlib.contextmanager
def time_column(signal: str, column: str) -> Iterator[None]:
    """The server's refusal to read `column` (table.column) as a time, as the ColumnTypeMismatch it is."""
    try:
        yield
    except DatabaseRefused as exc:
        if exc.sqlstate not in NOT_A_TIME:
            raise
        found = FOUND_TYPE.search(exc.words)
        named = next((group for group in found.groups() if group), None) if found else None
        raise ColumnTypeMismatch(signal, column, named or "another type", TIME) from None
