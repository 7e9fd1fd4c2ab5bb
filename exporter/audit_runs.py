"""The audit runs the audit_chain signal reads: the contract's `signals.audit_chain`,
a table, the condition a complete run meets, the order that finds the latest
one and the columns read, turned into one statement whose values are bound.

The shipped default is the platform's public.audit_chain_runs as this project
states it (exporter.contract.contract.sql); a declarations file may replace
its table, condition, order, columns and zone (exporter.backlogs), never the
families they fill (ADR-041)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from exporter.conditions import Condition, Value, predicate_of
from exporter.sources.postgres.identifiers import quote_identifier
from exporter.zones import UTC, epoch_sql, instant_sql

# What the signal reads of the latest complete run, each a column the contract names.
READ = ("breaks", "declared_breaks", "verification_ok", "finished_at")


class RunQuery(NamedTuple):
    sql: str
    args: tuple[Value, ...]


@dataclass(frozen=True)
class AuditRuns:
    table: tuple[str, str] = ("public", "audit_chain_runs")  # (schema, table)
    complete: tuple[Condition, ...] = (Condition("scope", ("complete",)),)
    latest: tuple[str, ...] = ("finished_at", "id")  # the order, each descending: its first row is the latest
    columns: tuple[tuple[str, str], ...] = tuple((item, item) for item in READ)  # (what is read, its column)
    timezone: str = UTC  # the zone of a finished_at without time zone (exporter.zones)

    def column(self, item: str) -> str:
        """The table's column of `item` (one of READ), as errors name it: `audit_chain_runs.breaks`."""
        return f"{self.table[1]}.{dict(self.columns)[item]}"

    def query(self) -> RunQuery:
        """The latest complete run: the columns read under their READ names, finished_at as epoch seconds.
        Ordered by the table's columns, qualified (a bare name would be the result's): an index serves."""
        where, args = predicate_of(self.complete)
        columns = dict(self.columns)
        selected = [f"{quote_identifier(columns[item])} AS {item}" for item in READ[:-1]]
        finished = epoch_sql(instant_sql(quote_identifier(columns["finished_at"]), self.timezone))
        table = quote_identifier(self.table[1])
        order = ", ".join(f"{table}.{quote_identifier(column)} DESC" for column in self.latest)
        return RunQuery(
            f"SELECT {', '.join(selected)}, {finished} AS finished_at"
            f" FROM {'.'.join(quote_identifier(part) for part in self.table)}"
            f" WHERE {where} ORDER BY {order} LIMIT 1",
            args,
        )


DEFAULT_AUDIT_RUNS = AuditRuns()
