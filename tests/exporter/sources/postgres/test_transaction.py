"""How every transaction opens: the guarantees as the server reports them inside
one, directly (through the poolers: test_pool_modes.py)."""

from __future__ import annotations

import asyncpg
import pytest

from exporter.sources.postgres.transaction import COMMIT_SQL, ROLLBACK_SQL, milliseconds, transaction_opening
from exporter.timeouts import Timeouts
from tests.platform import Platform

pytestmark = pytest.mark.anyio


@pytest.mark.parametrize(
    ("seconds", "text"),
    [
        (2.5, "2500"),
        (0.25, "250"),
        (0.0019, "1"),  # whole milliseconds, never rounded up past the deadline
        (0.0004, "1"),  # never 0: to PostgreSQL, 0 means no limit at all
        (0.0, "1"),
    ],
)
def test_a_limit_is_whole_milliseconds_and_never_none(seconds: float, text: str) -> None:
    assert milliseconds(seconds) == text


SETTINGS = (
    "transaction_read_only",
    "statement_timeout",
    "lock_timeout",
    "max_parallel_workers_per_gather",
    "TimeZone",
    "jit",
    "plan_cache_mode",
    "row_security",
)


async def settings_inside(connection: asyncpg.Connection) -> dict[str, str]:
    rows = await connection.fetch("SELECT name, setting FROM pg_settings WHERE name = ANY($1::text[])", SETTINGS)
    return {row["name"]: row["setting"] for row in rows}


@pytest.mark.parametrize("deadline", [3.0, 0.5])
async def test_every_transaction_opens_read_only_with_its_limits(platform: Platform, deadline: float) -> None:
    timeouts = Timeouts(deadline=deadline)
    # A session whose own settings differ from every one the opening sets.
    session = {"TimeZone": "Asia/Tokyo", "jit": "on", "max_parallel_workers_per_gather": "2", "lock_timeout": "0"}
    connection = await asyncpg.connect(platform.admin_url, server_settings=session)
    try:
        before = await settings_inside(connection)
        assert {name: before[name] for name in session} == session
        assert (before["transaction_read_only"], before["plan_cache_mode"], before["row_security"]) == (
            "off",
            "auto",
            "on",
        )
        await connection.execute(transaction_opening(timeouts))
        assert connection.is_in_transaction()
        assert await settings_inside(connection) == {
            "transaction_read_only": "on",
            "statement_timeout": milliseconds(timeouts.statement),
            "lock_timeout": milliseconds(timeouts.lock),
            "max_parallel_workers_per_gather": "0",
            "TimeZone": "UTC",
            "jit": "off",
            "plan_cache_mode": "force_generic_plan",
            "row_security": "off",
        }
        with pytest.raises(asyncpg.ReadOnlySQLTransactionError):
            await connection.execute("CREATE TABLE public.intruder (id int)")
        await connection.execute(ROLLBACK_SQL)
        # SET LOCAL: the session is as it was once the transaction ends, either way.
        assert await settings_inside(connection) == before
        await connection.execute(transaction_opening(timeouts))
        await connection.execute(COMMIT_SQL)
        assert not connection.is_in_transaction()
        assert await settings_inside(connection) == before
    finally:
        await connection.close()
