"""The Redis URL, parsed and validated completely at start.

Three deployment kinds, each plain or over TLS:

- standalone: `redis://[user:password@]host[:port][/DB]`, `rediss://...`, or
  `unix://[user:password@]/path/to/socket[?db=DB]`;
- Sentinel: `redis+sentinel://[user:password@]host[:port][,host[:port]...]/SERVICE[/DB]`
  (`rediss+sentinel://`), the hosts being the sentinels (port 26379 by default)
  and the credentials the master's; sentinels that want credentials of their
  own get them as `?sentinel_username=...&sentinel_password=...`;
- Cluster: `redis+cluster://[user:password@]host[:port][,host[:port]...]`
  (`rediss+cluster://`), the hosts being startup nodes.

Everything else is refused here, so that `check-config` and `serve` refuse the
same URLs: timeouts come from --deadline, TLS from the --redis.tls-* flags.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from enum import StrEnum

from exporter.hostnames import host_problem
from exporter.options import Refused, flag_of
from exporter.sources import url_secrets
from exporter.sources.redis.errors import InvalidRedisUrl

REDIS_PORT = 6379
SENTINEL_PORT = 26379
DEFAULT_SETTING = flag_of("redis_url")


class RedisKind(StrEnum):
    STANDALONE = "standalone"
    SENTINEL = "sentinel"
    CLUSTER = "cluster"


# scheme -> (kind, TLS)
SCHEMES: dict[str, tuple[RedisKind, bool]] = {
    "redis": (RedisKind.STANDALONE, False),
    "rediss": (RedisKind.STANDALONE, True),
    "unix": (RedisKind.STANDALONE, False),
    "redis+sentinel": (RedisKind.SENTINEL, False),
    "rediss+sentinel": (RedisKind.SENTINEL, True),
    "redis+cluster": (RedisKind.CLUSTER, False),
    "rediss+cluster": (RedisKind.CLUSTER, True),
}

# Parameters other clients take, refused with what to use instead.
_TIMEOUT_PARAMETERS = frozenset(
    {
        "timeout",
        "socket_timeout",
        "socket_connect_timeout",
        "retry_on_timeout",
        "retry_on_error",
        "health_check_interval",
    }
)
_CREDENTIAL_PARAMETERS = frozenset({"username", "password"})
_SENTINEL_PARAMETERS = ("sentinel_username", "sentinel_password")
_IPV6_NODE = re.compile(r"\[([0-9A-Fa-f:.%a-zA-Z]+)\](?::(.*))?")


@dataclass(frozen=True)
class RedisTarget:
    """What a Redis URL asks for, as the exporter connects to it."""

    kind: RedisKind
    tls: bool
    # standalone: the server; Sentinel: the sentinels; Cluster: the startup nodes. Empty for a unix socket.
    nodes: tuple[tuple[str, int], ...]
    socket_path: str | None = None
    username: str | None = None
    password: str | None = field(default=None, repr=False)
    db: int = 0
    service_name: str | None = None  # Sentinel: the monitored master's name
    sentinel_username: str | None = None
    sentinel_password: str | None = field(default=None, repr=False)

    def describe(self) -> str:
        """The deployment in words, without credentials: for diagnose and the logs."""
        nodes = ",".join(_show_node(host, port) for host, port in self.nodes) or f"socket {self.socket_path}"
        tls = " over TLS" if self.tls else ""
        if self.kind is RedisKind.SENTINEL:
            return f"the master of service {self.service_name!r} named by sentinels {nodes}{tls}, database {self.db}"
        if self.kind is RedisKind.CLUSTER:
            return f"the Redis Cluster of startup nodes {nodes}{tls}"
        return f"standalone {nodes}{tls}, database {self.db}"


def _show_node(host: str, port: int) -> str:
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


class _Refusal(Exception):
    """A problem found while parsing; parse_redis_url turns it into InvalidRedisUrl."""

    def __init__(self, problem: str, parameter: str | None = None) -> None:
        self.problem = problem
        self.parameter = parameter
        super().__init__(problem)


def parse_redis_url(url: str, setting: str = DEFAULT_SETTING) -> RedisTarget:
    """The target of `url`, or InvalidRedisUrl naming what is wrong (never the password)."""
    try:
        return _parse(url)
    except _Refusal as refusal:
        raise InvalidRedisUrl(setting, shown(url), refusal.problem, refusal.parameter) from None


def shown(url: str) -> str:
    """The URL for messages: rebuilt from the parts that parsed (url_secrets.mask_url)."""
    return url_secrets.mask_url(url)


def _parse(url: str) -> RedisTarget:
    scheme, sep, _rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        raise _Refusal(f"the scheme must be one of {', '.join(f'{s}://' for s in SCHEMES)}")
    kind, tls = SCHEMES[scheme.lower()]
    if url_secrets.ambiguous_authority(url):
        raise _Refusal(url_secrets.ENCODE)
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        # The parser's own words may quote part of the password: not repeated.
        raise _Refusal(f"not a valid URL: {url_secrets.UNPARSED}") from None
    if parts.fragment:
        raise _Refusal("a Redis URL has no #fragment (an unencoded '#' in the password must be %23)")
    userinfo, at, hostlist = parts.netloc.rpartition("@")
    username, password = _credentials(userinfo) if at else (None, None)
    query = _query(parts.query)
    # Nothing may follow a password in a Redis query: a ?db= there could be the
    # password's tail, and the database is shown in messages and logs.
    unreadable = url_secrets.ambiguity(url, frozenset())
    if unreadable is not None:
        raise _Refusal(unreadable)
    _check_parameters(query, kind)
    sentinel_username = query.get("sentinel_username")
    sentinel_password = query.get("sentinel_password")
    query_db = _db(query["db"], "?db=") if "db" in query else None

    if scheme.lower() == "unix":
        if hostlist:
            raise _Refusal("unix:// takes a socket path and no host: unix:///path/to/redis.sock")
        if not parts.path or parts.path == "/":
            raise _Refusal("unix:// needs the socket's path: unix:///path/to/redis.sock")
        return RedisTarget(
            kind=kind,
            tls=tls,
            nodes=(),
            socket_path=urllib.parse.unquote(parts.path),
            username=username,
            password=password,
            db=query_db or 0,
        )

    nodes = _nodes(hostlist, SENTINEL_PORT if kind is RedisKind.SENTINEL else REDIS_PORT)
    target = RedisTarget(kind=kind, tls=tls, nodes=nodes, username=username, password=password)
    segments = [urllib.parse.unquote(segment) for segment in parts.path.split("/")[1:]]
    if segments and segments[-1] == "":
        segments.pop()  # a trailing slash
    if kind is RedisKind.STANDALONE:
        if len(nodes) > 1:
            raise _Refusal(
                f"{scheme}:// names one server; for several hosts use redis+sentinel:// (the sentinels)"
                " or redis+cluster:// (the cluster's nodes)"
            )
        if len(segments) > 1:
            raise _Refusal("the path must be /DB, a database number")
        path_db = _db(segments[0], "the path") if segments else None
        return replace(target, db=_one_db(path_db, query_db))
    if kind is RedisKind.SENTINEL:
        if not segments or not segments[0]:
            raise _Refusal("the path must name the service the sentinels monitor: /SERVICE_NAME[/DB]")
        if len(segments) > 2:
            raise _Refusal("the path must be /SERVICE_NAME[/DB]")
        path_db = _db(segments[1], "the database after the service name") if len(segments) == 2 else None
        return replace(
            target,
            db=_one_db(path_db, query_db),
            service_name=segments[0],
            sentinel_username=sentinel_username,
            sentinel_password=sentinel_password,
        )
    if segments not in ([], ["0"]) or (query_db not in (None, 0)):
        raise _Refusal("a Redis Cluster has database 0 only: no path (or /0)")
    return target


def _credentials(userinfo: str) -> tuple[str | None, str | None]:
    user, colon, password = userinfo.partition(":")
    return (urllib.parse.unquote(user) or None, urllib.parse.unquote(password) if colon else None)


def _query(query: str) -> dict[str, str]:
    if not query:
        return {}
    pairs: dict[str, str] = {}
    for raw in query.split("&"):
        key, sep, value = raw.partition("=")
        name = urllib.parse.unquote_plus(key)
        if not sep or not name:
            raise _Refusal("the query string is not a list of key=value pairs joined by '&'")
        if name in pairs:
            raise _Refusal(f"parameter {_named(name)} is given twice", name)
        pairs[name] = urllib.parse.unquote_plus(value)
    return pairs


def _check_parameters(query: dict[str, str], kind: RedisKind) -> None:
    """Every parameter known, or refused by name (the value is never shown: it may be a secret)."""
    known = ["db", *(_SENTINEL_PARAMETERS if kind is RedisKind.SENTINEL else ())]
    for name in query:
        if name in known:
            continue
        if name in _SENTINEL_PARAMETERS:
            raise _Refusal(f"parameter {_named(name)} is for redis+sentinel:// URLs only", name)
        if name.startswith("ssl"):
            raise _Refusal(
                f"parameter {_named(name)}: TLS is set with --redis.tls-ca-file, --redis.tls-cert-file,"
                " --redis.tls-key-file and --redis.tls-insecure-skip-verify, and a rediss:// URL",
                name,
            )
        if name in _TIMEOUT_PARAMETERS:
            raise _Refusal(
                f"parameter {_named(name)}: the exporter's timeouts come from --deadline, and it never retries", name
            )
        if name in _CREDENTIAL_PARAMETERS:
            raise _Refusal(f"parameter {_named(name)}: give the credentials as redis://user:password@host", name)
        raise _Refusal(f"unknown parameter {_named(name)} (known here: {', '.join(known)})", name)


_PLAIN_NAME = re.compile(r"[A-Za-z0-9_]{1,40}")


def _named(name: str) -> str:
    """A parameter's name for a message: a plain name quoted, anything else described."""
    return repr(name) if _PLAIN_NAME.fullmatch(name) else "(a name that is not a plain word)"


def _db(text: str, where: str) -> int:
    if not text.isascii() or not text.isdigit():
        raise _Refusal(f"{where} must be a database number", "db")
    return int(text)


def _one_db(path_db: int | None, query_db: int | None) -> int:
    if path_db is not None and query_db is not None and path_db != query_db:
        raise _Refusal(f"the path names database {path_db} and ?db= names {query_db}", "db")
    return path_db if path_db is not None else (query_db or 0)


def _nodes(hostlist: str, default_port: int) -> tuple[tuple[str, int], ...]:
    if not hostlist:
        raise _Refusal("the URL names no host")
    nodes = []
    for index, spec in enumerate(hostlist.split(","), start=1):
        where = f"host {index}"
        if not spec:
            raise _Refusal(f"{where} is empty")
        if spec.startswith("["):
            match = _IPV6_NODE.fullmatch(spec)
            if match is None:
                raise _Refusal(f"{where}: not a bracketed IPv6 address ([addr] or [addr]:port)")
            host, port_text = match.group(1), match.group(2)
        else:
            host, colon, port_text_or_empty = spec.partition(":")
            port_text = port_text_or_empty if colon else None
            if not host:
                raise _Refusal(f"{where} has a port but no name")
        name = urllib.parse.unquote(host)
        problem = host_problem(name)
        if problem is not None:
            raise _Refusal(f"{where}: {problem}")
        nodes.append((name, _port(port_text, where) if port_text is not None else default_port))
    return tuple(nodes)


def _port(text: str, where: str) -> int:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        # The text is not repeated: a password with an unencoded '/', '?' or '#' lands here.
        raise _Refusal(
            f"{where}: the port is not a number from 1 to 65535"
            " (a password with '/', '?', '#' or '@' must be percent-encoded)"
        )
    return int(text)


@dataclass(frozen=True)
class RedisUrl:
    """A Redis URL the exporter can use, every part known (exporter.sources.redis.url)."""

    kind: str = "redis://, rediss://, unix://, redis+sentinel:// or redis+cluster:// URL (rediss+... for TLS)"

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        if url_secrets.ambiguous_authority(raw):
            raise Refused(f"{url_secrets.mask_url(raw)} is not a valid URL: {url_secrets.ENCODE}")
        unreadable = url_secrets.ambiguity(raw, frozenset())
        if unreadable is not None:
            raise Refused(f"{url_secrets.mask_url(raw)} is not a valid URL: {unreadable}")
        try:
            parse_redis_url(raw)
        except InvalidRedisUrl as exc:
            raise Refused(exc.problem) from None
        return raw
