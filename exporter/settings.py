"""Settings: every option declared once, as a field of `Settings`, then read,
validated (every invalid setting reported at once) and handed to the components.

An option's declaration (exporter.options.option) holds its flag, how it is
parsed and bounded, its default, its help, its environment aliases and the
component settings it feeds. The command line (exporter.arguments), the
component settings (exporter.service), docs/configuration.md and the checks of
`serve`, `check-config`, `diagnose` and `healthcheck` all read these
declarations; the rules below are what involves several options at once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, NamedTuple, TypeVar

from exporter.backlogs import NO_DECLARATIONS, Backlog, load_declarations
from exporter.declared_streams import NO_STREAMS, DeclaredStreams
from exporter.errors import ConfigError, InvalidRedisUrl, InvalidSettings
from exporter.flags import FLAGS
from exporter.http.fdlimit import DEFAULT_CAP_CEILING
from exporter.http.listen import resolve
from exporter.http.webconfig import WebConfig, load_web_config
from exporter.options import Choice, Count, Option, Refused, Seconds, Text, declared, feeding, option
from exporter.signals import BY_NAME as SIGNALS_BY_NAME
from exporter.signals import Source
from exporter.sources import dsn, url_secrets
from exporter.sources.postgres import PoolMode
from exporter.sources.redis_tls import NO_TLS, RedisTls, TlsFileError, load_tls
from exporter.sources.redis_url import KNOWN_PARAMETERS, parse_redis_url

DEFAULT_PORT = 9874
# Unused database connections are closed after this many TTLs (when not set).
IDLE_CLOSE_TTLS = 3
UNENCODED = url_secrets.ENCODE

C = TypeVar("C")
FILE = Text(kind="file path")


class ListenAddress(NamedTuple):
    host: str  # "" listens on every interface, IPv4 and IPv6
    port: int


@dataclass(frozen=True)
class ListenParser:
    kind: str = "HOST:PORT, one address"

    def __call__(self, raw: str, env: Mapping[str, str]) -> ListenAddress:
        if "," in raw or any(char.isspace() for char in raw):
            raise Refused(f"{raw!r}: give one HOST:PORT")
        host, sep, port = raw.rpartition(":")
        if not sep:
            raise Refused(f"{raw!r} is not HOST:PORT")
        if host.startswith("[") and host.endswith("]"):
            host = host[1:-1]
        try:
            number = int(port)
        except ValueError:
            raise Refused(f"port {port!r} is not a number") from None
        if not 0 <= number <= 65535:
            raise Refused(f"port {number} is out of range")
        resolve(host, number)  # what serve binds, resolved the same way
        return ListenAddress(host, number)


@dataclass(frozen=True)
class PostgresUrl:
    """A PostgreSQL URL if asyncpg would accept it (several hosts, sockets, TLS files...)."""

    kind: str = "postgresql:// URL"

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        try:
            dsn.parse(raw, env)
        except dsn.InvalidDatabaseUrl as exc:
            raise Refused(f"{redact_url(raw)}: {exc.problem}") from None
        return raw


@dataclass(frozen=True)
class RedisUrl:
    """A Redis URL the exporter can use, every part known (exporter.sources.redis_url)."""

    kind: str = "redis://, rediss://, unix://, redis+sentinel:// or redis+cluster:// URL (rediss+... for TLS)"

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        if ambiguous_authority(raw):
            raise Refused(f"{redact_url(raw)} is not a valid URL: {UNENCODED}")
        unreadable = url_secrets.ambiguity(raw, KNOWN_PARAMETERS)
        if unreadable is not None:
            raise Refused(f"{redact_url(raw)} is not a valid URL: {unreadable}")
        try:
            parse_redis_url(raw)
        except InvalidRedisUrl as exc:
            raise Refused(exc.problem) from None
        return raw


@dataclass(frozen=True)
class Switch:
    kind: str = "true or false"

    def __call__(self, raw: str, env: Mapping[str, str]) -> bool:
        return Choice(("true", "false", "1", "0", "yes", "no"))(raw, env) in ("true", "1", "yes")


@dataclass(frozen=True)
class Names:
    kind: str = "comma-separated names"

    def __call__(self, raw: str, env: Mapping[str, str]) -> tuple[str, ...]:
        names = tuple(name.strip() for name in raw.split(",") if name.strip())
        if not names:
            raise Refused("names no signal")
        return names


@dataclass(frozen=True)
class Mode:
    kind: str = " or ".join(mode.value for mode in PoolMode)

    def __call__(self, raw: str, env: Mapping[str, str]) -> PoolMode:
        return PoolMode(Choice(tuple(mode.value for mode in PoolMode))(raw, env))


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
        feeds=("PostgresSettings.url",),
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
        feeds=("RedisSettings.url",),
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
        feeds=("SignalCache.ttl",),
    )
    deadline: float = option(
        Seconds(),
        "seconds one measurement may take; below the TTL",
        metavar="SECONDS",
        default="10",
        aliases=("METRICS_DEADLINE_SECONDS",),
        feeds=("Timeouts.deadline",),
    )
    max_connections: int = option(
        Count(1, 64),
        "PostgreSQL connections at most",
        metavar="N",
        default="2",
        feeds=("PostgresSettings.max_connections",),
    )
    batch_size: int = option(
        Count(1, 5000),
        "tenant schemas read by one statement",
        metavar="N",
        default="250",
        feeds=("PostgresSettings.batch_size",),
    )
    idle_close: float = option(
        Seconds(),
        "close database connections unused this long",
        metavar="SECONDS",
        default_doc=f"{IDLE_CLOSE_TTLS} x --ttl",
        aliases=("ORPYCAMCP_DATABASE_IDLE_CLOSE_SECONDS",),
        feeds=("PostgresSettings.idle_close_seconds",),
    )
    max_queries: int = option(
        Count(1, 10_000_000),
        "replace a connection after this many statements, bounding the memory its backend holds",
        metavar="N",
        default="20000",
        aliases=("ORPYCAMCP_DATABASE_MAX_QUERIES",),
        feeds=("PostgresSettings.max_queries_per_connection",),
    )
    pool_mode: PoolMode = option(
        Mode(),
        "session (direct, or a session pooler: statements prepared once per connection) or transaction"
        " (a transaction pooler such as PgBouncer pool_mode = transaction: nothing outlives a transaction)",
        metavar="MODE",
        default=PoolMode.SESSION.value,
        feeds=("PostgresSettings.pool_mode",),
    )
    database_replica_max_staleness: float = option(
        Seconds(),
        "seconds a hot standby read may lag behind its primary before the database signals are unmeasured"
        " (replica_stale)",
        metavar="SECONDS",
        default="60",
        feeds=("PostgresSettings.replica_max_staleness",),
    )
    redis_replica_max_staleness: float = option(
        Seconds(),
        "seconds a Redis replica read may have been without word from its master before the streams signal is"
        " unmeasured (replica_stale)",
        metavar="SECONDS",
        default="60",
        feeds=("RedisSettings.replica_max_staleness",),
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
        feeds=("bounded_protocol.head_timeout",),
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

    def feeding(self, component: type[C], **rest: Any) -> C:
        """`component` built from the options that feed it, and `rest`."""
        return component(**feeding(OPTIONS, self, component), **rest)


OPTIONS: tuple[Option[Any], ...] = declared(Settings, FLAGS)
OPTIONS_BY_NAME = {item.name: item for item in OPTIONS}


def describe(name: str) -> str:
    return OPTIONS_BY_NAME[name].describe()


def redact_url(url: str) -> str:
    """The URL with any password replaced, for messages and logs (see dsn.redact)."""
    return dsn.redact(url)


def ambiguous_authority(url: str) -> bool:
    """True when the user or password holds an unencoded reserved character (see dsn.ambiguous_authority)."""
    return dsn.ambiguous_authority(url)


class _Reading:
    """The options' texts (flag, then environment, then default), parsed; every refusal kept."""

    def __init__(self, values: Mapping[str, Any], env: Mapping[str, str], names: Iterable[str]) -> None:
        self.env = env
        self.errors: list[ConfigError] = []
        self.values: dict[str, Any] = {}
        for name in names:
            self.values[name] = self._parse(OPTIONS_BY_NAME[name], values.get(name))

    def refuse(self, name: str, problem: str) -> None:
        self.errors.append(ConfigError(describe(name), problem))

    def _text(self, item: Option[Any], given: Any) -> str | None:
        if isinstance(given, list | tuple):
            if len(given) > 1:
                # The values are not repeated: one of them may be a URL with its password.
                self.refuse(item.name, f"given {len(given)} times: give it once")
                return None
            given = given[0] if given else None
        if given is not None:
            return str(given)
        present = [name for name in item.envs if name in self.env]
        # An empty variable (a template left blank) does not disagree with a set one.
        found = {name: self.env[name] for name in present if self.env[name] != ""}
        if len(set(found.values())) > 1:
            self.refuse(item.name, f"{' and '.join(found)} disagree: set one of them")
            return None
        if found:
            return next(iter(found.values()))
        return "" if present else item.default

    def _parse(self, item: Option[Any], given: Any) -> Any:
        text = self._text(item, given)
        # Given empty: unset, unless the option has a default (then it is refused as it stands).
        if text is None or (text == "" and item.default is None):
            return None
        try:
            return item.parse(text, self.env)
        except Refused as exc:
            self.refuse(item.name, exc.problem)
        except ConfigError as exc:
            self.errors.append(exc)
        return None

    def check(self, name: str, check: Callable[[], Any]) -> Any:
        """check(), a ConfigError or Refused kept as a refusal of option `name`."""
        try:
            return check()
        except Refused as exc:
            self.refuse(name, exc.problem)
        except ConfigError as exc:
            self.errors.append(exc)
        return None

    def done(self) -> None:
        if self.errors:
            raise InvalidSettings(tuple(self.errors))


def read_secret(path: str) -> str:
    """A one-line value from a file, as container platforms hand out secrets:
    whitespace around it (a final newline) ignored. Refusals name the file, never its content."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    except UnicodeDecodeError:
        raise Refused(f"{path} is not UTF-8 text") from None
    value = content.strip()
    if not value:
        raise Refused(f"{path} is empty")
    if "\n" in value:
        raise Refused(f"{path} holds more than one line")
    if any(char.isspace() for char in value):
        raise Refused(f"{path}: the URL holds whitespace (spaces inside a URL are written %20)")
    return value


def _url_or_file(reading: _Reading, url_name: str, file_name: str) -> str | None:
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
    reading: _Reading, configured: Mapping[Source, bool], backlogs: tuple[Backlog, ...], streams: DeclaredStreams
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


def _given(reading: _Reading, *names: str) -> bool:
    refused = {describe(name) for name in names}
    return any(reading.values[name] is not None for name in names) or any(
        error.setting in refused for error in reading.errors
    )


def load(values: Mapping[str, Any], env: Mapping[str, str]) -> Settings:
    """Settings from CLI values (None where not given), then the environment, then the
    defaults; InvalidSettings lists every invalid setting."""
    reading = _Reading(values, env, OPTIONS_BY_NAME)
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
    reading = _Reading(values, env, names)
    reading.done()
    return reading.values
