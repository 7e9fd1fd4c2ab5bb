"""Row conditions declared in the declarations file (a backlog's pending rows,
the tenants measured): a column and the values it must (or must not) hold,
turned into a WHERE clause whose values are bound parameters, never SQL."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from exporter.sources.postgres.identifiers import quote_identifier

Value = str | int


@dataclass(frozen=True)
class Condition:
    """`column` is (or, negated, is not) one of `values`."""

    column: str
    values: tuple[Value, ...]
    negated: bool = False


class Predicate(NamedTuple):
    """A WHERE clause and the values it binds."""

    sql: str
    args: tuple[Value, ...]


def predicate_of(conditions: tuple[Condition, ...]) -> Predicate:
    """Every condition must hold; each distinct value bound once ($1, ...), referred to wherever it is used."""
    numbers: dict[tuple[type, Value], int] = {}
    args: list[Value] = []

    def bind(value: Value) -> str:
        key = (type(value), value)
        if key not in numbers:
            args.append(value)
            numbers[key] = len(args)
        return f"${numbers[key]}"

    clauses = []
    for condition in conditions:
        column = quote_identifier(condition.column)
        refs = [bind(value) for value in condition.values]
        if len(refs) == 1:
            clauses.append(f"{column} {'<>' if condition.negated else '='} {refs[0]}")
        else:
            clauses.append(f"{column} {'NOT IN' if condition.negated else 'IN'} ({', '.join(refs)})")
    return Predicate(" AND ".join(clauses), tuple(args))
