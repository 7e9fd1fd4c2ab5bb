"""Declared backlogs: the YAML file (--backlogs.config-file), read and
validated completely at start, into plain values.

No SQL is accepted: tables and columns must be plain identifiers (they are
quoted anyway), and pending values are bound as parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from enum import StrEnum

from exporter.errors import BacklogConfigError
from exporter.printable import has_control
from exporter.yamlfile import YamlError, parse_yaml, read_capped
from registry.backlogs import BACKLOG_NAME, MAX_BACKLOG_NAME
from registry.values import SIGNALS

# A plain, unquoted PostgreSQL name; at most 63 bytes, so never truncated.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
KEYS = ("help", "scope", "table", "pending", "group_by", "groups", "oldest")
REQUIRED = ("help", "scope", "table", "pending")

Value = str | int


class Scope(StrEnum):
    TENANT = "tenant"  # the table in every active tenant schema
    GLOBAL = "global"  # one schema-qualified table


@dataclass(frozen=True)
class Condition:
    """`column` is (or, negated, is not) one of `values`."""

    column: str
    values: tuple[Value, ...]
    negated: bool = False


@dataclass(frozen=True)
class Backlog:
    name: str
    help: str
    scope: Scope
    table: tuple[str, ...]  # (table,) in tenant scope, (schema, table) in global scope
    pending: tuple[Condition, ...]
    group_by: str | None = None
    groups: tuple[str, ...] | None = None  # label values, in declared order
    oldest: str | None = None


class _Reader:
    """Validates one file, naming the setting, the backlog and the key in every error."""

    def __init__(self, setting: str) -> None:
        self.setting = setting

    def fail(self, backlog: str | None, key: str | None, problem: str) -> BacklogConfigError:
        return BacklogConfigError(self.setting, backlog, key, problem)

    def identifier(self, backlog: str, key: str, raw: object) -> str:
        if not isinstance(raw, str) or not IDENTIFIER.fullmatch(raw):
            raise self.fail(backlog, key, f"{raw!r} is not a plain column or table name ([A-Za-z_][A-Za-z0-9_]*)")
        return raw

    def value(self, backlog: str, key: str, raw: object) -> Value:
        # bool is an int in Python, and YAML reads yes/no/on/off as booleans.
        if isinstance(raw, bool) or not isinstance(raw, str | int):
            raise self.fail(backlog, key, f"{raw!r} is not a string or an integer (quote it)")
        return raw

    def values(self, backlog: str, key: str, raw: object) -> tuple[Value, ...]:
        if not isinstance(raw, list) or not raw:
            raise self.fail(backlog, key, f"{raw!r} is not a non-empty list")
        values = tuple(self.value(backlog, key, item) for item in raw)
        if len({(type(v), v) for v in values}) != len(values):
            raise self.fail(backlog, key, f"{raw!r} repeats a value")
        return values

    def condition(self, backlog: str, column: object, raw: object) -> Condition:
        name = self.identifier(backlog, f"pending.{column}", column)
        key = f"pending.{name}"
        if isinstance(raw, dict):
            if set(raw) != {"not"}:
                raise self.fail(
                    backlog, key, f"a mapping must be exactly {{not: [values]}}, got keys {sorted(map(str, raw))}"
                )
            return Condition(name, self.values(backlog, f"{key}.not", raw["not"]), negated=True)
        if isinstance(raw, list):
            return Condition(name, self.values(backlog, key, raw))
        return Condition(name, (self.value(backlog, key, raw),))

    def backlog(self, name: object, raw: object) -> Backlog:
        if not isinstance(name, str) or not BACKLOG_NAME.fullmatch(name) or len(name) > MAX_BACKLOG_NAME:
            raise self.fail(str(name), None, f"the name must be [a-z][a-z0-9_]*, at most {MAX_BACKLOG_NAME} characters")
        if name in SIGNALS:
            raise self.fail(name, None, "the name is a built-in signal's")
        if not isinstance(raw, dict):
            raise self.fail(name, None, "is not a mapping of keys")
        for key in raw:
            if key not in KEYS:
                raise self.fail(name, str(key), f"unknown key (known: {', '.join(KEYS)})")
        for key in REQUIRED:
            if key not in raw:
                raise self.fail(name, key, "is required")
        help_text = raw["help"]
        if not isinstance(help_text, str) or not help_text.strip() or has_control(help_text.strip()):
            raise self.fail(name, "help", "must be one non-empty line of text, without control characters")
        try:
            scope = Scope(raw["scope"])
        except ValueError:
            raise self.fail(name, "scope", f"{raw['scope']!r} is not tenant or global") from None
        table_raw = raw["table"]
        if scope is Scope.TENANT:
            table: tuple[str, ...] = (self.identifier(name, "table", table_raw),)
        else:
            parts = table_raw.split(".") if isinstance(table_raw, str) else []
            if len(parts) != 2:
                raise self.fail(name, "table", f"{table_raw!r} is not schema.table (global scope)")
            table = tuple(self.identifier(name, "table", part) for part in parts)
        pending_raw = raw["pending"]
        if not isinstance(pending_raw, dict) or not pending_raw:
            raise self.fail(name, "pending", "must map at least one column to its pending value(s)")
        pending = tuple(self.condition(name, column, value) for column, value in pending_raw.items())
        group_by = groups = None
        if "group_by" in raw:
            group_by = self.identifier(name, "group_by", raw["group_by"])
            if "groups" not in raw:
                raise self.fail(name, "groups", "is required with group_by: the closed set of group values")
            declared = self.values(name, "groups", raw["groups"])
            groups = tuple(str(value) for value in declared)
            if len(set(groups)) != len(groups):
                raise self.fail(name, "groups", f"{raw['groups']!r} repeats a group")
        elif "groups" in raw:
            raise self.fail(name, "groups", "needs group_by: the column whose values they are")
        oldest = self.identifier(name, "oldest", raw["oldest"]) if "oldest" in raw else None
        return Backlog(name, help_text.strip(), scope, table, pending, group_by, groups, oldest)

    def document(self, raw: object) -> tuple[Backlog, ...]:
        if not isinstance(raw, dict):
            raise self.fail(None, None, "the file must be a mapping with the one key 'backlogs'")
        for key in raw:
            if key != "backlogs":
                raise self.fail(None, str(key), "unknown key (the file holds only 'backlogs')")
        declared = raw.get("backlogs")
        if not isinstance(declared, dict) or not declared:
            raise self.fail(None, "backlogs", "must map each backlog's name to its declaration")
        return tuple(self.backlog(name, body) for name, body in declared.items())


def parse_backlogs(text: str, setting: str) -> tuple[Backlog, ...]:
    """The backlogs a YAML document declares; BacklogConfigError on any problem."""
    try:
        raw = parse_yaml(text)
    except YamlError as exc:
        raise BacklogConfigError(setting, None, None, str(exc)) from None
    return _Reader(setting).document(raw)


def load_backlogs(path: str, setting: str) -> tuple[Backlog, ...]:
    try:
        text = read_capped(path)
    except (OSError, UnicodeDecodeError, YamlError) as exc:
        raise BacklogConfigError(setting, None, None, f"cannot read {path}: {exc}") from None
    return parse_backlogs(text, f"{setting} {path}")
