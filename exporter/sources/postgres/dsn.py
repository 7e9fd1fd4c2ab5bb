"""PostgreSQL URLs: every form asyncpg and libpq accept, checked once at start.

asyncpg's own parser decides what is accepted, so the exporter accepts exactly
what its driver does: several hosts (`h1:p1,h2:p2`, or `?host=h1,h2&port=p1,p2`),
unix-socket directories, `sslmode` up to `verify-full` with its files,
`passfile`, `target_session_attrs`, `PGPASSWORD`/`PGPASSFILE` and the other
libpq environment variables. This module adds what asyncpg leaves to the
server or ignores: libpq's `connect_timeout` (per host), the libpq parameters
asyncpg would forward as startup parameters every server refuses, and
messages that never carry the password (they name a host by its position,
never by text that a mis-encoded password could have leaked into).
"""

from __future__ import annotations

import inspect
import os
import re
import ssl
import stat
import urllib.parse
import warnings
from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from asyncpg import connect_utils
from asyncpg import exceptions as pg_exceptions

from exporter.hostnames import host_problem
from exporter.options import Refused
from exporter.sources import url_secrets

SCHEMES = ("postgresql", "postgres")
# libpq: a connect_timeout below 2 s is taken as 2 s.
MIN_CONNECT_TIMEOUT_SECONDS = 2.0
# Parameters the exporter handles itself: asyncpg would send them to the server.
OWN_PARAMETERS = frozenset({"connect_timeout", "target_session_attrs"})
# libpq parameters asyncpg knows nothing of: it would send each as a startup
# parameter, and the server would refuse every connection.
UNSUPPORTED_PARAMETERS = frozenset(
    {
        "hostaddr",
        "fallback_application_name",
        "keepalives",
        "keepalives_idle",
        "keepalives_interval",
        "keepalives_count",
        "tcp_user_timeout",
        "replication",
        "gssencmode",
        "gssdelegation",
        "requiressl",
        "sslcompression",
        "sslcertmode",
        "sslcrldir",
        "sslsni",
        "requirepeer",
        "channel_binding",
        "load_balance_hosts",
        "require_auth",
    }
)
FILE_PARAMETERS = ("passfile", "sslrootcert", "sslcert", "sslkey", "sslcrl")
# The query parameters asyncpg reads itself, and the exporter's own: any other
# becomes a server setting, so only these may follow a password in the query.
DRIVER_PARAMETERS = frozenset(
    {
        "service",
        "port",
        "host",
        "dbname",
        "database",
        "user",
        "password",
        "passfile",
        "sslmode",
        "sslcert",
        "sslkey",
        "sslrootcert",
        "sslnegotiation",
        "sslcrl",
        "sslpassword",
        "ssl_min_protocol_version",
        "ssl_max_protocol_version",
        "krbsrvname",
        "gsslib",
        "application_name",
        "options",
    }
    | OWN_PARAMETERS
)
_IPV6_HOST = re.compile(r"\[[^\]]+\](?::(.*))?")


class SessionAttrs(StrEnum):
    """libpq's target_session_attrs."""

    ANY = "any"
    PRIMARY = "primary"
    STANDBY = "standby"
    PREFER_STANDBY = "prefer-standby"
    READ_WRITE = "read-write"
    READ_ONLY = "read-only"


class InvalidDatabaseUrl(ValueError):
    """A PostgreSQL URL the driver would refuse; the message never holds the password."""

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(problem)


@dataclass(frozen=True)
class Host:
    """One host of the URL: a TCP address, or a unix socket path."""

    address: str  # host name, IP address, or the socket's path (…/.s.PGSQL.<port>)
    port: int

    @property
    def is_socket(self) -> bool:
        return self.address.startswith("/")

    def __str__(self) -> str:
        if self.is_socket:
            return f"socket {self.address}"
        if ":" in self.address:
            return f"[{self.address}]:{self.port}"
        return f"{self.address}:{self.port}"


@dataclass(frozen=True)
class DatabaseTarget:
    """What a URL asks for, as the exporter connects to it."""

    url: str  # what asyncpg is given: the exporter's own parameters removed
    hosts: tuple[Host, ...]
    target_session_attrs: SessionAttrs
    connect_timeout: float | None  # per host, as libpq; None: only the exporter's own limit
    application_name: str | None
    user: str = ""
    database: str = ""


def _query_pairs(query: str) -> list[tuple[str, str, str]]:
    """(raw pair, key, value) of a query string, as asyncpg reads it (strictly)."""
    pairs = []
    for raw in query.split("&"):
        key, sep, value = raw.partition("=")
        if not sep or not key:
            raise InvalidDatabaseUrl("the query string is not a list of key=value pairs joined by '&'")
        pairs.append((raw, urllib.parse.unquote_plus(key), urllib.parse.unquote_plus(value)))
    return pairs


def _authority(netloc: str) -> str:
    """The host list of the netloc; refuses what would split the password into it."""
    if netloc.count("@") > 1:
        raise InvalidDatabaseUrl("more than one '@' before the host: percent-encode '@' in the user or password (%40)")
    return netloc.partition("@")[2] if "@" in netloc else netloc


def _check_port(text: str, where: str) -> None:
    if not text.isascii() or not text.isdigit() or not 1 <= int(text) <= 65535:
        # The text is not repeated: a password holding an unencoded '/', '?' or
        # '#' ends the netloc early and lands here.
        raise InvalidDatabaseUrl(
            f"{where}: the port is not a number from 1 to 65535"
            " (a password with '/', '?', '#' or '@' must be percent-encoded)"
        )


def _check_hostlist(hostlist: str, where: str) -> None:
    """What asyncpg's host-list parser would crash on or leave to the socket layer."""
    for index, spec in enumerate(hostlist.split(","), start=1):
        here = f"{where} {index}"
        if not spec:
            raise InvalidDatabaseUrl(f"{here} is empty")
        if spec.startswith("/"):
            continue
        if spec.startswith("["):
            match = _IPV6_HOST.fullmatch(spec)
            if match is None:
                raise InvalidDatabaseUrl(f"{here}: not a bracketed IPv6 address ([addr] or [addr]:port)")
            if match.group(1) is not None:
                _check_port(match.group(1), here)
            continue
        _name, sep, port = spec.partition(":")
        if sep:
            _check_port(urllib.parse.unquote(port), here)


def _check_names(hosts: tuple[Host, ...]) -> None:
    """Every TCP host (from the URL, ?host= or PGHOST) a name the resolver takes: named by position."""
    for index, host in enumerate(hosts, start=1):
        problem = None if host.is_socket else host_problem(host.address)
        if problem is not None:
            raise InvalidDatabaseUrl(f"host {index}: {problem}")


def _connect_timeout(raw: str) -> float | None:
    """libpq: a whole number of seconds; zero or negative waits indefinitely; below 2 means 2."""
    try:
        seconds = int(raw.strip())
    except ValueError:
        raise InvalidDatabaseUrl("connect_timeout is not a whole number of seconds") from None
    if seconds <= 0:
        return None
    return max(float(seconds), MIN_CONNECT_TIMEOUT_SECONDS)


def _asyncpg_parse(url: str) -> tuple[list[Any], Any]:
    """asyncpg's own reading of the URL (and of the PG* environment), keyword by keyword."""
    accepted = inspect.signature(connect_utils._parse_connect_dsn_and_args).parameters
    kwargs: dict[str, Any] = {name: None for name in accepted if name != "dsn"}
    with warnings.catch_warnings():
        # A passfile readable by others is ignored with a warning, as libpq does;
        # asyncpg warns again when it connects.
        warnings.simplefilter("ignore")
        addrs, params = connect_utils._parse_connect_dsn_and_args(dsn=url, **kwargs)
    return addrs, params


def _driver_words(message: str, url: str) -> str:
    """asyncpg's reason, unless it quotes a piece of what may hold a password."""
    if url_secrets.quotes(message, url_secrets.secret_texts(url)):
        return "the PostgreSQL driver (asyncpg) refuses the URL (its words are not shown: they quote the URL)"
    return f"the PostgreSQL driver (asyncpg) refuses the URL: {message}"


def _check_files(pairs: list[tuple[str, str, str]], env: Mapping[str, str]) -> None:
    given = {key: value for _raw, key, value in pairs if key in FILE_PARAMETERS}
    for key, variable in (("sslrootcert", "PGSSLROOTCERT"), ("sslcert", "PGSSLCERT"), ("sslkey", "PGSSLKEY")):
        if key not in given and env.get(variable):
            given[variable] = env[variable]
    for key, path in given.items():
        if not path:
            continue
        # The path is not repeated: after a password left unencoded in the
        # query, "&sslrootcert=..." may be the rest of that password.
        if "\x00" in path:
            raise InvalidDatabaseUrl(f"the file {key} names holds a NUL character")
        try:
            # Not opened before it is known to be a file: a FIFO would block the open.
            if not stat.S_ISREG(os.stat(path).st_mode):
                # A device (/dev/zero) would be read forever when the driver loads it.
                raise InvalidDatabaseUrl(f"the file {key} names is not a regular file")
            with open(path, "rb"):
                pass
        except OSError as exc:
            raise InvalidDatabaseUrl(f"the file {key} names cannot be read: {exc.strerror}") from None


def parse(url: str, env: Mapping[str, str] | None = None) -> DatabaseTarget:
    """The target of a PostgreSQL URL, or InvalidDatabaseUrl with a reason that never holds the password.

    `env` is where the PG* variables are read for the checks of this module;
    asyncpg reads the process environment itself, as it will when it connects.
    """
    env = os.environ if env is None else env
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:  # urllib's messages quote the URL: not repeated
        raise InvalidDatabaseUrl(f"not a valid URL: {url_secrets.UNPARSED}") from None
    if parts.scheme not in SCHEMES:
        raise InvalidDatabaseUrl(f"the scheme must be one of {', '.join(SCHEMES)}")
    unreadable = url_secrets.ambiguity(url, DRIVER_PARAMETERS)
    if unreadable is not None:
        raise InvalidDatabaseUrl(unreadable)
    pairs = _query_pairs(parts.query) if parts.query else []
    hostlist = _authority(parts.netloc)
    if hostlist:
        _check_hostlist(hostlist, "host")
    last = {key: value for _raw, key, value in pairs}
    unsupported = sorted(set(last) & UNSUPPORTED_PARAMETERS)
    if unsupported:
        raise InvalidDatabaseUrl(
            f"parameter {unsupported[0]} is not supported by the PostgreSQL driver (asyncpg): remove it"
        )
    attrs = last.get("target_session_attrs", env.get("PGTARGETSESSIONATTRS"))
    if attrs is not None and attrs not in {member.value for member in SessionAttrs}:
        raise InvalidDatabaseUrl(
            f"target_session_attrs is not one of {', '.join(member.value for member in SessionAttrs)}"
        )
    if last.get("host"):
        _check_hostlist(last["host"], "host parameter, entry")
    if last.get("port"):
        for index, port in enumerate(last["port"].split(","), start=1):
            _check_port(port, f"port parameter, entry {index}")
    _check_files(pairs, env)
    connect_timeout = _connect_timeout(last["connect_timeout"]) if "connect_timeout" in last else None
    if "connect_timeout" not in last and env.get("PGCONNECT_TIMEOUT"):
        connect_timeout = _connect_timeout(env["PGCONNECT_TIMEOUT"])
    kept = "&".join(raw for raw, key, _value in pairs if key not in OWN_PARAMETERS)
    driver_url = urllib.parse.urlunsplit(parts._replace(query=kept))
    try:
        addrs, params = _asyncpg_parse(url)
    except (pg_exceptions.InterfaceError, pg_exceptions.InternalClientError, ValueError, ssl.SSLError) as exc:
        raise InvalidDatabaseUrl(_driver_words(str(exc), url)) from None
    except OSError as exc:
        raise InvalidDatabaseUrl(f"a file the URL names cannot be read: {exc.strerror}") from None
    hosts = tuple(Host(addr, _socket_port(addr)) if isinstance(addr, str) else Host(addr[0], addr[1]) for addr in addrs)
    _check_names(hosts)
    return DatabaseTarget(
        url=driver_url,
        hosts=hosts,
        target_session_attrs=SessionAttrs(params.target_session_attrs.value),
        connect_timeout=connect_timeout,
        application_name=last.get("application_name") or None,
        user=params.user or "",
        database=params.database or "",
    )


def _socket_port(path: str) -> int:
    _directory, _sep, port = path.rpartition(".s.PGSQL.")
    return int(port) if port.isdigit() else 5432


def redact(url: str) -> str:
    """The URL with every credential replaced by ***, for messages and logs (see url_secrets.mask_url)."""
    return url_secrets.mask_url(url)


@dataclass(frozen=True)
class PostgresUrl:
    """A PostgreSQL URL if asyncpg would accept it (several hosts, sockets, TLS files...)."""

    kind: str = "postgresql:// URL"

    def __call__(self, raw: str, env: Mapping[str, str]) -> str:
        try:
            parse(raw, env)
        except InvalidDatabaseUrl as exc:
            raise Refused(f"{redact(raw)}: {exc.problem}") from None
        return raw
