"""What one measurement of a signal produced, and the single place where any
exception becomes a reason for the signal to be unmeasured."""

from __future__ import annotations

import socket
from dataclasses import dataclass
from typing import NamedTuple

import asyncpg
import redis.exceptions

from exporter.errors import (
    ClusterChanged,
    ConnectNotGranted,
    DatabaseUnreachable,
    MeasurementError,
    Reason,
    SourceError,
    server_words,
)
from exporter.samples import Sample
from exporter.sources.dsn import InvalidDatabaseUrl


class Failure(NamedTuple):
    reason: Reason
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


_POSTGRES_REASONS: tuple[tuple[type[asyncpg.PostgresError], Reason], ...] = (
    (asyncpg.exceptions.QueryCanceledError, Reason.STATEMENT_TIMEOUT),
    (asyncpg.exceptions.LockNotAvailableError, Reason.LOCK_TIMEOUT),
    (asyncpg.exceptions.UndefinedTableError, Reason.MISSING_TABLE),
    (asyncpg.exceptions.InvalidSchemaNameError, Reason.MISSING_TABLE),
    (asyncpg.exceptions.InsufficientPrivilegeError, Reason.PERMISSION_DENIED),
    (asyncpg.exceptions.InvalidAuthorizationSpecificationError, Reason.AUTHENTICATION_FAILED),
    (asyncpg.exceptions.InvalidPasswordError, Reason.AUTHENTICATION_FAILED),
    (asyncpg.exceptions.TooManyConnectionsError, Reason.TOO_MANY_CONNECTIONS),
    (asyncpg.exceptions.CannotConnectNowError, Reason.CONNECTION_ERROR),
    (asyncpg.exceptions.PostgresConnectionError, Reason.CONNECTION_ERROR),
    (asyncpg.exceptions.AdminShutdownError, Reason.CONNECTION_ERROR),
    (asyncpg.exceptions.InvalidCatalogNameError, Reason.CONNECTION_ERROR),
    # A prepared statement missing from, or already in, the connection's server
    # session: the session changed under the connection.
    (asyncpg.exceptions.InvalidSQLStatementNameError, Reason.TRANSACTION_POOLER),
    (asyncpg.exceptions.DuplicatePreparedStatementError, Reason.TRANSACTION_POOLER),
)


# What PgBouncer answers a transaction block in pool_mode = statement.
STATEMENT_POOLING = "transaction blocks not allowed in statement pooling mode"


def classify(exc: BaseException, deadline: float) -> Failure:
    """Map any exception raised while measuring to a stable reason and a safe detail."""
    # Batches run concurrently in a task group: the first failure speaks for it.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MeasurementError):
        return Failure(exc.reason, exc.detail)
    if isinstance(exc, SourceError | ClusterChanged | ConnectNotGranted):
        return Failure(exc.reason, str(exc))
    if isinstance(exc, TimeoutError | redis.exceptions.TimeoutError):
        return Failure(Reason.TIMEOUT, f"not complete within the {deadline:g} s deadline")
    if isinstance(exc, asyncpg.exceptions.PostgresConnectionError) and STATEMENT_POOLING in str(exc):
        # PgBouncer's only word for it, as it closes the connection.
        return Failure(Reason.STATEMENT_POOLER, server_words(exc))
    if isinstance(exc, asyncpg.PostgresError):
        for error_type, reason in _POSTGRES_REASONS:
            if isinstance(exc, error_type):
                return Failure(reason, server_words(exc))
        return Failure(Reason.SQL_ERROR, server_words(exc))
    if isinstance(exc, DatabaseUnreachable):
        return Failure(Reason.CONNECTION_ERROR, str(exc))
    if isinstance(exc, InvalidDatabaseUrl):
        # Checked at start; a file it names (a certificate) can vanish later.
        return Failure(Reason.CONNECTION_ERROR, f"the database URL cannot be used: {exc}")
    if isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.AuthenticationWrongNumberOfArgsError):
        # Before ConnectionError: redis-py makes a refused AUTH a kind of connection error.
        return Failure(Reason.AUTHENTICATION_FAILED, f"Redis: {exc}")
    if isinstance(exc, redis.exceptions.ResponseError):
        # The Redis source translates the codes it knows (exporter.sources.redis_errors).
        return Failure(Reason.REDIS_ERROR, str(exc))
    if isinstance(exc, socket.gaierror):
        return Failure(Reason.CONNECTION_ERROR, f"cannot resolve the host: {exc.strerror}")
    if isinstance(exc, asyncpg.exceptions.InternalClientError):
        # A connection the server dropped mid-conversation (a crash, a kill)
        # can be left in a protocol state asyncpg refuses to use; it is replaced.
        return Failure(Reason.CONNECTION_ERROR, f"connection in an unusable state: {exc}")
    if isinstance(exc, asyncpg.InterfaceError | redis.exceptions.ConnectionError | OSError | EOFError):
        return Failure(Reason.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, redis.exceptions.RedisError):
        return Failure(Reason.REDIS_ERROR, f"{type(exc).__name__}: {exc}")
    return Failure(Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
