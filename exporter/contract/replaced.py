"""The contract's `signals` (a printed contract, edited, given as the declarations
file): the built-in table signals' declarations, audit_chain's runs and the
streams signal's own pairs read in place of the shipped ones; migration_lock's
accepted only as printed. Family and label names stay the registry's (ADR-041)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from exporter import zones
from exporter.audit_runs import READ as AUDIT_READ
from exporter.audit_runs import AuditRuns
from exporter.contract.fixed import fixed_signals
from exporter.declaration_fields import KEYS, FieldReader
from exporter.declarations import AUDIT_CHAIN, STREAMS, Backlog, LabelColumn, Scope, table_signal_output
from exporter.declared_streams import DeclaredStreams, read_builtin_streams
from registry.families import TABLE_SIGNAL_FAMILIES
from registry.values import SIGNALS

POSTGRESQL = "postgresql"
# A built-in table signal's keys: a declared backlog's, less its help, states and arrivals;
# `labels` names each label's column, values and catch-all.
TABLE_SIGNAL_KEYS = ("source", *KEYS[1:7], "labels", "oldest", "timezone")
LABEL_KEYS = ("column", "values", "catch_all")
LABEL_REQUIRED = ("column", "values")
AUDIT_KEYS = ("source", "scope", "table", "complete", "latest", "columns", "timezone")


@dataclass(frozen=True)
class Replaced:
    """What the contract's `signals` replaces of the built-in signals' (nothing: the shipped)."""

    tables: tuple[Backlog, ...] = ()
    audit: AuditRuns | None = None
    bus: DeclaredStreams | None = None


class ContractReader(FieldReader):
    """Reads the contract's `signals` section of a declarations file."""

    def label_columns(self, at: str, raw: dict[Any, Any], names: tuple[str, ...]) -> tuple[LabelColumn, ...]:
        """A table signal's label columns: `group_by` and `groups` for its one label, or `labels`
        mapping each of its label names (fixed: ADR-041) to its column and values."""
        if "group_catch_all" in raw and len(names) != 1:
            raise self.fail(None, f"{at}.group_catch_all", "is group_by's: give each label's catch_all under labels")
        if "labels" in raw:
            if "group_by" in raw or "groups" in raw:
                raise self.fail(None, f"{at}.labels", "is given with group_by or groups: declare one or the other")
            labels = raw["labels"]
            if not isinstance(labels, dict) or set(labels) != set(names):
                found = sorted(map(str, labels)) if isinstance(labels, dict) else labels
                raise self.fail(
                    None, f"{at}.labels", f"must map exactly the labels {', '.join(names)} (ADR-041), got {found!r}"
                )
            columns = []
            for name in names:
                key = f"{at}.labels.{name}"
                if not isinstance(labels[name], dict):
                    raise self.fail(None, key, f"must be a mapping with the keys {', '.join(LABEL_KEYS)}")
                body = labels[name]
                for item in LABEL_REQUIRED:
                    if item not in body:
                        raise self.fail(None, f"{key}.{item}", "is required")
                for item in body:
                    if item not in LABEL_KEYS:
                        raise self.fail(None, f"{key}.{item}", f"unknown key (known: {', '.join(LABEL_KEYS)})")
                column = self.identifier(None, f"{key}.column", body["column"])
                values = self.label_values(None, f"{key}.values", body["values"])
                columns.append(LabelColumn(column, values, self.opt_in(f"{key}.catch_all", body, values), label=name))
            return tuple(columns)
        if len(names) != 1:
            raise self.fail(None, f"{at}.labels", f"is required: the columns and values of {', '.join(names)}")
        for item in ("group_by", "groups"):
            if item not in raw:
                raise self.fail(None, f"{at}.{item}", f"is required: the column and values of {names[0]}")
        column = self.identifier(None, f"{at}.group_by", raw["group_by"])
        values = self.label_values(None, f"{at}.groups", raw["groups"])
        return (LabelColumn(column, values, self.opt_in(f"{at}.group_catch_all", raw, values), label=names[0]),)

    def opt_in(self, key: str, raw: dict[Any, Any], values: tuple[str, ...]) -> str | None:
        """A built-in value set's catch-all (the key's last part in `raw`), if it opts in to one."""
        item = key.rsplit(".", 1)[1]
        return self.catch_all(None, key, raw[item], values) if item in raw else None

    def table_signal(self, name: str, raw: object) -> Backlog:
        """A built-in table signal's declaration (the contract's `signals.<name>`), in place of the
        shipped one: its table, columns, status words and value sets; never its families or labels."""
        at = f"signals.{name}"
        pending_family, oldest_family = TABLE_SIGNAL_FAMILIES[name]
        if not isinstance(raw, dict):
            raise self.fail(None, at, f"must be a mapping with the keys {', '.join(TABLE_SIGNAL_KEYS)}")
        for key in raw:
            if key not in TABLE_SIGNAL_KEYS:
                raise self.fail(None, f"{at}.{key}", f"unknown key (known: {', '.join(TABLE_SIGNAL_KEYS)})")
        for key in ("table", "pending"):
            if key not in raw:
                raise self.fail(None, f"{at}.{key}", "is required")
        if raw.get("source", POSTGRESQL) != POSTGRESQL:
            raise self.fail(None, f"{at}.source", f"{raw['source']!r} is not {POSTGRESQL}: {name} reads a table")
        try:
            scope = Scope(raw.get("scope", Scope.TENANT.value))
        except ValueError:
            raise self.fail(None, f"{at}.scope", f"{raw['scope']!r} is not tenant or global") from None
        oldest = None
        if "oldest" in raw:
            if oldest_family is None:
                raise self.fail(None, f"{at}.oldest", f"{name} has no family for an oldest time (ADR-041)")
            oldest = self.identifier(None, f"{at}.oldest", raw["oldest"])
        zone = zones.UTC
        if "timezone" in raw:
            problem = zones.zone_problem(raw["timezone"])
            if oldest is None or problem is not None or not isinstance(raw["timezone"], str):
                raise self.fail(None, f"{at}.timezone", problem or "needs oldest: the column whose zone it is")
            zone = raw["timezone"]
        return Backlog(
            name,
            pending_family.help,
            scope,
            self.table(None, f"{at}.table", scope, raw["table"]),
            self.pending(None, f"{at}.pending", raw["pending"]),
            oldest=oldest,
            timezone=zone,
            label_columns=self.label_columns(at, raw, pending_family.labels),
            output=table_signal_output(name),
        )

    def audit_chain(self, raw: object) -> AuditRuns:
        """audit_chain's runs (the contract's `signals.audit_chain`), in place of the shipped ones:
        the table, the complete-run condition, the order, the columns read and their zone."""
        at = "signals.audit_chain"
        if not isinstance(raw, dict):
            raise self.fail(None, at, f"must be a mapping with the keys {', '.join(AUDIT_KEYS)}")
        for key in raw:
            if key not in AUDIT_KEYS:
                raise self.fail(None, f"{at}.{key}", f"unknown key (known: {', '.join(AUDIT_KEYS)})")
        for key in ("table", "complete", "latest", "columns"):
            if key not in raw:
                raise self.fail(None, f"{at}.{key}", "is required")
        if raw.get("source", POSTGRESQL) != POSTGRESQL:
            raise self.fail(None, f"{at}.source", f"{raw['source']!r} is not {POSTGRESQL}: audit_chain reads a table")
        if raw.get("scope", Scope.GLOBAL.value) != Scope.GLOBAL.value:
            raise self.fail(None, f"{at}.scope", f"{raw['scope']!r} is not global: the runs are one table")
        schema, table = self.table(None, f"{at}.table", Scope.GLOBAL, raw["table"])
        latest = raw["latest"]
        if not isinstance(latest, list) or not latest:
            raise self.fail(None, f"{at}.latest", f"{latest!r} is not a non-empty list of columns, latest first")
        order = tuple(self.identifier(None, f"{at}.latest", column) for column in latest)
        if len(set(order)) != len(order):
            raise self.fail(None, f"{at}.latest", f"{latest!r} repeats a column")
        columns = raw["columns"]
        if not isinstance(columns, dict) or set(columns) != set(AUDIT_READ):
            found = sorted(map(str, columns)) if isinstance(columns, dict) else columns
            raise self.fail(
                None, f"{at}.columns", f"must map exactly {', '.join(AUDIT_READ)} to columns, got {found!r}"
            )
        read = tuple((item, self.identifier(None, f"{at}.columns.{item}", columns[item])) for item in AUDIT_READ)
        zone = raw.get("timezone", zones.UTC)
        problem = zones.zone_problem(zone)
        if problem is not None or not isinstance(zone, str):
            raise self.fail(None, f"{at}.timezone", problem or f"{zone!r} is not a zone name")
        complete = self.pending(None, f"{at}.complete", raw["complete"])
        return AuditRuns((schema, table), complete, order, read, zone)

    def signals(self, raw: object) -> Replaced:
        """The contract's `signals`: the table signals' declarations, audit_chain's runs and the
        streams signal's own pairs replaced; migration_lock's as printed."""
        if not isinstance(raw, dict) or not raw:
            raise self.fail(None, "signals", f"must map one or more of {', '.join(SIGNALS)} to its contract")
        fixed = fixed_signals()
        tables = []
        audit = bus = None
        for name, body in raw.items():
            if name in TABLE_SIGNAL_FAMILIES:
                tables.append(self.table_signal(name, body))
            elif name == AUDIT_CHAIN:
                audit = self.audit_chain(body)
            elif name == STREAMS:
                bus = read_builtin_streams(body, self.setting, fixed[STREAMS])
            elif name in fixed:
                if body != fixed[name]:
                    raise self.fail(None, f"signals.{name}", "differs from the shipped contract: it cannot be replaced")
            else:
                raise self.fail(None, f"signals.{name}", f"unknown signal (the contract's: {', '.join(SIGNALS)})")
        return Replaced(tuple(tables), audit, bus)
