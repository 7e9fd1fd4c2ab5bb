"""Table signals: one signal per declared backlog and per built-in table signal
(dlq, preservation: exporter.contract.tables), each measured completely or not at all.

A tenant-scope declaration reads its table in every measured tenant's schema
on batched, prepared statements; a global-scope one reads one table. Its
pending counts (and oldest times) go to its output's families: a declared
backlog's to the shared backlog families, labelled by its name and group; a
built-in's to its own families, one label per label column (artifact and
phase are two). Identifiers are quoted; pending values are bound parameters, each
distinct value bound once and referred to from every tenant's branch.

A backlog with states or arrivals reads more than its pending rows in the
same statement: every row (states) or the pending rows and those arrived
within the longest window (arrivals only), each row carrying whether it is
pending, so pending, oldest, states and arrivals come from one pass. Windows
end at now(), the database's clock at the start of the measuring
transaction; its TimeZone is UTC (exporter.sources.postgres.source), so a timestamp
without time zone is compared as UTC, as `oldest` reads it.

A value set (groups, states) declared with a catch-all counts every value it
does not list under that one declared value, and how many distinct such
values it met; the raw value is never a label. Without one, an undeclared
value is passed on and the registry refuses it (unregistered_value).
"""

from __future__ import annotations

import functools
from collections.abc import Sequence

import asyncpg

from exporter.conditions import Predicate, predicate_of
from exporter.declarations import Backlog, ClosedColumn, Scope
from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, instant_seconds
from exporter.sources import Sources
from exporter.sources.postgres.column_types import INTEGER, ResultTypes, time_column
from exporter.sources.postgres.errors import ArgumentDoesNotFit
from exporter.sources.postgres.identifiers import quote_identifier
from exporter.zones import epoch_sql, instant_sql, within_sql
from registry.backlogs import ARRIVALS, ARRIVALS_THRESHOLD, ITEMS, UNDECLARED


def predicate(backlog: Backlog) -> Predicate:
    """The WHERE clause of a backlog's pending rows and the values it binds."""
    return predicate_of(backlog.pending)


def group_keys(backlog: Backlog) -> tuple[str, ...]:
    """The statement's names of the label columns' values: grp, then grp_1, grp_2..."""
    return tuple("grp" if number == 0 else f"grp_{number}" for number in range(len(backlog.grouping)))


def branch_sql(backlog: Backlog, table: str, where: str) -> str:
    """One table's rows: the group, state, oldest and arrival columns, as `grp`,
    `st`, `ts` and `arr`, and with states or arrivals whether the row is pending (`p`)."""
    columns = [
        f"{quote_identifier(label.column)} AS {key}"
        for key, label in zip(group_keys(backlog), backlog.grouping, strict=True)
    ]
    oldest = (
        [] if backlog.oldest is None else [f"{instant_sql(quote_identifier(backlog.oldest), backlog.timezone)} AS ts"]
    )
    if not backlog.scans_all_rows:
        return f"SELECT {', '.join(columns + oldest) or '1 AS item'} FROM {table} WHERE {where}"
    if backlog.states is not None:
        columns.append(f"{quote_identifier(backlog.states.column)} AS st")
    columns += [f"({where}) AS p", *oldest]
    if backlog.arrivals is None:
        return f"SELECT {', '.join(columns)} FROM {table}"
    arrived = instant_sql(quote_identifier(backlog.arrivals.column), backlog.timezone)
    columns.append(f"{arrived} AS arr")
    if backlog.states is not None:
        return f"SELECT {', '.join(columns)} FROM {table}"
    # Without states, only the rows that count: pending, or arrived within the longest window.
    longest = max(window.seconds for window in backlog.arrivals.windows)
    recent = within_sql(quote_identifier(backlog.arrivals.column), longest)
    return f"SELECT {', '.join(columns)} FROM {table} WHERE ({where}) OR {recent}"


def since(seconds: int) -> str:
    """The start of a window of `seconds` ending at the measuring transaction's now()."""
    return f"now() - interval '{seconds} seconds'"


def tenant_table(backlog: Backlog, schema: str) -> str:
    return f"{schema}.{quote_identifier(backlog.table[0])}"


def global_table(backlog: Backlog) -> str:
    return ".".join(quote_identifier(part) for part in backlog.table)


def aggregate_sql(backlog: Backlog, branches: Sequence[str]) -> str:
    # Aggregate once over a materialized union: no per-branch GROUP BY to plan.
    union = "\n UNION ALL ".join(branches)
    keys = [*group_keys(backlog), *(("st",) if backlog.states is not None else ())]
    if not backlog.scans_all_rows:
        selected = ["count(*) AS items"]
        if backlog.oldest is not None:
            selected += [f"{epoch_sql('min(ts)')} AS oldest", "count(*) - count(ts) AS undated"]
    else:
        selected = ["count(*) AS rows", "count(*) FILTER (WHERE p) AS items"]
        if backlog.oldest is not None:
            selected += [
                f"{epoch_sql('min(ts) FILTER (WHERE p)')} AS oldest",
                "count(*) FILTER (WHERE p AND ts IS NULL) AS undated",
            ]
        if backlog.arrivals is not None:
            selected.append("count(*) - count(arr) AS unstamped")
            selected += [
                f"count(*) FILTER (WHERE arr > {since(window.seconds)} AND arr <= now()) AS arrived_{number}"
                for number, window in enumerate(backlog.arrivals.windows)
            ]
    grouping = f" GROUP BY {', '.join(keys)}" if keys else ""
    return (
        f"WITH pending AS MATERIALIZED ({union})\n"
        f"SELECT {''.join(key + ', ' for key in keys)}{', '.join(selected)} FROM pending{grouping}"
    )


def batch_sql(backlog: Backlog, where: str, schemas: Sequence[str]) -> str:
    return aggregate_sql(backlog, [branch_sql(backlog, tenant_table(backlog, schema), where) for schema in schemas])


def group_label(value: object) -> str:
    # Integer columns give ints; declared groups are compared as their text.
    return value if isinstance(value, str) else str(value)


def oldest_seconds(backlog: Backlog, value: object) -> float:
    # The SQL reads the oldest as seconds since the epoch of its instant (exporter.zones).
    return instant_seconds(backlog.name, _column(backlog, str(backlog.oldest)), value)


def time_column_name(backlog: Backlog) -> str:
    """The time column a refused time expression is said to be in: the oldest, else the arrivals'."""
    column = backlog.oldest if backlog.oldest is not None else backlog.arrivals.column if backlog.arrivals else ""
    return _column(backlog, column)


def result_types(backlog: Backlog) -> ResultTypes:
    counts: tuple[str, ...] = ("items", "rows", "undated", "unstamped")
    if backlog.arrivals is not None:
        counts += tuple(f"arrived_{number}" for number in range(len(backlog.arrivals.windows)))
    return ResultTypes(backlog.name, backlog.table[-1], dict.fromkeys(counts, INTEGER))


async def read(backlog: Backlog, sources: Sources) -> list[asyncpg.Record]:
    postgres = sources.require_postgres(backlog.name)
    where, args = predicate(backlog)
    types = result_types(backlog)
    try:
        with time_column(backlog.name, time_column_name(backlog)):
            if backlog.scope is Scope.TENANT:
                batches = functools.partial(batch_sql, backlog, where)
                return await postgres.fetch_tenant_batches(backlog.name, batches, args, types)
            statement = aggregate_sql(backlog, [branch_sql(backlog, global_table(backlog), where)])
            return await postgres.fetch(statement, *args, types=types)
    except ArgumentDoesNotFit as exc:
        # A declared value of the wrong type for its column (text for an integer column, ...).
        raise ContractViolation(backlog.name, "pending", str(exc)) from None


def _column(backlog: Backlog, column: str) -> str:
    return f"{backlog.table[-1]}.{column}"


class ValueSet:
    """The label values of one column (group, state): a row's value as its label,
    or, with a catch-all declared, every undeclared value as the catch-all,
    the distinct undeclared values kept to be counted (never emitted)."""

    def __init__(self, backlog: Backlog, key: str, closed: ClosedColumn | None) -> None:
        self.backlog = backlog
        self.key = key  # the statement's column: grp, grp_1..., st
        self.column = None if closed is None else closed.column
        self.declared = frozenset(() if closed is None else closed.values)
        self.catch_all = None if closed is None else closed.catch_all
        self.undeclared: set[str] = set()

    def label(self, row: asyncpg.Record) -> tuple[str, ...]:
        """The row's label value, or nothing when the backlog has no such column."""
        if self.column is None:
            return ()
        raw = row[self.key]
        if raw is None:
            raise ContractViolation(self.backlog.name, _column(self.backlog, self.column), "NULL in a row read")
        value = group_label(raw)
        if self.catch_all is None or value in self.declared:
            return (value,)  # an undeclared value without a catch-all is refused by the registry
        self.undeclared.add(value)
        return (self.catch_all,)


class Counts:
    """A backlog's counts, summed over the rows of every batch."""

    def __init__(self, backlog: Backlog) -> None:
        self.backlog = backlog
        self.items: dict[tuple[str, ...], int] = {}
        self.oldest: dict[tuple[str, ...], float] = {}
        self.states: dict[tuple[str, ...], int] = {}
        self.arrivals: dict[tuple[str, ...], int] = {}
        self.groups = [
            ValueSet(backlog, key, label) for key, label in zip(group_keys(backlog), backlog.grouping, strict=True)
        ]
        self.state_set = ValueSet(backlog, "st", backlog.states)
        self.named = (backlog.name,) if backlog.output.named else ()

    def add(self, row: asyncpg.Record) -> None:
        backlog = self.backlog
        group = (*self.named, *(label for values in self.groups for label in values.label(row)))
        if backlog.states is not None:
            state = group + self.state_set.label(row)
            self.states[state] = self.states.get(state, 0) + row["rows"]
        if backlog.arrivals is not None:
            if row["unstamped"]:
                raise ContractViolation(backlog.name, _column(backlog, backlog.arrivals.column), "NULL in a row read")
            for number, window in enumerate(backlog.arrivals.windows):
                key = (*group, window.label)
                self.arrivals[key] = self.arrivals.get(key, 0) + row[f"arrived_{number}"]
        if not row["items"]:
            return  # no pending row here (an ungrouped batch's empty aggregate, or a state that is not pending)
        self.items[group] = self.items.get(group, 0) + row["items"]
        if backlog.oldest is not None:
            if row["undated"]:
                raise ContractViolation(backlog.name, _column(backlog, backlog.oldest), "NULL in a pending row")
            seconds = oldest_seconds(backlog, row["oldest"])
            if group not in self.oldest or seconds < self.oldest[group]:
                self.oldest[group] = seconds

    def samples(self) -> list[Sample]:
        output = self.backlog.output
        thresholds = self.backlog.arrivals.alert_above if self.backlog.arrivals is not None else ()
        sets = [
            *zip((label.label for label in self.backlog.grouping), self.groups, strict=True),
            ("state", self.state_set),
        ]
        return [
            *(Sample(output.pending, labels, count) for labels, count in self.items.items()),
            *(Sample(output.oldest, labels, seconds) for labels, seconds in self.oldest.items() if output.oldest),
            *(Sample(ITEMS, labels, count) for labels, count in self.states.items()),
            *(Sample(ARRIVALS, labels, count) for labels, count in self.arrivals.items()),
            *(Sample(ARRIVALS_THRESHOLD, (self.backlog.name, window), value) for window, value in thresholds),
            *(
                Sample(UNDECLARED, (self.backlog.name, name), len(values.undeclared))
                for name, values in sets
                if values.catch_all is not None
            ),
        ]


async def measure(backlog: Backlog, sources: Sources) -> list[Sample]:
    counts = Counts(backlog)
    for row in await read(backlog, sources):
        counts.add(row)
    return counts.samples()


def signal(backlog: Backlog) -> Signal:
    """The signal of one declared backlog, named by it."""
    return Signal(
        name=backlog.name,
        source=Source.POSTGRES,
        measure=functools.partial(measure, backlog),
        reads_tenants=backlog.scope is Scope.TENANT,
    )
