"""The fields of a declarations file (exporter.backlogs), each read and validated
where it stands: plain identifiers, bound values, conditions, closed value sets,
tables; every refusal a BacklogConfigError naming the setting, the backlog and
the key."""

from __future__ import annotations

import re
from typing import Any

from exporter.cadence import CADENCE_KEYS
from exporter.conditions import Condition, Value
from exporter.declarations import Scope
from exporter.errors import BacklogConfigError
from exporter.printable import has_control

# A plain, unquoted PostgreSQL name; at most 63 bytes, so never truncated.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
# A declared backlog's keys (exporter.backlogs); a built-in table signal's are a part of
# them (exporter.contract.replaced).
KEYS = (
    "help",
    "scope",
    "table",
    "pending",
    "group_by",
    "groups",
    "group_catch_all",
    "oldest",
    "timezone",
    "states",
    "arrivals",
    *CADENCE_KEYS,
)


class FieldReader:
    """Reads one file's fields, naming the setting, the backlog and the key in every error."""

    def __init__(self, setting: str) -> None:
        self.setting = setting

    def fail(self, backlog: str | None, key: str | None, problem: str) -> BacklogConfigError:
        return BacklogConfigError(self.setting, backlog, key, problem)

    def identifier(self, backlog: str | None, key: str, raw: object) -> str:
        if not isinstance(raw, str) or not IDENTIFIER.fullmatch(raw):
            raise self.fail(backlog, key, f"{raw!r} is not a plain column or table name ([A-Za-z_][A-Za-z0-9_]*)")
        return raw

    def value(self, backlog: str | None, key: str, raw: object) -> Value:
        # bool is an int in Python, and YAML reads yes/no/on/off as booleans.
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise self.fail(backlog, key, f"{raw!r} is not a string or an integer (quote it)")
        return raw

    def values(self, backlog: str | None, key: str, raw: object) -> tuple[Value, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(backlog, key, f"{raw!r} is not a non-empty list")
        values = tuple(self.value(backlog, key, item) for item in raw)
        if len({(type(v), v) for v in values}) != len(values):
            raise self.fail(backlog, key, f"{raw!r} repeats a value")
        return values

    def condition(self, backlog: str | None, prefix: str, column: object, raw: object) -> Condition:
        name = self.identifier(backlog, f"{prefix}.{column}", column)
        key = f"{prefix}.{name}"
        if isinstance(raw, dict):
            if set(raw) != {"not"}:
                raise self.fail(
                    backlog, key, f"a mapping must be exactly {{not: [values]}}, got keys {sorted(map(str, raw))}"
                )
            return Condition(name, self.values(backlog, f"{key}.not", raw["not"]), negated=True)
        if isinstance(raw, list):
            return Condition(name, self.values(backlog, key, raw))
        return Condition(name, (self.value(backlog, key, raw),))

    def mapping(
        self, backlog: str, key: str, raw: object, keys: tuple[str, ...], required: tuple[str, ...]
    ) -> dict[str, Any]:
        if not isinstance(raw, dict):
            raise self.fail(backlog, key, f"must be a mapping with the keys {', '.join(keys)}")
        for item in raw:
            if item not in keys:
                raise self.fail(backlog, f"{key}.{item}", f"unknown key (known: {', '.join(keys)})")
        for item in required:
            if item not in raw:
                raise self.fail(backlog, f"{key}.{item}", "is required")
        return raw

    def catch_all(self, backlog: str | None, key: str, raw: object, declared: tuple[str, ...]) -> str:
        """A value set's catch-all: one more label value, never one of the declared ones."""
        value = str(self.value(backlog, key, raw))
        if not value or has_control(value):
            raise self.fail(backlog, key, f"{raw!r} is not a non-empty label value without control characters")
        if value in declared:
            raise self.fail(backlog, key, f"{value!r} is a declared value already: the catch-all must be another")
        return value

    def table(self, backlog: str | None, key: str, scope: Scope, raw: object) -> tuple[str, ...]:
        """(table,) in tenant scope, (schema, table) in global scope."""
        if scope is Scope.TENANT:
            return (self.identifier(backlog, key, raw),)
        parts = raw.split(".") if isinstance(raw, str) else []
        if len(parts) != 2:
            raise self.fail(backlog, key, f"{raw!r} is not schema.table (global scope)")
        return tuple(self.identifier(backlog, key, part) for part in parts)

    def pending(self, backlog: str | None, key: str, raw: object) -> tuple[Condition, ...]:
        if not isinstance(raw, dict) or not raw:
            raise self.fail(backlog, key, "must map at least one column to its pending value(s)")
        return tuple(self.condition(backlog, key, column, value) for column, value in raw.items())

    def label_values(self, backlog: str | None, key: str, raw: object, what: str = "value") -> tuple[str, ...]:
        """A closed value set, as label text: non-empty, no value twice (1 and '1' are one label)."""
        values = tuple(str(value) for value in self.values(backlog, key, raw))
        if len(set(values)) != len(values):
            raise self.fail(backlog, key, f"{raw!r} repeats a {what}")
        return values
