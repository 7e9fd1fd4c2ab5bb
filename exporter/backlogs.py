"""Declared backlogs: the YAML file (--backlogs.config-file), read and
validated completely at start, into plain values. The same file may declare
more streams for the streams signal (exporter.declared_streams), the tenant
list, and replace a built-in table signal's declaration (`signals.dlq`,
`signals.preservation`: the printed contract's own keys; its families and
label names stay the registry's).

No SQL is accepted: tables and columns must be plain identifiers (they are
quoted anyway), and pending values are bound as parameters.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from exporter import zones
from exporter.audit_runs import READ as AUDIT_READ
from exporter.audit_runs import AuditRuns
from exporter.cadence import CADENCE_KEYS, declared_cadence
from exporter.conditions import Condition, Value
from exporter.contract.fixed import fixed_signals
from exporter.declarations import (
    AUDIT_CHAIN,
    STREAMS,
    Arrivals,
    Backlog,
    Declarations,
    LabelColumn,
    Scope,
    States,
    Window,
    table_signal_output,
)
from exporter.declared_streams import (
    NO_STREAMS,
    SHIPPED_STREAMS,
    DeclaredStreams,
    read_builtin_streams,
    read_streams,
)
from exporter.errors import BacklogConfigError
from exporter.printable import has_control, shortened
from exporter.sources.postgres.identifiers import SCHEMA_PREFIX
from exporter.tenant_list import DEFAULT_TENANTS, TenantList
from exporter.yamlfile import YamlError, parse_yaml, read_capped
from registry import RegistryError
from registry.backlogs import (
    BACKLOG_NAME,
    MAX_BACKLOG_NAME,
)
from registry.families import TABLE_SIGNAL_FAMILIES
from registry.values import SIGNALS

# Names of the stream signals declared apart (exporter.declared_streams); never a backlog's.
STREAMS_PREFIX = "streams_"
# A plain, unquoted PostgreSQL name; at most 63 bytes, so never truncated.
IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]{0,62}")
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
REQUIRED = ("help", "scope", "table", "pending")
TOP_LEVEL = ("version", "tenants", "signals", "backlogs", "streams")
TENANT_KEYS = ("table", "slug", "schema", "measured")
# A built-in table signal's keys in the contract (exporter.contract.tables): a backlog's, less
# its help, its states and arrivals; `labels` names each label's column, values and catch-all.
TABLE_SIGNAL_KEYS = ("source", *KEYS[1:7], "labels", "oldest", "timezone")
LABEL_KEYS = ("column", "values", "catch_all")
AUDIT_KEYS = ("source", "scope", "table", "complete", "latest", "columns", "timezone")
LABEL_REQUIRED = ("column", "values")
POSTGRESQL = "postgresql"
SCHEMA = f"{SCHEMA_PREFIX}<slug>"  # a tenant's schema, as the contract writes it

# An arrivals window: a whole number of minutes, hours or days, as Prometheus writes it.
WINDOW = re.compile(r"([1-9][0-9]{0,4})([mhd])")
WINDOW_UNITS = {"m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_SECONDS = 31 * 86400
MAX_WINDOWS = 4


@dataclass(frozen=True)
class Replaced:
    """What the contract's `signals` replaces of the built-in signals' (nothing: the shipped)."""

    tables: tuple[Backlog, ...] = ()
    audit: AuditRuns | None = None
    bus: DeclaredStreams | None = None


class _Reader:
    """Validates one file, naming the setting, the backlog and the key in every error."""

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

    def states(self, backlog: str, raw: object) -> States:
        keys = ("column", "values", "catch_all")
        body = self.mapping(backlog, "states", raw, keys, ("column", "values"))
        column = self.identifier(backlog, "states.column", body["column"])
        values = tuple(str(value) for value in self.values(backlog, "states.values", body["values"]))
        if len(set(values)) != len(values):
            raise self.fail(backlog, "states.values", f"{body['values']!r} repeats a state")
        catch_all = (
            self.catch_all(backlog, "states.catch_all", body["catch_all"], values) if "catch_all" in body else None
        )
        return States(column, values, catch_all)

    def window(self, backlog: str, raw: object) -> Window:
        match = WINDOW.fullmatch(raw) if isinstance(raw, str) else None
        if match is None or not isinstance(raw, str):
            raise self.fail(
                backlog, "arrivals.windows", f"{raw!r} is not a duration such as 30m, 1h or 7d (minutes, hours, days)"
            )
        seconds = int(match.group(1)) * WINDOW_UNITS[match.group(2)]
        if seconds > MAX_WINDOW_SECONDS:
            raise self.fail(backlog, "arrivals.windows", f"{raw!r} is longer than 31d")
        return Window(raw, seconds)

    def arrivals(self, backlog: str, raw: object) -> Arrivals:
        keys = ("column", "windows", "alert_above")
        body = self.mapping(backlog, "arrivals", raw, keys, ("column", "windows"))
        column = self.identifier(backlog, "arrivals.column", body["column"])
        windows_raw = body["windows"]
        if not isinstance(windows_raw, list) or not windows_raw or len(windows_raw) > MAX_WINDOWS:
            raise self.fail(backlog, "arrivals.windows", f"{windows_raw!r} is not a list of 1 to {MAX_WINDOWS} windows")
        windows = tuple(self.window(backlog, item) for item in windows_raw)
        lengths = [window.seconds for window in windows]
        if len(set(lengths)) != len(lengths):
            raise self.fail(backlog, "arrivals.windows", f"{windows_raw!r} repeats a window")
        thresholds: list[tuple[str, int]] = []
        if "alert_above" in body:
            declared = body["alert_above"]
            if not isinstance(declared, dict) or not declared:
                raise self.fail(backlog, "arrivals.alert_above", "must map a declared window to its threshold")
            labels = [window.label for window in windows]
            for label, threshold in declared.items():
                if label not in labels:
                    raise self.fail(
                        backlog, "arrivals.alert_above", f"{label!r} is not a declared window ({', '.join(labels)})"
                    )
                if isinstance(threshold, bool) or not isinstance(threshold, int) or threshold < 0:
                    raise self.fail(
                        backlog, f"arrivals.alert_above.{label}", f"{threshold!r} is not a non-negative integer"
                    )
                thresholds.append((label, threshold))
            thresholds.sort(key=lambda item: labels.index(item[0]))
        return Arrivals(column, windows, tuple(thresholds))

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

    def backlog(self, name: object, raw: object) -> Backlog:
        if not isinstance(name, str) or not BACKLOG_NAME.fullmatch(name) or len(name) > MAX_BACKLOG_NAME:
            raise self.fail(str(name), None, f"the name must be [a-z][a-z0-9_]*, at most {MAX_BACKLOG_NAME} characters")
        if name in SIGNALS:
            raise self.fail(name, None, "the name is a built-in signal's")
        if name.startswith(STREAMS_PREFIX):
            raise self.fail(name, None, f"the name starts with {STREAMS_PREFIX}, kept for stream signals")
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
        table = self.table(name, "table", scope, raw["table"])
        pending = self.pending(name, "pending", raw["pending"])
        group_by = groups = None
        if "group_by" in raw:
            group_by = self.identifier(name, "group_by", raw["group_by"])
            if "groups" not in raw:
                raise self.fail(name, "groups", "is required with group_by: the closed set of group values")
            groups = self.label_values(name, "groups", raw["groups"], "group")
        elif "groups" in raw:
            raise self.fail(name, "groups", "needs group_by: the column whose values they are")
        group_catch_all = None
        if "group_catch_all" in raw:
            if groups is None:
                raise self.fail(name, "group_catch_all", "needs group_by and groups: the value set it completes")
            group_catch_all = self.catch_all(name, "group_catch_all", raw["group_catch_all"], groups)
        oldest = self.identifier(name, "oldest", raw["oldest"]) if "oldest" in raw else None
        states = self.states(name, raw["states"]) if "states" in raw else None
        arrivals = self.arrivals(name, raw["arrivals"]) if "arrivals" in raw else None
        return Backlog(
            name,
            help_text.strip(),
            scope,
            table,
            pending,
            group_by,
            groups,
            oldest,
            timezone=self.zone(name, raw),
            states=states,
            arrivals=arrivals,
            group_catch_all=group_catch_all,
            cadence=declared_cadence(raw, lambda key, problem: self.fail(name, key, problem)),
        )

    def zone(self, backlog: str, raw: dict[object, object]) -> str:
        if "timezone" not in raw:
            return zones.UTC
        if "oldest" not in raw and "arrivals" not in raw:
            raise self.fail(backlog, "timezone", "needs oldest or arrivals: the column whose zone it is")
        zone = raw["timezone"]
        problem = zones.zone_problem(zone)
        if problem is not None or not isinstance(zone, str):
            raise self.fail(backlog, "timezone", problem or f"{zone!r} is not a zone name")
        return zone

    def tenants(self, raw: object) -> TenantList:
        """The tenant list: each key optional, the shipped default's where it is not given."""
        if not isinstance(raw, dict) or not raw:
            raise self.fail(None, "tenants", f"must map at least one of {', '.join(TENANT_KEYS)}")
        for key in raw:
            if key not in TENANT_KEYS:
                raise self.fail(None, f"tenants.{key}", f"unknown key (known: {', '.join(TENANT_KEYS)})")
        table = DEFAULT_TENANTS.table
        if "table" in raw:
            parts = raw["table"].split(".") if isinstance(raw["table"], str) else []
            if len(parts) != 2:
                raise self.fail(None, "tenants.table", f"{raw['table']!r} is not schema.table")
            schema, name = (self.identifier(None, "tenants.table", part) for part in parts)
            table = (schema, name)
        if "schema" in raw and raw["schema"] != SCHEMA:
            raise self.fail(None, "tenants.schema", f"{raw['schema']!r} is not {SCHEMA}: the schema name is fixed")
        slug = self.identifier(None, "tenants.slug", raw["slug"]) if "slug" in raw else DEFAULT_TENANTS.slug
        measured = DEFAULT_TENANTS.measured
        if "measured" in raw:
            declared = raw["measured"]
            if not isinstance(declared, dict) or not declared:
                raise self.fail(None, "tenants.measured", "must map at least one column to its accepted value(s)")
            measured = tuple(
                self.condition(None, "tenants.measured", column, value) for column, value in declared.items()
            )
        return TenantList(table, slug, measured)

    def document(self, raw: object) -> Declarations:
        if not isinstance(raw, dict) or not raw:
            raise self.fail(
                None, None, f"the file must be a mapping with one or more of the keys {', '.join(TOP_LEVEL)}"
            )
        for key in raw:
            if key not in TOP_LEVEL:
                raise self.fail(None, str(key), f"unknown key (the file holds only {', '.join(TOP_LEVEL)})")
        backlogs: tuple[Backlog, ...] = ()
        if "backlogs" in raw:
            declared = raw["backlogs"]
            if not isinstance(declared, dict) or not declared:
                raise self.fail(None, "backlogs", "must map each backlog's name to its declaration")
            backlogs = tuple(self.backlog(name, body) for name, body in declared.items())
        if "version" in raw and not isinstance(raw["version"], str):
            raise self.fail(None, "version", f"{raw['version']!r} is not the version a contract was printed by")
        tenants = self.tenants(raw["tenants"]) if "tenants" in raw else DEFAULT_TENANTS
        replaced = self.signals(raw["signals"]) if "signals" in raw else Replaced()
        builtin = SHIPPED_STREAMS if replaced.bus is None else replaced.bus
        streams = read_streams(raw["streams"], self.setting, builtin) if "streams" in raw else NO_STREAMS
        return Declarations(backlogs, streams, tenants, replaced.tables, replaced.audit, replaced.bus)


def parse_declarations(text: str, setting: str) -> Declarations:
    """What a YAML document declares; BacklogConfigError on any problem, the
    registry's rules included: what loads here, serve can register."""
    try:
        raw = parse_yaml(text)
    except YamlError as exc:
        raise BacklogConfigError(setting, None, None, str(exc)) from None
    declarations = _Reader(setting).document(raw)
    try:
        declarations.registry()
    except RegistryError as exc:
        raise BacklogConfigError(
            setting, None, None, f"the metrics it declares break a rule: {shortened(str(exc), 200)}"
        ) from None
    return declarations


def load_declarations(path: str, setting: str) -> Declarations:
    try:
        text = read_capped(path)
    except (OSError, UnicodeDecodeError, YamlError) as exc:
        raise BacklogConfigError(setting, None, None, f"cannot read {path}: {exc}") from None
    return parse_declarations(text, f"{setting} {path}")
