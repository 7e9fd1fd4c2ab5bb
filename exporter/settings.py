"""Settings: every option declared once, as a field of `Settings` (plain frozen
data once loaded).

An option's declaration (exporter.options.option) holds how it is parsed and
bounded (the parsers live beside what they parse), its default, its help and its
environment aliases; its flag is in exporter.options, its name the flag's. The command line
(exporter.arguments), docs/configuration.md and the checks of `serve`,
`check-config`, `diagnose` and `healthcheck` all read these declarations.
The path of a value: exporter.loading.load reads each option (flag, environment,
default), applies the rules that involve several options and returns a
`Settings`; the components get their values in exporter.service, by keyword.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from exporter.audit_runs import AuditRuns
from exporter.cadence import Cadence, PerSignal
from exporter.declarations import Backlog, Declarations
from exporter.declared_streams import NO_STREAMS, DeclaredStreams
from exporter.http.fdlimit import DEFAULT_CAP_CEILING
from exporter.http.listen import ListenAddress, ListenParser
from exporter.http.proxies import Network, TrustedProxies
from exporter.http.webconfig import WebConfig
from exporter.options import Choice, Count, Names, Option, OptionName, Seconds, Switch, Text, declared, option
from exporter.sources.postgres.dsn import PostgresUrl
from exporter.sources.postgres.pool_mode import Mode, PoolMode
from exporter.sources.redis.clients import MAJORITY_OF_CONFIGURED, SENTINEL_MAJORITIES
from exporter.sources.redis.tls import NO_TLS, RedisTls
from exporter.sources.redis.url import RedisUrl
from exporter.tenant_list import DEFAULT_TENANTS, TenantList

DEFAULT_PORT = 9874
# Unused database connections are closed after this many TTLs (when not set).
IDLE_CLOSE_TTLS = 3

FILE = Text(kind="file path")


@dataclass(frozen=True, kw_only=True)
class Settings:
    """Every setting of one process. Fields declared with `option(...)` are its options."""

    web_listen_address: ListenAddress = option(
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
        "file holding the PostgreSQL URL (a mounted secret; whitespace around it ignored); instead of --database.url",
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
        "file holding the Redis URL (a mounted secret; whitespace around it ignored); instead of --redis.url",
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
    redis_tls_insecure_skip_verify: bool = option(
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
    signals_ttl: tuple[tuple[str, float], ...] | None = option(
        PerSignal(),
        "a TTL of its own per signal, NAME=DURATION comma-separated (dlq=60,audit_chain=5m); a declaration sets its"
        " own with `ttl:`",
        metavar="LIST",
        default_doc="--ttl",
    )
    signals_deadline: tuple[tuple[str, float], ...] | None = option(
        PerSignal(),
        "a deadline of its own per signal, NAME=DURATION comma-separated, each below the signal's TTL; a declaration"
        " sets its own with `deadline:`",
        metavar="LIST",
        default_doc="--deadline",
    )
    database_max_connections: int = option(
        Count(1, 64),
        "PostgreSQL connections at most",
        metavar="N",
        default="2",
    )
    database_batch_size: int = option(
        Count(1, 5000),
        "tenant schemas read by one statement",
        metavar="N",
        default="250",
    )
    database_idle_close: float = option(
        Seconds(),
        "close database connections unused this long",
        metavar="SECONDS",
        default_doc=f"{IDLE_CLOSE_TTLS} x --ttl",
        aliases=("ORPYCAMCP_DATABASE_IDLE_CLOSE_SECONDS",),
    )
    database_max_queries_per_connection: int = option(
        Count(1, 10_000_000),
        "replace a connection after this many statements, bounding the memory its backend holds",
        metavar="N",
        default="20000",
        aliases=("ORPYCAMCP_DATABASE_MAX_QUERIES",),
    )
    database_pool_mode: PoolMode = option(
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
    redis_sentinel_majority: str = option(
        Choice(SENTINEL_MAJORITIES),
        "behind sentinels, trust a master named by a strict majority of the sentinels in the URL (configured), or"
        " of those that answer (answering: a lone sentinel that answers decides; docs/connecting.md)",
        metavar="OF",
        default=MAJORITY_OF_CONFIGURED,
    )
    backlogs_config_file: str | None = option(
        FILE,
        "YAML file declaring more backlogs (each a signal of its own) and more streams to measure"
        " (deploy/backlogs.example.yml)",
        metavar="FILE",
        aliases=("ORPYCAMCP_BACKLOGS_FILE",),
    )
    web_config_file: str | None = option(
        FILE,
        "exporter-toolkit web configuration (TLS, basic auth, headers, rate limit); re-read when its files change"
        " and on SIGHUP",
        metavar="FILE",
    )
    web_max_connections: int | None = option(
        Count(16, 1 << 20),
        "HTTP connections held at most; at the cap the longest idle one of the new one's client is closed, else the"
        " longest idle of all",
        metavar="N",
        default_doc=f"what the file-descriptor limit allows, at most {DEFAULT_CAP_CEILING}",
    )
    web_request_head_timeout: float = option(
        Seconds(),
        "seconds a client has to send a complete request head before it is disconnected",
        metavar="SECONDS",
        default="5",
        aliases=("ORPYCAMCP_WEB_REQUEST_HEAD_TIMEOUT_SECONDS",),
    )
    web_trusted_proxies: tuple[Network, ...] | None = option(
        TrustedProxies(),
        "comma-separated addresses or CIDR networks of reverse proxies (a kube-rbac-proxy or oauth2 sidecar)"
        " whose requests with X-Forwarded-For, Forwarded or X-Real-IP are answered; any other forwarded request"
        " is answered 404",
        metavar="CIDRS",
        default_doc="none: every forwarded request is refused",
    )
    log_format: str = option(Choice(("text", "json")), "log format", metavar="FORMAT", default="text")
    log_level: str = option(Choice(("debug", "info", "warning", "error")), "log level", metavar="LEVEL", default="info")
    # Derived from the options above when loaded (exporter.loading).
    backlogs: tuple[Backlog, ...] = ()
    redis_tls: RedisTls = NO_TLS
    streams: DeclaredStreams = NO_STREAMS
    tenants: TenantList = DEFAULT_TENANTS
    tables: tuple[Backlog, ...] = ()  # the built-in table signals' declarations replaced (signals.dlq, ...)
    audit: AuditRuns | None = None  # audit_chain's runs replaced (signals.audit_chain)
    bus: DeclaredStreams | None = None  # the streams signal's own pairs replaced (signals.streams)
    web: WebConfig = field(default_factory=WebConfig)
    # Each enabled signal's own TTL and deadline where it differs from --ttl and --deadline.
    cadences: tuple[tuple[str, Cadence], ...] = ()

    @property
    def declarations(self) -> Declarations:
        """What the declarations file declares and replaces."""
        return Declarations(self.backlogs, self.streams, self.tenants, self.tables, self.audit, self.bus)

    def cadence(self, signal: str) -> Cadence:
        """The TTL and deadline of `signal`: its own, else the global ones."""
        return dict(self.cadences).get(signal, Cadence(self.ttl, self.deadline))

    def summary(self, where: str) -> str:
        """What these settings serve, as `check-config` and the start-up line say it."""
        users = len(self.web.basic_auth_users)
        auth = f"on ({counted(users, 'user')})" if users else "off"
        streams = self.streams
        declared = (
            f"; streams declared: {counted(len(streams.consumer_groups), 'consumer group')},"
            f" {counted(len(streams.dead_letter_streams), 'dead-letter stream')}"
            + (f", {counted(len(streams.signals), 'stream signal')} apart" if streams.signals else "")
            if streams
            else ""
        )
        proxies = (
            f", forwarded requests answered from {','.join(map(str, self.web_trusted_proxies))}"
            if self.web_trusted_proxies
            else ""
        )
        tenants = f"; tenants measured: {self.tenants.describe()}" if self.tenants != DEFAULT_TENANTS else ""
        replaced = self.declarations.replaced
        tables = f"; built-in declarations replaced: {', '.join(replaced)}" if replaced else ""
        cadences = "".join(
            f"; {name} every {cadence.ttl:g}s (deadline {cadence.deadline:g}s)" for name, cadence in self.cadences
        )
        return (
            f"signals {','.join(self.signals)} on {where}, TLS {'on' if self.web.tls else 'off'}, basic auth {auth}"
            + proxies
            + declared
            + tenants
            + tables
            + cadences
        )


OPTIONS: tuple[Option[Any], ...] = declared(Settings)
OPTIONS_BY_NAME = {item.name: item for item in OPTIONS}


def describe(name: OptionName) -> str:
    """The option `name` as errors name it: its flag and environment variable."""
    return OPTIONS_BY_NAME[name].describe()


def counted(number: int, thing: str) -> str:
    """`number` things, in the singular for one."""
    return f"{number} {thing}{'' if number == 1 else 's'}"
