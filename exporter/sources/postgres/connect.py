"""Connecting to a PostgreSQL URL as libpq does: the hosts in order, each
within `connect_timeout`, until one gives a session of the kind
`target_session_attrs` asks for.

asyncpg walks the hosts too, but waits its whole timeout on the first host
that does not answer, picks at random among the candidates of
`prefer-standby`, and reports only the last failure. Here each host gets
libpq's `connect_timeout` at most (within the exporter's own limit),
`prefer-standby` falls back to the first usable host as libpq does, and a
failure names every host and what went wrong with it (a socket directory that
does not exist, a refused connection, a certificate, a primary where a
standby was asked for).
"""

from __future__ import annotations

import asyncio
import os
import socket
import ssl
from typing import Any, NamedTuple

import asyncpg

from exporter.sources.postgres.dsn import Host, SessionAttrs, parse
from exporter.sources.postgres.errors import ConnectNotGranted, DatabaseUnreachable
from exporter.sources.url_secrets import masked, server_secrets


class SessionKind(NamedTuple):
    standby: bool  # in hot standby (recovery)
    read_only: bool  # read-only by default: a standby, or default_transaction_read_only on


async def session_kind(connection: asyncpg.Connection) -> SessionKind:
    """From what the server reports at startup (PostgreSQL 14+), else by asking."""
    settings = connection.get_settings()
    hot = getattr(settings, "in_hot_standby", None)
    standby = hot == "on" if hot is not None else bool(await connection.fetchval("SELECT pg_is_in_recovery()"))
    default_read_only = getattr(settings, "default_transaction_read_only", None)
    if default_read_only is None:
        default_read_only = await connection.fetchval("SHOW default_transaction_read_only")
    return SessionKind(standby=standby, read_only=standby or default_read_only == "on")


def matches(wanted: SessionAttrs, kind: SessionKind) -> bool:
    if wanted is SessionAttrs.PRIMARY:
        return not kind.standby
    if wanted in (SessionAttrs.STANDBY, SessionAttrs.PREFER_STANDBY):
        return kind.standby
    if wanted is SessionAttrs.READ_WRITE:
        return not kind.read_only
    if wanted is SessionAttrs.READ_ONLY:
        return kind.read_only
    return True


def mismatch(wanted: SessionAttrs, kind: SessionKind) -> str:
    what = "a standby" if kind.standby else "a primary"
    if wanted is SessionAttrs.READ_WRITE and not kind.standby:
        return (
            f"{what}, but its sessions are read-only by default (default_transaction_read_only = on,"
            " as for the exporter's role): read-write never matches them, ask for primary"
        )
    if wanted is SessionAttrs.READ_ONLY:
        return f"{what} whose sessions are read-write by default"
    return what


def failure(host: Host, exc: BaseException, per_host_limit: float | None) -> str:
    """Why one host gave no session, in words that name the host's own problem."""
    if isinstance(exc, TimeoutError):
        return f"no answer within connect_timeout {per_host_limit:g} s"
    if host.is_socket and isinstance(exc, FileNotFoundError):
        directory = os.path.dirname(host.address)
        if not os.path.isdir(directory):
            return f"socket directory {directory} does not exist"
        return "no server socket there (is the server running, on this port?)"
    if isinstance(exc, socket.gaierror):
        return f"cannot resolve the host name: {exc.strerror}"
    if isinstance(exc, ssl.SSLCertVerificationError):
        return f"TLS: the server's certificate is refused: {exc.verify_message}"
    if isinstance(exc, ssl.SSLError):
        return f"TLS: {exc.reason or exc}"
    if isinstance(exc, ConnectionRefusedError):
        return "connection refused"
    if isinstance(exc, OSError) and exc.strerror:
        return exc.strerror[:1].lower() + exc.strerror[1:]
    return f"{type(exc).__name__}: {exc}"


# Failures after which libpq tries the next host. Anything else (a wrong
# password, a database that does not exist) is the answer, as in libpq.
NEXT_HOST_ERRORS = (OSError, TimeoutError, asyncpg.exceptions.CannotConnectNowError)


async def connect(url: str, *, timeout: float, **options: Any) -> asyncpg.Connection:  # noqa: ASYNC109 -- as asyncpg.connect
    """A connection to the first host of `url` that gives the session it asks for,
    within `timeout` overall; `options` go to asyncpg.connect."""
    target = parse(url)
    wanted = target.target_session_attrs
    loop = asyncio.get_running_loop()
    end = loop.time() + timeout
    attempts: list[tuple[str, str]] = []
    fallback: asyncpg.Connection | None = None  # prefer-standby: the first usable session of any kind
    try:
        for host in target.hosts:
            remaining = end - loop.time()
            if remaining <= 0:
                raise TimeoutError
            limit = remaining if target.connect_timeout is None else min(remaining, target.connect_timeout)
            try:
                connection: asyncpg.Connection = await asyncpg.connect(
                    target.url,
                    host=host.address,
                    port=host.port,
                    timeout=limit,
                    target_session_attrs="any",
                    **options,
                )
            except asyncpg.exceptions.InsufficientPrivilegeError:
                # At connect, the one privilege checked is CONNECT on the database.
                # The role is shown unless it may be a password put in the user's place.
                role = masked(target.user, server_secrets(url, os.environ))
                raise ConnectNotGranted(role, target.database) from None
            except NEXT_HOST_ERRORS as exc:
                if isinstance(exc, TimeoutError) and limit >= remaining:
                    raise  # the exporter's own limit, not the host's connect_timeout
                attempts.append((str(host), failure(host, exc, target.connect_timeout)))
                continue
            if wanted is SessionAttrs.ANY:
                return connection
            try:
                kind = await session_kind(connection)
            except BaseException:
                connection.terminate()
                raise
            if matches(wanted, kind):
                return connection
            if wanted is SessionAttrs.PREFER_STANDBY and fallback is None:
                fallback = connection
                continue
            attempts.append((str(host), mismatch(wanted, kind)))
            connection.terminate()
        if fallback is not None:
            chosen, fallback = fallback, None
            return chosen
        raise DatabaseUnreachable(wanted.value, attempts)
    finally:
        if fallback is not None:
            fallback.terminate()
