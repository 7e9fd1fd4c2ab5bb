"""Settings: every option declared once, as a field of `Settings` (plain frozen
data once loaded), then read and validated, every invalid setting reported at once.

An option's declaration (exporter.options.option) holds how it is parsed and
bounded (the parsers live beside what they parse), its default, its help and its
environment aliases; its flag is in exporter.flags. The command line
(exporter.arguments), docs/configuration.md and the checks of `serve`,
`check-config`, `diagnose` and `healthcheck` all read these declarations;
exporter.precedence reads each option (flag, environment, default); the rules
below are what involves several options at once. The components get their
values in exporter.service, by name.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from exporter.backlogs import NO_DECLARATIONS, Backlog, load_declarations
from exporter.declared_streams import NO_STREAMS, DeclaredStreams
from exporter.errors import ConfigError
from exporter.flags import FLAGS
from exporter.http.fdlimit import DEFAULT_CAP_CEILING
from exporter.http.listen import ListenAddress, ListenParser
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.options import Choice, Count, Names, Option, Refused, Seconds, Switch, Text, declared, option
from exporter.precedence import OptionReading
from exporter.secret_file import read_secret
from exporter.signals import BY_NAME as SIGNALS_BY_NAME
from exporter.signals import Source
from exporter.sources.dsn import PostgresUrl
from exporter.sources.pool_mode import Mode, PoolMode
from exporter.sources.redis_tls import NO_TLS, RedisTls, TlsFileError, load_tls
from exporter.sources.redis_url import RedisUrl, parse_redis_url

DEFAULT_PORT = 9874
# Unused database connections are closed after this many TTLs (when not set).
IDLE_CLOSE_TTLS = 3

FILE = Text(kind="file path")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting of one process. Fields declared with `option(...)` are its options."""

    listen_address: ListenAddress = option(
        ListenParser(),
        "address to serve /metrics on; an empty host listens on every interface, IPv4 and IPv6",
        metavar="HOST:PORT",
        default=f":{DEFAULT_PORT}",
        aliases=("ORPYCAMCP_LISTEN_ADDRESS",),
    )
    database_url: str | None = option(
        PostgresUrl(),
        "PostgreSQL URL, postgresql://user:password@host:port/db (several hosts, sockets, TLS: see docs/connecting.md)",
        metavar="URL",
        aliases=("DATABASE_URL",),
        secret=True,
    )
    database_url_file: str | None = option(
        FILE,
        "file holding the PostgreSQL URL (a mounted secret; whitespace around it ignored); instead of --database-url",
        metavar="FILE",
        aliases=("DATABASE_URL_FILE",),
    )
    redis_url: str | None = option(
        RedisUrl(),
        "Redis URL: one server, Sentinel (redis+sentinel://) or Cluster (redis+cluster://), TLS with rediss...;"
        " enables the streams signal (see docs/connecting.md)",
        metavar="URL",
        aliases=("REDIS_URL",),
        secret=True,
    )
    redis_url_file: str | None = option(
        FILE,
        "file holding the Redis URL (a mounted secret; whitespace around it ignored); instead of --redis-url",
        metavar="FILE",
        aliases=("REDIS_URL_FILE",),
    )
    redis_tls_ca_file: str | None = option(
        FILE,
        "PEM file of the CA that signed the Redis servers' certificates (default: the system's CAs); read at start",
        metavar="FILE",
    )
    redis_tls_cert_file: str | None = option(
        FILE,
        "PEM client certificate, for Redis servers that require one (tls-auth-clients yes); read at start",
        metavar="FILE",
    )
    redis_tls_key_file: str | None = option(
        FILE,
        "PEM private key of the client certificate, unencrypted, when not in the certificate's file",
        metavar="FILE",
    )
    redis_tls_skip_verify: bool = option(
        Switch(),
        "true: accept any Redis server certificate and host name (logged as a warning at start)",
        metavar="BOOL",
        default="false",
    )
    signals: tuple[str, ...] = option(
        Names(),
        "comma-separated signals (declared backlogs included) to enable",
        metavar="LIST",
        default_doc="every signal whose source is configured",
    )
    ttl: float = option(
        Seconds(),
        "seconds a measurement (success or failure) is served from cache",
        metavar="SECONDS",
        default="30",
        aliases=("METRICS_TTL_SECONDS",),
    )
    deadline: float = option(
        Seconds(),
        "seconds one measurement may take; below the TTL",
        metavar="SECONDS",
        default="10",
        aliases=("METRICS_DEADLINE_SECONDS",),
    )
    max_connections: int = option(
        Count(1, 64),
        "PostgreSQL connections at most",
        metavar="N",
        default="2",
    )
    batch_size: int = option(
        Count(1, 5000),
        "tenant schemas read by one statement",
        metavar="N",
        default="250",
    )
    idle_close: float = option(
        Seconds(),
        "close database connections unused this long",
        metavar="SECONDS",
        default_doc=f"{IDLE_CLOSE_TTLS} x --ttl",
        aliases=("ORPYCAMCP_DATABASE_IDLE_CLOSE_SECONDS",),
    )
    max_queries: int = option(
        Count(1, 10_000_000),
        "replace a connection after this many statements, bounding the memory its backend holds",
        metavar="N",
        default="20000",
        aliases=("ORPYCAMCP_DATABASE_MAX_QUERIES",),
    )
    pool_mode: PoolMode = option(
        Mode(),
        "session (direct, or a session pooler: statements prepared once per connection) or transaction"
        " (a transaction pooler such as PgBouncer pool_mode = transaction: nothing outlives a transaction)",
        metavar="MODE",
        default=PoolMode.SESSION.value,
    )
    database_replica_max_staleness: float = option(
        Seconds(),
        "seconds a hot standby read may lag behind its primary before the database signals are unmeasured"
        " (replica_stale)",
        metavar="SECONDS",
        default="60",
    )
    redis_replica_max_staleness: float = option(
        Seconds(),
        "seconds a Redis replica read may have been without word from its master before the streams signal is"
        " unmeasured (replica_stale)",
        metavar="SECONDS",
        default="60",
    )
    backlogs_file: str | None = option(
        FILE,
        "YAML file declaring more backlogs (each a signal of its own) and more streams to measure"
        " (deploy/backlogs.example.yml)",
        metavar="FILE",
        aliases=("ORPYCAMCP_BACKLOGS_FILE",),
    )
    web_config_file: str | None = option(
        FILE,
        "exporter-toolkit web configuration (TLS, basic auth); re-read when its files change and on SIGHUP",
        metavar="FILE",
    )
    http_max_connections: int | None = option(
        Count(16, 1 << 20),
        "HTTP connections held at most; at the cap the longest idle one is closed",
        metavar="N",
        default_doc=f"what the file-descriptor limit allows, at most {DEFAULT_CAP_CEILING}",
    )
    head_timeout: float = option(
        Seconds(),
        "seconds a client has to send a complete request head before it is disconnected",
        metavar="SECONDS",
        default="5",
        aliases=("ORPYCAMCP_WEB_REQUEST_HEAD_TIMEOUT_SECONDS",),
    )
    log_format: str = option(Choice(("text", "json")), "log format", metavar="FORMAT", default="text")
    log_level: str = option(Choice(("debug", "info", "warning", "error")), "log level", metavar="LEVEL", default="info")
    # Derived from the options above by the rules of `load`.
    backlogs: tuple[Backlog, ...] = ()
    redis_tls: RedisTls = NO_TLS
    streams: DeclaredStreams = NO_STREAMS
    web: WebConfig = field(default_factory=WebConfig)

    @property
    def listen_host(self) -> str:
        return self.listen_address.host

    @property
    def listen_port(self) -> int:
        return self.listen_address.port

    def summary(self, where: str) -> str:
        """What these settings serve, as `check-config` and the start-up line say it."""
        users = len(self.web.basic_auth_users)
        auth = f"on ({users} user{'s' if users != 1 else ''})" if users else "off"
        streams = self.streams
        declared = (
            f"; streams declared: {len(streams.consumer_groups)} consumer groups,"
            f" {len(streams.dead_letter_streams)} dead-letter streams"
            if streams
            else ""
        )
        return (
            f"signals {','.join(self.signals)} on {where}, TLS {'on' if self.web.tls else 'off'}, basic auth {auth}"
            + declared
        )


OPTIONS: tuple[Option[Any], ...] = declared(Settings, FLAGS)
OPTIONS_BY_NAME = {item.name: item for item in OPTIONS}


def describe(name: str) -> str:
    return OPTIONS_BY_NAME[name].describe()


def _url_or_file(reading: OptionReading, url_name: str, file_name: str) -> str | None:
    url, path = reading.values[url_name], reading.values[file_name]
    if path is None:
        return url  # type: ignore[no-any-return]
    if url is not None:
        reading.refuse(url_name, f"give it or {describe(file_name)}, not both")
        return None

    def from_file() -> str:
        text = read_secret(path)
        try:
            parsed: str = OPTIONS_BY_NAME[url_name].parse(text, reading.env)
        except Refused as exc:
            raise Refused(f"{path}: {exc.problem}") from None
        return parsed

    return reading.check(file_name, from_file)  # type: ignore[no-any-return]


def _signals(
    reading: OptionReading, configured: Mapping[Source, bool], backlogs: tuple[Backlog, ...], streams: DeclaredStreams
) -> tuple[str, ...]:
    given: tuple[str, ...] | None = reading.values["signals"]
    # Declared backlogs read PostgreSQL, after the built-in signals.
    sources = {name: signal.source for name, signal in SIGNALS_BY_NAME.items()}
    sources.update((backlog.name, Source.POSTGRES) for backlog in backlogs)
    if backlogs and not configured[Source.POSTGRES]:
        reading.refuse("database_url", f"the declared backlogs ({describe('backlogs_file')}) need it")
    if streams and not configured[Source.REDIS]:
        reading.refuse("redis_url", f"the declared streams ({describe('backlogs_file')}) need it")
    if given is None:
        enabled = tuple(name for name, source in sources.items() if configured[source])
        if not enabled:
            reading.refuse("database_url", "no PostgreSQL database or Redis is configured")
        return enabled
    for name in given:
        if name not in sources:
            reading.refuse("signals", f"unknown signal {name!r} (known: {', '.join(sources)})")
        elif not configured[sources[name]]:
            needed = "database_url" if sources[name] is Source.POSTGRES else "redis_url"
            reading.refuse(needed, f"signal {name!r} needs it")
    # Registry order, whatever order they were given in.
    return tuple(name for name in sources if name in given)


def _redis_tls(parsed: Mapping[str, Any]) -> RedisTls:
    """The TLS flags, their files read and parsed now; only with a TLS URL."""
    tls = RedisTls(
        ca_file=parsed["redis_tls_ca_file"],
        cert_file=parsed["redis_tls_cert_file"],
        key_file=parsed["redis_tls_key_file"],
        skip_verify=bool(parsed["redis_tls_skip_verify"]),
    )
    if not tls.given:
        return tls
    files = {"ca_file": "redis_tls_ca_file", "cert_file": "redis_tls_cert_file", "key_file": "redis_tls_key_file"}
    url = parsed["redis_url"]
    if url is None or not parse_redis_url(url).tls:
        flag = next((name for field, name in files.items() if getattr(tls, field)), "redis_tls_skip_verify")
        raise ConfigError(describe(flag), "TLS to Redis needs a rediss:// URL (rediss+sentinel://, rediss+cluster://)")
    try:
        load_tls(tls)
    except TlsFileError as exc:
        raise ConfigError(describe(files[exc.which]), str(exc)) from None
    return tls


def _given(reading: OptionReading, *names: str) -> bool:
    refused = {describe(name) for name in names}
    return any(reading.values[name] is not None for name in names) or any(
        error.setting in refused for error in reading.errors
    )


def load(values: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Settings from CLI values (None where not given), then the environment, then the
    defaults; InvalidSettings lists every invalid setting."""
    reading = OptionReading(OPTIONS_BY_NAME, values, env, OPTIONS_BY_NAME)
    parsed = reading.values
    ttl, deadline = parsed["ttl"], parsed["deadline"]
    if ttl is not None and deadline is not None and deadline >= ttl:
        reading.refuse("deadline", f"must be below the TTL ({deadline:g} >= {ttl:g})")
    if parsed["idle_close"] is None and ttl is not None:
        parsed["idle_close"] = IDLE_CLOSE_TTLS * ttl
    # A URL given but refused counts as configured: not reported a second time as missing.
    given = {
        Source.POSTGRES: _given(reading, "database_url", "database_url_file"),
        Source.REDIS: _given(reading, "redis_url", "redis_url_file"),
    }
    parsed["database_url"] = _url_or_file(reading, "database_url", "database_url_file")
    parsed["redis_url"] = _url_or_file(reading, "redis_url", "redis_url_file")
    # A Redis URL given but refused is reported already: its TLS flags are not judged against it.
    refused_url = given[Source.REDIS] and parsed["redis_url"] is None
    redis_tls = NO_TLS if refused_url else reading.check("redis_tls_ca_file", lambda: _redis_tls(parsed)) or NO_TLS
    path = parsed["backlogs_file"]
    declared = (
        reading.check("backlogs_file", lambda: load_declarations(path, describe("backlogs_file"))) if path else None
    ) or NO_DECLARATIONS
    web_path = parsed["web_config_file"]
    web = reading.check("web_config_file", lambda: load_web_config(web_path)) if web_path else WebConfig()
    parsed["signals"] = _signals(reading, given, declared.backlogs, declared.streams)
    reading.done()
    return Settings(**parsed, backlogs=declared.backlogs, streams=declared.streams, redis_tls=redis_tls, web=web)


def load_some(values: Mapping[str, Any], env: Mapping[str, str], names: Iterable[str]) -> Mapping[str, Any]:
    """Only the named options (e.g. the health check's address and web config), parsed;
    InvalidSettings lists every invalid one."""
    reading = OptionReading(OPTIONS_BY_NAME, values, env, names)
    reading.done()
    return reading.values
