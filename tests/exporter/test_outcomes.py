"""The one place exceptions become reasons: every known kind, and the rest."""

from __future__ import annotations

import socket

import asyncpg
import pytest
import redis.exceptions

from exporter.errors import (
    ConnectNotGranted,
    ContractViolation,
    RedisGroupMissing,
    RedisPermissionDenied,
    RedisUnavailable,
    SentinelServiceUnknown,
    SessionNotKept,
)
from exporter.outcomes import classify


@pytest.mark.parametrize(
    ("exc", "reason"),
    [
        (ContractViolation("dlq", "t.c", "NULL"), "contract_violation"),
        (TimeoutError(), "timeout"),
        (redis.exceptions.TimeoutError(), "timeout"),
        (asyncpg.exceptions.QueryCanceledError("canceling statement due to statement timeout"), "statement_timeout"),
        (asyncpg.exceptions.LockNotAvailableError("lock timeout"), "lock_timeout"),
        (asyncpg.exceptions.UndefinedTableError("relation does not exist"), "missing_table"),
        (asyncpg.exceptions.InsufficientPrivilegeError("permission denied"), "permission_denied"),
        (asyncpg.exceptions.InvalidPasswordError("password authentication failed"), "authentication_failed"),
        (asyncpg.exceptions.TooManyConnectionsError("too many clients"), "too_many_connections"),
        (asyncpg.exceptions.ConnectionDoesNotExistError("connection was closed"), "connection_error"),
        (asyncpg.exceptions.InternalClientError("cannot switch to state 12"), "connection_error"),
        (asyncpg.exceptions.SyntaxOrAccessError("syntax"), "sql_error"),
        (SessionNotKept("server process 1 became 2"), "transaction_pooler"),
        (ConnectNotGranted("orpycamcp_exporter", "platform"), "connect_not_granted"),
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
        (ConnectionRefusedError(111, "refused"), "connection_error"),
        (socket.gaierror(-2, "Name or service not known"), "connection_error"),
        (RedisGroupMissing("s", "g"), "missing_group"),
        (RedisPermissionDenied("XLEN", "s", "this user has no permissions"), "permission_denied"),
        (RedisUnavailable("LOADING", "Redis is loading the dataset in memory"), "server_loading"),
        (SentinelServiceUnknown("nosuch", ["mymaster"]), "unknown_sentinel_service"),
        (redis.exceptions.ResponseError("WRONGTYPE"), "redis_error"),
        (redis.exceptions.ConnectionError("refused"), "connection_error"),
        (ExceptionGroup("batches", [asyncpg.exceptions.UndefinedTableError("x")]), "missing_table"),
        (ValueError("something unforeseen"), "internal_error"),
    ],
)
def test_classify(exc: BaseException, reason: str) -> None:
    assert classify(exc, 10).reason == reason


def test_a_server_error_is_one_line_without_the_driver_advice() -> None:
    # As asyncpg raises it through PgBouncer: its own 14-line advice as the hint.
    exc = asyncpg.exceptions.InvalidSQLStatementNameError('prepared statement "orpycamcp_1_0" does not exist')
    exc.hint = '\nNOTE: pgbouncer with pool_mode set to "transaction" or\n"statement" does not support ...\n* a\n* b'
    exc.detail = "a detail\nover two lines"
    assert "NOTE: pgbouncer" in str(exc)
    failure = classify(exc, 10)
    assert failure.detail == '26000: prepared statement "orpycamcp_1_0" does not exist (a detail over two lines)'
    assert classify(SessionNotKept(failure.detail), 10).detail.count("\n") == 0
