"""What one measurement of a signal produced, and the single place where any
exception becomes a reason for the signal to be unmeasured."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import NamedTuple

import asyncpg
import redis.exceptions

from exporter.errors import MeasurementError
from exporter.samples import Sample


class Failure(NamedTuple):
    reason: str
    detail: str


@dataclass(frozen=True)
class Outcome:
    """The result of one measurement; `samples` is None when the signal is unmeasured."""

    signal: str
    samples: tuple[Sample, ...] | None
    duration: float
    last_success: float | None
    failure: Failure | None = None

    @property
    def measured(self) -> bool:
        return self.samples is not None


_POSTGRES_REASONS: tuple[tuple[type[asyncpg.PostgresError], str], ...] = (
    (asyncpg.exceptions.QueryCanceledError, "statement_timeout"),
    (asyncpg.exceptions.LockNotAvailableError, "lock_timeout"),
    (asyncpg.exceptions.UndefinedTableError, "missing_table"),
    (asyncpg.exceptions.InvalidSchemaNameError, "missing_table"),
    (asyncpg.exceptions.InsufficientPrivilegeError, "permission_denied"),
    (asyncpg.exceptions.InvalidAuthorizationSpecificationError, "authentication_failed"),
    (asyncpg.exceptions.InvalidPasswordError, "authentication_failed"),
    (asyncpg.exceptions.TooManyConnectionsError, "too_many_connections"),
    (asyncpg.exceptions.CannotConnectNowError, "connection_error"),
    (asyncpg.exceptions.PostgresConnectionError, "connection_error"),
    (asyncpg.exceptions.AdminShutdownError, "connection_error"),
    (asyncpg.exceptions.InvalidCatalogNameError, "connection_error"),
)


def classify(exc: BaseException, deadline: float) -> Failure:
    """Map any exception raised while measuring to a stable reason and a safe detail."""
    # Batches run concurrently in a task group: the first failure speaks for it.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MeasurementError):
        return Failure(exc.reason, exc.detail)
    if isinstance(exc, TimeoutError | redis.exceptions.TimeoutError):
        return Failure("timeout", f"not complete within the {deadline:g} s deadline")
    if isinstance(exc, asyncpg.PostgresError):
        for error_type, reason in _POSTGRES_REASONS:
            if isinstance(exc, error_type):
                return Failure(reason, f"{exc.sqlstate}: {exc}")
        return Failure("sql_error", f"{exc.sqlstate}: {exc}")
    if isinstance(exc, redis.exceptions.ResponseError):
        if str(exc).startswith("NOGROUP"):
            return Failure("missing_group", str(exc))
        return Failure("redis_error", str(exc))
    if isinstance(exc, socket.gaierror):
        return Failure("connection_error", f"cannot resolve the host: {exc.strerror}")
    if isinstance(exc, asyncpg.exceptions.InternalClientError):
        # A connection the server dropped mid-conversation (a crash, a kill)
        # can be left in a protocol state asyncpg refuses to use; it is replaced.
        return Failure("connection_error", f"connection in an unusable state: {exc}")
    if isinstance(exc, asyncpg.InterfaceError | redis.exceptions.ConnectionError | OSError | EOFError):
        return Failure("connection_error", f"{type(exc).__name__}: {exc}")
    if isinstance(exc, redis.exceptions.RedisError):
        return Failure("redis_error", f"{type(exc).__name__}: {exc}")
    return Failure("internal_error", f"{type(exc).__name__}: {exc}")
