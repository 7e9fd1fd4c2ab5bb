"""Settings: every option, its flag and environment variable, parsed and
validated in one place before anything starts."""

from __future__ import annotations

import math
import urllib.parse
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from exporter.backlogs import NO_DECLARATIONS, Backlog, load_declarations
from exporter.declared_streams import NO_STREAMS, DeclaredStreams
from exporter.errors import ConfigError
from exporter.signals import BY_NAME as SIGNALS_BY_NAME
from exporter.signals import Source
from exporter.sources import dsn
from exporter.sources.postgres import PoolMode

DEFAULT_PORT = 9874


@dataclass(frozen=True)
class Option:
    """One setting: its attribute, CLI flag, environment variable, default and help."""

    name: str
    flag: str
    env: str | None
    default: str | None
    help: str
    metavar: str = "VALUE"


OPTIONS: tuple[Option, ...] = (
    Option(
        "listen_address",
        "--web.listen-address",
        "ORPYCAMCP_LISTEN_ADDRESS",
        f":{DEFAULT_PORT}",
        "address to serve /metrics on, HOST:PORT (empty host: all interfaces)",
        "HOST:PORT",
    ),
    Option(
        "database_url",
        "--database-url",
        "DATABASE_URL",
        None,
        "PostgreSQL URL, postgresql://user:password@host:port/db (several hosts, sockets, TLS: see Connecting)",
        "URL",
    ),
    Option(
        "database_url_file",
        "--database-url-file",
        "DATABASE_URL_FILE",
        None,
        "file holding the PostgreSQL URL (a mounted secret); instead of --database-url",
        "FILE",
    ),
    Option(
        "redis_url",
        "--redis-url",
        "REDIS_URL",
        None,
        "Redis URL (redis:// or rediss://); enables the streams signal",
        "URL",
    ),
    Option(
        "redis_url_file",
        "--redis-url-file",
        "REDIS_URL_FILE",
        None,
        "file holding the Redis URL (a mounted secret); instead of --redis-url",
        "FILE",
    ),
    Option(
        "signals",
        "--signals",
        "ORPYCAMCP_SIGNALS",
        None,
        "comma-separated signals (declared backlogs included) to enable (default: every signal whose source is"
        " configured)",
        "LIST",
    ),
    Option(
        "ttl",
        "--ttl",
        "METRICS_TTL_SECONDS",
        "30",
        "seconds a measurement (success or failure) is served from cache",
        "SECONDS",
    ),
    Option(
        "deadline",
        "--deadline",
        "METRICS_DEADLINE_SECONDS",
        "10",
        "seconds one measurement may take; below the TTL",
        "SECONDS",
    ),
    Option(
        "max_connections",
        "--database.max-connections",
        "ORPYCAMCP_DATABASE_MAX_CONNECTIONS",
        "2",
        "PostgreSQL connections at most",
        "N",
    ),
    Option(
        "batch_size",
        "--database.batch-size",
        "ORPYCAMCP_DATABASE_BATCH_SIZE",
        "250",
        "tenant schemas read by one statement",
        "N",
    ),
    Option(
        "idle_close",
        "--database.idle-close",
        "ORPYCAMCP_DATABASE_IDLE_CLOSE_SECONDS",
        None,
        "close database connections unused this long (default: 3 x TTL)",
        "SECONDS",
    ),
    Option(
        "max_queries",
        "--database.max-queries-per-connection",
        "ORPYCAMCP_DATABASE_MAX_QUERIES",
        "20000",
        "replace a connection after this many statements, bounding the memory its backend holds",
        "N",
    ),
    Option(
        "pool_mode",
        "--database.pool-mode",
        "ORPYCAMCP_DATABASE_POOL_MODE",
        PoolMode.SESSION.value,
        "session (direct, or a session pooler: statements prepared once per connection) or transaction"
        " (a transaction pooler such as PgBouncer pool_mode = transaction: nothing outlives a transaction)",
        "MODE",
    ),
    Option(
        "backlogs_file",
        "--backlogs.config-file",
        "ORPYCAMCP_BACKLOGS_FILE",
        None,
        "YAML file declaring more backlogs (each a signal of its own) and more streams to measure"
        " (deploy/backlogs.example.yml)",
        "FILE",
    ),
    Option(
        "web_config_file",
        "--web.config.file",
        "ORPYCAMCP_WEB_CONFIG_FILE",
        None,
        "exporter-toolkit web configuration (TLS, basic auth); re-read when its files change and on SIGHUP",
        "FILE",
    ),
    Option(
        "http_max_connections",
        "--web.max-connections",
        "ORPYCAMCP_WEB_MAX_CONNECTIONS",
        None,
        "HTTP connections held at most; at the cap the longest idle one is closed"
        " (default: what the file-descriptor limit allows, at most 16384)",
        "N",
    ),
    Option(
        "head_timeout",
        "--web.request-head-timeout",
        "ORPYCAMCP_WEB_REQUEST_HEAD_TIMEOUT_SECONDS",
        "5",
        "seconds a client has to send a complete request head before it is disconnected",
        "SECONDS",
    ),
    Option("log_format", "--log-format", "ORPYCAMCP_LOG_FORMAT", "text", "log format: text or json", "FORMAT"),
    Option(
        "log_level", "--log-level", "ORPYCAMCP_LOG_LEVEL", "info", "log level: debug, info, warning or error", "LEVEL"
    ),
)

OPTIONS_BY_NAME = {option.name: option for option in OPTIONS}


@dataclass(frozen=True)
class Settings:
    listen_host: str
    listen_port: int
    database_url: str | None
    redis_url: str | None
    signals: tuple[str, ...]
    ttl: float
    deadline: float
    max_connections: int
    batch_size: int
    idle_close: float
    max_queries: int
    pool_mode: PoolMode
    web_config_file: str | None
    log_format: str
    log_level: str
    http_max_connections: int | None = None
    head_timeout: float = 5.0
    backlogs: tuple[Backlog, ...] = ()
    streams: DeclaredStreams = NO_STREAMS


def describe(name: str) -> str:
    option = OPTIONS_BY_NAME[name]
    return f"{option.flag} ({option.env})" if option.env else option.flag


def redact_url(url: str) -> str:
    """The URL with any password replaced, for messages and logs (see dsn.redact)."""
    return dsn.redact(url)


def ambiguous_authority(url: str) -> bool:
    """True when the user or password holds an unencoded reserved character (see dsn.ambiguous_authority)."""
    return dsn.ambiguous_authority(url)


def _seconds(name: str, raw: str) -> float:
    try:
        value = float(raw)
    except ValueError:
        raise ConfigError(describe(name), f"{raw!r} is not a number of seconds") from None
    if not math.isfinite(value) or value <= 0:
        raise ConfigError(describe(name), f"must be a positive number of seconds, got {raw!r}")
    return value


def _count(name: str, raw: str, low: int, high: int) -> int:
    try:
        value = int(raw)
    except ValueError:
        raise ConfigError(describe(name), f"{raw!r} is not a whole number") from None
    if not low <= value <= high:
        raise ConfigError(describe(name), f"must be between {low} and {high}, got {value}")
    return value


def _listen(raw: str) -> tuple[str, int]:
    host, sep, port = raw.rpartition(":")
    if not sep:
        raise ConfigError(describe("listen_address"), f"{raw!r} is not HOST:PORT")
    if host.startswith("[") and host.endswith("]"):
        host = host[1:-1]
    try:
        number = int(port)
    except ValueError:
        raise ConfigError(describe("listen_address"), f"port {port!r} is not a number") from None
    if not 0 <= number <= 65535:
        raise ConfigError(describe("listen_address"), f"port {number} is out of range")
    return (host or "0.0.0.0", number)


def _url(name: str, raw: str | None, schemes: tuple[str, ...]) -> str | None:
    if raw is None or raw == "":
        return None
    unencoded = "percent-encode @ : / ? # % in the user and password (%40 %3A %2F %3F %23 %25)"
    if ambiguous_authority(raw):
        raise ConfigError(describe(name), f"{redact_url(raw)} is not a valid URL: {unencoded}")
    try:
        parts = urllib.parse.urlsplit(raw)
        parts.port  # noqa: B018 -- raises ValueError on a bad port
    except ValueError:
        # The parser's own words may quote part of the password: not repeated.
        raise ConfigError(describe(name), f"{redact_url(raw)} is not a valid URL (a bad port?): {unencoded}") from None
    if parts.scheme not in schemes:
        raise ConfigError(describe(name), f"{redact_url(raw)}: scheme must be one of {', '.join(schemes)}")
    return raw


def _database_url(raw: str | None, env: Mapping[str, str]) -> str | None:
    """The PostgreSQL URL if asyncpg would accept it (several hosts, sockets, TLS files...)."""
    if raw is None or raw == "":
        return None
    try:
        dsn.parse(raw, env)
    except dsn.InvalidDatabaseUrl as exc:
        raise ConfigError(describe("database_url"), f"{redact_url(raw)}: {exc.problem}") from None
    return raw


def _read_secret(name: str, path: str) -> str:
    """A URL from a file, as container platforms hand out secrets: trailing newline ignored.
    The message names the file, never its content."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    except OSError as exc:
        raise ConfigError(describe(name), f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise ConfigError(describe(name), f"{path} is not UTF-8 text") from None
    value = content.rstrip("\r\n")
    if not value.strip():
        raise ConfigError(describe(name), f"{path} is empty")
    if "\n" in value:
        raise ConfigError(describe(name), f"{path} holds more than one line")
    return value


def _url_or_file(url_name: str, file_name: str, raw: Callable[[str], str | None]) -> str | None:
    url, path = raw(url_name), raw(file_name)
    if url and path:
        raise ConfigError(describe(url_name), f"give it or {describe(file_name)}, not both")
    if path:
        return _read_secret(file_name, path)
    return url


def _choice(name: str, raw: str, choices: tuple[str, ...]) -> str:
    value = raw.lower()
    if value not in choices:
        raise ConfigError(describe(name), f"{raw!r} is not one of {', '.join(choices)}")
    return value


def _signals(
    raw: str | None, database_url: str | None, redis_url: str | None, backlogs: tuple[Backlog, ...], streams: bool
) -> tuple[str, ...]:
    configured = {Source.POSTGRES: database_url is not None, Source.REDIS: redis_url is not None}
    # Declared backlogs read PostgreSQL, after the built-in signals.
    sources = {name: signal.source for name, signal in SIGNALS_BY_NAME.items()}
    sources.update((backlog.name, Source.POSTGRES) for backlog in backlogs)
    if backlogs and database_url is None:
        raise ConfigError(describe("database_url"), f"the declared backlogs ({describe('backlogs_file')}) need it")
    if streams and redis_url is None:
        raise ConfigError(describe("redis_url"), f"the declared streams ({describe('backlogs_file')}) need it")
    if raw is None:
        enabled = tuple(name for name, source in sources.items() if configured[source])
        if not enabled:
            raise ConfigError(describe("database_url"), "no PostgreSQL database or Redis is configured")
        return enabled
    names = [name.strip() for name in raw.split(",") if name.strip()]
    if not names:
        raise ConfigError(describe("signals"), "names no signal")
    for name in names:
        if name not in sources:
            raise ConfigError(describe("signals"), f"unknown signal {name!r} (known: {', '.join(sources)})")
        source = sources[name]
        if not configured[source]:
            needed = "database_url" if source is Source.POSTGRES else "redis_url"
            raise ConfigError(describe(needed), f"signal {name!r} needs it")
    # Registry order, whatever order they were given in.
    return tuple(name for name in sources if name in names)


def load(values: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Settings from CLI values (None where not given), then the environment, then defaults."""

    def raw(name: str) -> str | None:
        option = OPTIONS_BY_NAME[name]
        given = values.get(name)
        if given is not None:
            return str(given)
        if option.env and option.env in env:
            return env[option.env]
        return option.default

    def required(name: str) -> str:
        value = raw(name)
        assert value is not None, name  # every option read through here has a default
        return value

    ttl = _seconds("ttl", required("ttl"))
    deadline = _seconds("deadline", required("deadline"))
    if deadline >= ttl:
        raise ConfigError(describe("deadline"), f"must be below the TTL ({deadline:g} >= {ttl:g})")
    host, port = _listen(required("listen_address"))
    database_url = _database_url(_url_or_file("database_url", "database_url_file", raw), env)
    redis_url = _url("redis_url", _url_or_file("redis_url", "redis_url_file", raw), ("redis", "rediss", "unix"))
    idle_raw = raw("idle_close")
    http_cap_raw = raw("http_max_connections")
    backlogs_file = raw("backlogs_file")
    declared = load_declarations(backlogs_file, describe("backlogs_file")) if backlogs_file else NO_DECLARATIONS
    return Settings(
        listen_host=host,
        listen_port=port,
        database_url=database_url,
        redis_url=redis_url,
        signals=_signals(raw("signals"), database_url, redis_url, declared.backlogs, bool(declared.streams)),
        ttl=ttl,
        deadline=deadline,
        max_connections=_count("max_connections", required("max_connections"), 1, 64),
        batch_size=_count("batch_size", required("batch_size"), 1, 5000),
        idle_close=_seconds("idle_close", idle_raw) if idle_raw is not None else 3 * ttl,
        max_queries=_count("max_queries", required("max_queries"), 1, 10_000_000),
        pool_mode=PoolMode(_choice("pool_mode", required("pool_mode"), tuple(mode.value for mode in PoolMode))),
        web_config_file=raw("web_config_file") or None,
        log_format=_choice("log_format", required("log_format"), ("text", "json")),
        log_level=_choice("log_level", required("log_level"), ("debug", "info", "warning", "error")),
        http_max_connections=_count("http_max_connections", http_cap_raw, 16, 1 << 20) if http_cap_raw else None,
        head_timeout=_seconds("head_timeout", required("head_timeout")),
        backlogs=declared.backlogs,
        streams=declared.streams,
    )
