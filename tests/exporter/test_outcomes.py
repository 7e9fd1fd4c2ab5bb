"""The one place exceptions become reasons: every known kind, and the rest."""

from __future__ import annotations

import socket

import asyncpg
import pytest
import redis.exceptions

from exporter.errors import (
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
