"""The option declarations are the only source of each setting: its environment
names follow one rule, its default is written once, and the components take
their values from it (exporter.service, field by field)."""

from __future__ import annotations

import ast
import dataclasses
import inspect
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from exporter.cache import SignalCache
from exporter.errors import InvalidSettings
from exporter.http.fdlimit import connection_cap
from exporter.http.limits import bounded_protocol
from exporter.loading import load
from exporter.options import Choice, Option, OptionName, name_of
from exporter.service import build_sources, timeouts_of
from exporter.settings import OPTIONS, OPTIONS_BY_NAME, Settings
from exporter.sources.postgres.source import PostgresSettings
from exporter.sources.redis.clients import SENTINEL_MAJORITIES
from exporter.sources.redis.source import RedisSettings
from exporter.timeouts import Timeouts

ROOT = Path(__file__).resolve().parents[2]
DB = "postgresql://u:secret@db:5432/platform"
# Where a declaration's `feeds` may point: the component settings and parameters that take option values.
COMPONENTS: dict[str, Any] = {
    "PostgresSettings": PostgresSettings,
    "RedisSettings": RedisSettings,
    "Timeouts": Timeouts,
    "SignalCache": SignalCache,
    "bounded_protocol": bounded_protocol,
    "connection_cap": connection_cap,
}


# Which component field each option reaches through exporter.service: checked below
# against what the wiring builds, with the declared defaults and with values given.
FEEDS: dict[str, tuple[str, ...]] = {
    "database_url": ("PostgresSettings.url",),
    "redis_url": ("RedisSettings.url",),
    "ttl": ("SignalCache.ttl",),
    "deadline": ("Timeouts.deadline",),
    "database_max_connections": ("PostgresSettings.max_connections",),
    "database_batch_size": ("PostgresSettings.batch_size",),
    "database_idle_close": ("PostgresSettings.idle_close",),
    "database_max_queries_per_connection": ("PostgresSettings.max_queries_per_connection",),
    "database_pool_mode": ("PostgresSettings.pool_mode",),
    "database_replica_max_staleness": ("PostgresSettings.replica_max_staleness",),
    "redis_replica_max_staleness": ("RedisSettings.replica_max_staleness",),
    "redis_sentinel_majority": ("RedisSettings.sentinel_majority",),
    "web_request_head_timeout": ("bounded_protocol.request_head_timeout",),
    "web_max_connections": ("connection_cap.max_connections",),
}


def feeds(option: Option[Any]) -> tuple[str, ...]:
    return FEEDS.get(option.name, ())


def test_a_setting_has_one_name_from_flag_to_component() -> None:
    """The field is the flag, dots and dashes as underscores; the component's own
    setting is what follows the component's dot (the whole name for a flag of one word)."""
    for option in OPTIONS:
        # Written out here rather than derived from exporter.options.
        assert option.name == option.flag.lstrip("-").replace(".", "_").replace("-", "_")
        after_dot = option.flag.lstrip("-").split(".", 1)[-1].replace(".", "_").replace("-", "_")
        for target in feeds(option):
            assert target.split(".", 1)[1] == after_dot, (option.flag, target)


def test_environment_names_follow_one_rule() -> None:
    for option in OPTIONS:
        # Written out here rather than derived: ORPYCAMCP_ + the flag, dots and dashes as underscores.
        expected = "ORPYCAMCP_" + option.flag.lstrip("-").replace(".", "_").replace("-", "_").upper()
        assert option.env == expected
        assert option.envs[0] == expected
    every = [name for option in OPTIONS for name in option.envs]
    assert len(every) == len(set(every)), "an environment name read by two options"


@pytest.mark.parametrize(
    ("alias", "name", "value", "expected"),
    [
        ("DATABASE_URL", "database_url", DB, DB),
        ("METRICS_TTL_SECONDS", "ttl", "60", 60.0),
        ("METRICS_DEADLINE_SECONDS", "deadline", "7", 7.0),
        ("ORPYCAMCP_DATABASE_MAX_QUERIES", "database_max_queries_per_connection", "123", 123),
        ("ORPYCAMCP_DATABASE_IDLE_CLOSE_SECONDS", "database_idle_close", "12", 12.0),
        ("ORPYCAMCP_LISTEN_ADDRESS", "web_listen_address", "127.0.0.1:9000", ("127.0.0.1", 9000)),
        ("ORPYCAMCP_WEB_REQUEST_HEAD_TIMEOUT_SECONDS", "web_request_head_timeout", "2", 2.0),
    ],
)
def test_earlier_names_are_read_as_aliases(alias: str, name: OptionName, value: str, expected: object) -> None:
    assert alias in OPTIONS_BY_NAME[name].aliases
    env = {"ORPYCAMCP_DATABASE_URL": DB} if name != "database_url" else {}
    assert getattr(load({}, env | {alias: value}), name) == expected


def test_the_rule_name_and_an_alias_must_agree() -> None:
    assert load({}, {"DATABASE_URL": DB, "ORPYCAMCP_DATABASE_URL": DB}).database_url == DB
    assert load({}, {"DATABASE_URL": DB, "ORPYCAMCP_DATABASE_URL": ""}).database_url == DB
    with pytest.raises(InvalidSettings, match="ORPYCAMCP_TTL and METRICS_TTL_SECONDS disagree"):
        load({"database_url": DB}, {"ORPYCAMCP_TTL": "20", "METRICS_TTL_SECONDS": "40"})


def test_every_default_is_valid_and_every_option_is_a_settings_field() -> None:
    fields = {field.name for field in dataclasses.fields(Settings)}
    settings = load({"database_url": DB}, {})
    for option in OPTIONS:
        assert option.name in fields
        assert option.help
        assert option.metavar
        if option.default is not None:
            assert getattr(settings, option.name) == option.parse(option.default, {})
        else:
            assert option.default_doc is not None or option.name.endswith(("_url", "_file")), option.name


# --- no default is written twice ------------------------------------------------------------------------------


def _normalised(name: str) -> str:
    return re.sub(r"(_seconds|_default)$", "", name.lower().removeprefix("default_"))


def _literal(node: ast.AST | None) -> bool:
    if isinstance(node, ast.Constant):
        return node.value is not None
    if isinstance(node, ast.UnaryOp):
        return _literal(node.operand)
    if isinstance(node, ast.BinOp):
        return _literal(node.left) and _literal(node.right)
    return False


def literal_bindings(source: str) -> Iterator[tuple[str, int]]:
    """Every name bound to a literal: assignments and class fields, parameter defaults, keyword arguments."""
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Assign) and _literal(node.value):
            for target in node.targets:
                if isinstance(target, ast.Name | ast.Attribute):
                    yield (target.id if isinstance(target, ast.Name) else target.attr), node.lineno
        elif isinstance(node, ast.AnnAssign) and _literal(node.value):
            target = node.target
            if isinstance(target, ast.Name | ast.Attribute):
                yield (target.id if isinstance(target, ast.Name) else target.attr), node.lineno
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            arguments = node.args
            positional = [*arguments.posonlyargs, *arguments.args]
            for argument, default in zip(
                positional[len(positional) - len(arguments.defaults) :], arguments.defaults, strict=False
            ):
                if _literal(default):
                    yield argument.arg, node.lineno
            for argument, kw_default in zip(arguments.kwonlyargs, arguments.kw_defaults, strict=False):
                if _literal(kw_default):
                    yield argument.arg, node.lineno
        elif isinstance(node, ast.Call):
            for keyword in node.keywords:
                if keyword.arg is not None and _literal(keyword.value):
                    yield keyword.arg, node.lineno


def defaults_written_outside_the_declarations(files: dict[str, str]) -> list[str]:
    """`path:line name` for every literal bound, outside a declaration, to a name that
    is an option or a component setting an option feeds (whatever its value)."""
    names = {_normalised(option.name): option.flag for option in OPTIONS}
    for option in OPTIONS:
        names.update((_normalised(target.split(".", 1)[1]), option.flag) for target in feeds(option))
    found = []
    for path, source in files.items():
        for name, line in literal_bindings(source):
            if _normalised(name) in names:
                found.append(f"{path}:{line} {name} (the default of {names[_normalised(name)]})")
    return found


def exporter_sources(root: Path) -> dict[str, str]:
    return {str(path.relative_to(root)): path.read_text() for path in sorted((root / "exporter").rglob("*.py"))}


def test_no_default_is_written_twice() -> None:
    """An option's default lives in its declaration (a keyword `default=` of `option(...)`,
    which binds no option name); no module binds a literal to an option's name, or to a
    component field it feeds, as a second default that could drift."""
    assert defaults_written_outside_the_declarations(exporter_sources(ROOT)) == []


def test_the_scan_finds_a_second_default() -> None:
    """The scan sees each way the defaults used to drift: a dataclass field, a module
    constant, a parameter default, a keyword argument."""
    planted = {
        "postgres.py": "class PostgresSettings:\n    max_queries_per_connection: int = 50_000\n",
        "limits.py": "REQUEST_HEAD_TIMEOUT_SECONDS = 5.0\n",
        "server.py": "def serve(ttl=30):\n    pass\n",
        "service.py": "build(idle_close=3 * 30)\n",
        "other.py": "timeout_keep_alive = 15\nclass X:\n    retries: int = 2\n",
    }
    found = defaults_written_outside_the_declarations(planted)
    assert [entry.split(" ", 1)[0] for entry in found] == [
        "postgres.py:2",
        "limits.py:1",
        "server.py:1",
        "service.py:1",
    ]


def test_every_fed_component_setting_has_no_default_of_its_own() -> None:
    fed = [target for option in OPTIONS for target in feeds(option)]
    assert fed, "no option feeds a component"
    for target in fed:
        component, name = target.split(".", 1)
        owner = COMPONENTS[component]
        if dataclasses.is_dataclass(owner):
            (field,) = [field for field in dataclasses.fields(owner) if field.name == name]
            assert field.default is dataclasses.MISSING, target
            assert field.default_factory is dataclasses.MISSING, target
        else:
            parameter = inspect.signature(owner).parameters[name]
            assert parameter.default is inspect.Parameter.empty, target


def built_components(settings: Settings) -> dict[str, Any]:
    """The settings of the components exporter.service builds, by class name."""
    sources = build_sources(settings)
    assert sources.postgres is not None
    assert sources.redis is not None
    return {
        "PostgresSettings": sources.postgres.settings,
        "RedisSettings": sources.redis.settings,
        "Timeouts": timeouts_of(settings),
    }


def test_the_components_take_the_declared_defaults() -> None:
    """Built with nothing but a URL, each component holds its option's declared default."""
    settings = load({"database_url": DB, "redis_url": "redis://r:6379/0"}, {})
    built = built_components(settings)
    checked = 0
    for option in OPTIONS:
        for target in feeds(option):
            component, name = target.split(".", 1)
            if component not in built:
                continue
            declared = (
                option.parse(option.default, {}) if option.default is not None else getattr(settings, option.name)
            )
            assert getattr(built[component], name) == declared, target
            checked += 1
    assert checked >= 8
    # The derived default: idle close is three TTLs, the TTL's declared default being 30 s.
    assert built["PostgresSettings"].idle_close == 3 * float(OPTIONS_BY_NAME["ttl"].default or "nan")


def test_the_urls_stay_out_of_repr() -> None:
    settings = load({"database_url": DB, "redis_url": "redis://:secret@r:6379/0"}, {})
    sources = build_sources(settings)
    assert sources.postgres is not None
    assert sources.redis is not None
    for shown in (repr(settings), repr(sources.postgres.settings), repr(sources.redis.settings)):
        assert "secret" not in shown


def test_the_components_take_the_values_given() -> None:
    """Each option given a value other than its default reaches the field FEEDS names."""
    given = {
        "database_url": DB,
        "redis_url": "redis://r:6379/0",
        "ttl": "40",
        "deadline": "7",
        "database_max_connections": "5",
        "database_batch_size": "99",
        "database_idle_close": "77",
        "database_max_queries_per_connection": "1234",
        "database_pool_mode": "transaction",
        "database_replica_max_staleness": "11",
        "redis_replica_max_staleness": "13",
        "redis_sentinel_majority": "answering",
    }
    settings = load(given, {})
    built = built_components(settings)
    checked = 0
    for name, text in given.items():
        for target in FEEDS[name]:
            component, field = target.split(".", 1)
            if component in built:
                assert getattr(built[component], field) == OPTIONS_BY_NAME[name_of(name)].parse(text, {}), target
                checked += 1
    assert checked == 11
    # The fields of the sources' settings that no option feeds hold no value that could be one.
    for owner in (PostgresSettings, RedisSettings):
        fed = {
            target.split(".", 1)[1]
            for targets in FEEDS.values()
            for target in targets
            if target.startswith(owner.__name__ + ".")
        }
        unfed = {item.name for item in dataclasses.fields(owner)} - fed
        # (tls and tenants come from side files: the TLS flags' files, the declarations file.)
        assert unfed <= {"application_name", "client_name", "tls", "tenants"}, (owner.__name__, unfed)


def test_the_sentinel_majorities_are_the_clients() -> None:
    option = OPTIONS_BY_NAME["redis_sentinel_majority"]
    assert isinstance(option.parse, Choice)
    assert option.parse.choices == SENTINEL_MAJORITIES
    assert option.default == SENTINEL_MAJORITIES[0]  # configured: a lone sentinel never decides
