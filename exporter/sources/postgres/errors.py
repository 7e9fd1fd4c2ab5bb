"""The PostgreSQL source's typed errors (each a SourceError of exporter.errors,
carrying its reason), and asyncpg's exceptions translated into them where the
source catches them, a server's error written on one line: nothing downstream imports asyncpg to tell
what went wrong. The server's words pass through a mask (the reader's: every
echo of a credential of its URL hidden, exporter.sources.url_secrets.masked):
"password authentication failed for user ..." quotes what the URL gave."""

from __future__ import annotations

import contextlib
import re
from collections.abc import Iterator, Sequence

import asyncpg

from exporter.errors import SourceError
from exporter.options import setting
from exporter.printable import quoted
from exporter.reasons import Reason
from exporter.sources.url_secrets import Mask, unmasked

# The SQLSTATEs (by asyncpg's class for each) the exporter knows; the first match wins.
REASONS: tuple[tuple[type[asyncpg.PostgresError], Reason], ...] = (
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


# What PostgreSQL answers, with SQLSTATE 42501 like a missing grant, a statement
# that row-level security would filter while row_security is off
# (exporter.sources.postgres.transaction); the table is named without its schema.
ROW_SECURITY = re.compile(r'query would be affected by row-level security policy for table "(.*)"', re.DOTALL)


def row_security_table(exc: BaseException) -> str | None:
    """The table row-level security would filter, when that is what `exc` says; else None."""
    if not isinstance(exc, asyncpg.exceptions.InsufficientPrivilegeError):
        return None
    match = ROW_SECURITY.search(str(exc))
    return None if match is None else match.group(1)


# What PgBouncer answers a transaction block in pool_mode = statement, as it closes the connection.
STATEMENT_POOLING = "transaction blocks not allowed in statement pooling mode"


def translated(exc: BaseException, mask: Mask = unmasked) -> BaseException:
    """The typed error for an asyncpg exception, its words through `mask`; any other exception itself."""
    if isinstance(exc, asyncpg.exceptions.DataError):
        # A value of the wrong type for its column: asyncpg refuses to bind it, or
        # the server to read it (SQLSTATE class 22).
        return ArgumentDoesNotFit(mask(str(exc)))
    if isinstance(exc, asyncpg.exceptions.PostgresConnectionError) and STATEMENT_POOLING in str(exc):
        # PgBouncer's only word for it.
        return DatabaseRefused(Reason.STATEMENT_POOLER, exc.sqlstate, server_words(exc, mask))
    if isinstance(exc, asyncpg.PostgresError):
        table = row_security_table(exc)
        if table is not None:
            return RowSecurityRefused(table, exc.sqlstate, server_words(exc, mask))
        reason = next((reason for kind, reason in REASONS if isinstance(exc, kind)), Reason.SQL_ERROR)
        return DatabaseRefused(reason, exc.sqlstate, server_words(exc, mask))
    if isinstance(exc, asyncpg.exceptions.InternalClientError):
        # A connection the server dropped mid-conversation (a crash, a kill) can be
        # left in a protocol state asyncpg refuses to use; it is replaced.
        return DatabaseConnectionBroken(mask(str(exc)))
    if isinstance(exc, asyncpg.InterfaceError):
        return DatabaseConnectionBroken(mask(f"{type(exc).__name__}: {exc}"))
    return exc


def server_words(exc: BaseException, mask: Mask = unmasked) -> str:
    """A server's error on one line through `mask`: SQLSTATE, message and detail, never
    the hint (the driver's hints are advice for its own users, over many lines)."""
    message = str(exc.args[0]) if exc.args else type(exc).__name__
    detail = getattr(exc, "detail", None)
    text = f"{message} ({detail})" if detail else message
    one_line = " ".join(mask(text).split())  # masked as the server wrote it, tabs and all
    sqlstate = getattr(exc, "sqlstate", None)
    return f"{sqlstate}: {one_line}" if sqlstate else one_line


@contextlib.contextmanager
def typed_errors(mask: Mask) -> Iterator[None]:
    """Re-raise asyncpg's exceptions as the exporter's typed errors, their words through `mask`."""
    try:
        yield
    except (asyncpg.PostgresError, asyncpg.InterfaceError, asyncpg.exceptions.InternalClientError) as exc:
        raise translated(exc, mask) from exc


# The PostgreSQL source's typed errors, each with its reason.
class DatabaseUnreachable(SourceError):
    """No host of the PostgreSQL URL gave a session of the kind it asks for;
    says, host by host, why (never the password: hosts are named as parsed)."""

    reason = Reason.CONNECTION_ERROR

    def __init__(self, wanted: str, attempts: Sequence[tuple[str, str]]) -> None:
        self.wanted = wanted
        self.attempts = tuple(attempts)
        tried = "; ".join(f"{host}: {problem}" for host, problem in self.attempts) or "no host was tried"
        kind = "" if wanted == "any" else f" with target_session_attrs={wanted}"
        super().__init__(f"no host gave a session{kind}: {tried}")


class DatabaseRefused(SourceError):
    """PostgreSQL answered with an error: its SQLSTATE, its message, and the reason
    the SQLSTATE means (exporter.sources.postgres.errors)."""

    def __init__(self, reason: Reason, sqlstate: str, words: str) -> None:
        self.reason = reason
        self.sqlstate = sqlstate
        self.words = words  # the server's error on one line (exporter.sources.postgres.errors.server_words)
        super().__init__(words)


class RowSecurityRefused(DatabaseRefused):
    """Row-level security would filter a table the exporter reads: with
    row_security off (exporter.sources.postgres.transaction) PostgreSQL refuses the
    statement instead of counting the rows a policy leaves."""

    def __init__(self, table: str, sqlstate: str, words: str) -> None:
        self.table = table
        super().__init__(Reason.ROW_SECURITY, sqlstate, words)

    def __str__(self) -> str:
        return (
            f"row-level security would filter the rows of table {quoted(self.table)} for the exporter's role:"
            f" nothing is counted rather than the rows a policy leaves ({self.words})"
        )


class DatabaseConnectionBroken(SourceError):
    """The connection to PostgreSQL failed under a statement (closed, reset, or left
    in a protocol state the client refuses to use); it is replaced."""

    reason = Reason.CONNECTION_ERROR

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"connection in an unusable state: {problem}")


class ArgumentDoesNotFit(SourceError):
    """A value bound to a statement does not fit its column's type (text for an integer, ...)."""

    reason = Reason.CONTRACT_VIOLATION

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"a value does not fit its column: {problem}")


class SessionNotKept(SourceError):
    """In session pool mode, a connection's server session did not last from one
    of its transactions to the next: a transaction pooler is in between."""

    reason = Reason.TRANSACTION_POOLER

    def __init__(self, evidence: str) -> None:
        self.evidence = evidence
        super().__init__(
            f"the server session of a connection changed between two of its transactions ({evidence}):"
            f" a transaction pooler is in front of the database; set {setting('database_pool_mode', 'transaction')}"
        )


class ConnectNotGranted(SourceError):
    """The server refused the role a session on the database: no CONNECT privilege."""

    reason = Reason.CONNECT_NOT_GRANTED

    def __init__(self, role: str, database: str) -> None:
        self.role = role
        self.database = database
        super().__init__(f"role {role!r} may not connect to database {database!r} (no CONNECT privilege)")
