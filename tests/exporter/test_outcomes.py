"""The one place exceptions become reasons: every known kind, and the rest. The
PostgreSQL source's errors reach it translated (exporter.sources.postgres.errors)."""

from __future__ import annotations

import socket

import asyncpg
import pytest
import redis.exceptions

from exporter.errors import Closed, ContractViolation
from exporter.outcomes import classify
from exporter.reasons import Reason
from exporter.sources.postgres.errors import (
    ArgumentDoesNotFit,
    ConnectNotGranted,
    DatabaseRefused,
    DatabaseUnreachable,
    SessionNotKept,
    translated,
)
from exporter.sources.redis.errors import (
    RedisGroupMissing,
    RedisPermissionDenied,
    RedisUnavailable,
    SentinelServiceUnknown,
    translating,
)
from exporter.sources.redis.errors import translated as redis_translated
from exporter.sources.url_secrets import server_mask


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (ContractViolation("dlq", "t.c", "NULL"), "contract_violation"),
        (TimeoutError(), "timeout"),
        (redis.exceptions.TimeoutError(), "timeout"),
        (SessionNotKept("server process 1 became 2"), "transaction_pooler"),
        (ConnectNotGranted("orpycamcp_exporter", "platform"), "connect_not_granted"),
        (DatabaseUnreachable("any", [("db:5432", "refused")]), "connection_error"),
        (DatabaseRefused(Reason.MISSING_TABLE, "42P01", "relation does not exist"), "missing_table"),
        (ArgumentDoesNotFit("invalid input for query argument $1"), "contract_violation"),
        (Closed("the PostgreSQL reader"), "internal_error"),
        (ConnectionRefusedError(111, "refused"), "connection_error"),
        (socket.gaierror(-2, "Name or service not known"), "connection_error"),
        (RedisGroupMissing("s", "g"), "missing_group"),
        (RedisPermissionDenied("XLEN", "s", "this user has no permissions"), "permission_denied"),
        (
            RedisUnavailable("LOADING", "Redis is loading the dataset in memory", Reason.SERVER_LOADING),
            "server_loading",
        ),
        (redis_translated(redis.exceptions.BusyLoadingError("Loading", status_code="LOADING")), "server_loading"),
        (SentinelServiceUnknown("nosuch", ["mymaster"]), "unknown_sentinel_service"),
        (redis.exceptions.ResponseError("WRONGTYPE"), "redis_error"),
        (redis.exceptions.ConnectionError("refused"), "connection_error"),
        (ExceptionGroup("batches", [DatabaseRefused(Reason.LOCK_TIMEOUT, "55P03", "lock")]), "lock_timeout"),
        (ValueError("something unforeseen"), "internal_error"),
    ],
)
def test_classify(exc: BaseException, reason: str) -> None:
    assert classify(exc, 10).reason == reason


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (asyncpg.exceptions.QueryCanceledError("canceling statement due to statement timeout"), "statement_timeout"),
        (asyncpg.exceptions.LockNotAvailableError("lock timeout"), "lock_timeout"),
        (asyncpg.exceptions.UndefinedTableError("relation does not exist"), "missing_table"),
        (asyncpg.exceptions.InvalidSchemaNameError("schema does not exist"), "missing_table"),
        (asyncpg.exceptions.InsufficientPrivilegeError("permission denied"), "permission_denied"),
        (
            asyncpg.exceptions.InsufficientPrivilegeError(
                'query would be affected by row-level security policy for table "evento_dead_letter"'
            ),
            "row_security",
        ),
        (asyncpg.exceptions.InvalidPasswordError("password authentication failed"), "authentication_failed"),
        (asyncpg.exceptions.TooManyConnectionsError("too many clients"), "too_many_connections"),
        (asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed"), "connection_error"),
        (asyncpg.exceptions.InternalClientError("cannot switch to state 12"), "connection_error"),
        (asyncpg.exceptions.InterfaceError("the connection is closed"), "connection_error"),
        (asyncpg.exceptions.DataError("invalid input for query argument $1"), "contract_violation"),
        (asyncpg.exceptions.SyntaxOrAccessError("syntax"), "sql_error"),
        (
            asyncpg.exceptions.ConnectionDoesNotExistError(
                "connection was closed in the middle of operation: transaction blocks not allowed in statement"
                " pooling mode"
            ),
            "statement_pooler",
        ),
        (
            asyncpg.exceptions.InvalidSQLStatementNameError('prepared statement "s" does not exist'),
            "transaction_pooler",
        ),
        (
            asyncpg.exceptions.DuplicatePreparedStatementError('prepared statement "s" already exists'),
            "transaction_pooler",
        ),
    ],
)
def test_the_postgres_source_translates_asyncpg_errors_into_typed_ones(exc: Exception, reason: str) -> None:
    typed = translated(exc)
    assert not isinstance(typed, asyncpg.PostgresError | asyncpg.InterfaceError)
    assert classify(typed, 10).reason == reason


def test_a_refused_statement_keeps_its_sqlstate_and_the_server_message() -> None:
    typed = translated(asyncpg.exceptions.UndefinedTableError('relation "tenant_a.t" does not exist'))
    assert isinstance(typed, DatabaseRefused)
    assert classify(typed, 10).detail == '42P01: relation "tenant_a.t" does not exist'


def test_other_exceptions_pass_through_the_translation_untouched() -> None:
    error = OSError("reset")
    assert translated(error) is error


def test_a_server_error_is_one_line_without_the_driver_advice() -> None:
    # As asyncpg raises it through PgBouncer: its own 14-line advice as the hint.
    exc = asyncpg.exceptions.InvalidSQLStatementNameError('prepared statement "orpycamcp_1_0" does not exist')
    exc.hint = '\nNOTE: pgbouncer with pool_mode set to "transaction" or\n"statement" does not support ...\n* a\n* b'
    exc.detail = "a detail\nover two lines"
    assert "NOTE: pgbouncer" in str(exc)
    failure = classify(translated(exc), 10)
    assert failure.detail == '26000: prepared statement "orpycamcp_1_0" does not exist (a detail over two lines)'
    assert classify(SessionNotKept(failure.detail), 10).detail.count("\n") == 0


# A user name alone in the Redis URL may be a password put in the user's place.
REDIS_MASK = server_mask("redis://Secr3tPassw0rd@127.0.0.1:1/0", {})


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (redis.exceptions.AuthenticationError("user Secr3tPassw0rd refused"), "authentication_failed"),
        (redis.exceptions.ResponseError("ERR unknown user Secr3tPassw0rd"), "redis_error"),
        (redis.exceptions.ConnectionError("Secr3tPassw0rd: reset by peer"), "connection_error"),
        (redis.exceptions.NoPermissionError("User Secr3tPassw0rd has no permissions"), "permission_denied"),
        (redis.exceptions.BusyLoadingError("LOADING for Secr3tPassw0rd", status_code="LOADING"), "server_loading"),
    ],
)
def test_a_redis_error_keeps_its_reason_and_masks_an_echo_of_the_url(exc: BaseException, reason: str) -> None:
    failure = classify(redis_translated(exc, mask=REDIS_MASK), 10)
    assert failure.reason == reason
    assert "Secr3t" not in failure.detail
    assert "***" in failure.detail


def test_a_masked_redis_error_keeps_no_cause_that_says_what_was_masked() -> None:
    with pytest.raises(redis.exceptions.ResponseError) as caught, translating(REDIS_MASK):
        raise redis.exceptions.ResponseError("ERR unknown user Secr3tPassw0rd")
    assert str(caught.value) == "ERR unknown user ***"
    assert caught.value.__cause__ is None
    assert caught.value.__suppress_context__
