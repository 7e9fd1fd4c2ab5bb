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

from exporter import zones
from exporter.cadence import declared_cadence
from exporter.contract.replaced import ContractReader, Replaced
from exporter.declaration_fields import KEYS
from exporter.declarations import (
    Arrivals,
    Backlog,
    Declarations,
    Scope,
    States,
    Window,
)
from exporter.declared_streams import (
    NO_STREAMS,
    SHIPPED_STREAMS,
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
from registry.values import SIGNALS

# Names of the stream signals declared apart (exporter.declared_streams); never a backlog's.
STREAMS_PREFIX = "streams_"
REQUIRED = ("help", "scope", "table", "pending")
TOP_LEVEL = ("version", "tenants", "signals", "backlogs", "streams")
TENANT_KEYS = ("table", "slug", "schema", "measured")
SCHEMA = f"{SCHEMA_PREFIX}<slug>"  # a tenant's schema, as the contract writes it

# An arrivals window: a whole number of minutes, hours or days, as Prometheus writes it.
WINDOW = re.compile(r"([1-9][0-9]{0,4})([mhd])")
WINDOW_UNITS = {"m": 60, "h": 3600, "d": 86400}
MAX_WINDOW_SECONDS = 31 * 86400
MAX_WINDOWS = 4


class _Reader(ContractReader):
    """Validates one file, naming the setting, the backlog and the key in every error."""

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
