"""The reader's statements on the session's PostgreSQL: in session pool mode
prepared once per connection under the lane's own names, prepared anew when a
table changed under one, the session checked once per pass on each connection;
in transaction pool mode unnamed, their values bound. (Through real
PgBouncers: test_pool_modes.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from exporter.loading import load
from exporter.service import postgres_settings
from exporter.sources.postgres.errors import DatabaseRefused, SessionNotKept
from exporter.sources.postgres.lanes import Lane
from exporter.sources.postgres.pooler import BACKEND_PID_SQL
from exporter.sources.postgres.source import Postgres
from exporter.timeouts import Timeouts
from tests.platform import Platform

pytestmark = pytest.mark.anyio

NAME = re.compile(r"orpycamcp_[0-9a-f]{16}_[0-9]+")


@pytest.fixture
async def reader(platform: Platform) -> AsyncIterator[Postgres]:
    # One lane: every statement on one connection, whose prepared statements the server lists.
    settings = load({"database_url": platform.exporter_url, "database_max_connections": "1"}, {})
    postgres = Postgres(postgres_settings(settings), Timeouts(deadline=5.0))
    yield postgres
    await postgres.close()


async def test_a_statement_is_prepared_once_per_connection_under_the_lanes_names(reader: Postgres) -> None:
    assert [tuple(row) for row in await reader.fetch("SELECT $1::int + 1 AS n", 41)] == [(42,)]
    assert [tuple(row) for row in await reader.fetch("SELECT $1::int + 1 AS n", 1)] == [(2,)]
    listed = await reader.fetch("SELECT name, statement FROM pg_prepared_statements ORDER BY statement")
    # The session check's, the statement's (once, though run twice), and this one's own.
    assert reader.prepares == 3
    assert sorted(row["statement"] for row in listed) == sorted(
        [
            BACKEND_PID_SQL,
            "SELECT $1::int + 1 AS n",
            "SELECT name, statement FROM pg_prepared_statements ORDER BY statement",
        ]
    )
    names = [row["name"] for row in listed]
    assert all(NAME.fullmatch(name) for name in names), names
    assert len({name.rpartition("_")[0] for name in names}) == 1  # the lane's one token


async def test_a_statement_whose_table_changed_is_prepared_anew(reader: Postgres, platform: Platform) -> None:
    await platform.execute("CREATE TABLE public.changing (a int); INSERT INTO public.changing VALUES (1)")
    await platform.execute("GRANT SELECT ON public.changing TO orpycamcp_exporter")
    assert [tuple(row) for row in await reader.fetch("SELECT * FROM public.changing")] == [(1,)]
    await platform.execute("ALTER TABLE public.changing ADD COLUMN b int DEFAULT 2")
    with pytest.raises(DatabaseRefused) as refused:
        await reader.fetch("SELECT * FROM public.changing")
    assert refused.value.sqlstate == "0A000"  # cached plan must not change result type
    assert [tuple(row) for row in await reader.fetch("SELECT * FROM public.changing")] == [(1, 2)]
    # Prepared again once, not on every use after.
    assert [tuple(row) for row in await reader.fetch("SELECT * FROM public.changing")] == [(1, 2)]
    assert reader.prepares == 3  # the session check's, and the statement twice


async def test_a_connection_whose_server_process_changed_is_never_read_again(platform: Platform) -> None:
    lane = Lane()
    settings = load({"database_url": platform.exporter_url, "database_max_connections": "1"}, {})
    reader = Postgres(postgres_settings(settings), Timeouts(deadline=5.0), lanes=[lane])
    try:
        [(pid,)] = [tuple(row) for row in await reader.fetch(BACKEND_PID_SQL)]
        assert lane.backend_pid == pid
        # As a pooler would: the connection's first transaction ran on another server process.
        lane.backend_pid = pid + 1
        with pytest.raises(SessionNotKept) as lost:
            await reader.fetch("SELECT 1")
        assert lost.value.evidence == f"server process {pid + 1} became {pid}"
        assert lane.connection is None  # dropped with its prepared statements
        with pytest.raises(SessionNotKept):
            await reader.fetch("SELECT 1")  # and nothing is read any more
    finally:
        await reader.close()


async def session_checks(reader: Postgres) -> int:
    """How often the connection ran its session check, as the server counts the
    runs of that prepared statement (every run uses the generic plan: the
    transaction forces it). This statement's own check is one of them."""
    listed = await reader.fetch("SELECT statement, generic_plans FROM pg_prepared_statements")
    [runs] = [row["generic_plans"] for row in listed if row["statement"] == BACKEND_PID_SQL]
    return int(runs)


async def test_the_session_is_checked_once_per_pass_not_per_batch(platform: Platform) -> None:
    for slug in ("acme", "globex", "umbrella"):
        await platform.add_tenant(slug)
    # One lane, one tenant a batch: three statements on one connection in each pass.
    settings = load(
        {"database_url": platform.exporter_url, "database_max_connections": "1", "database_batch_size": "1"}, {}
    )
    reader = Postgres(postgres_settings(settings), Timeouts(deadline=5.0))
    try:
        before = await session_checks(reader)
        rows = await reader.fetch_tenant_batches(
            "test", lambda schemas: f"SELECT count(*) + $1::int AS n FROM {schemas[0]}.evento_dead_letter", (7,)
        )
        after = await session_checks(reader)
    finally:
        await reader.close()
    assert [tuple(row) for row in rows] == [(7,), (7,), (7,)]
    # The tenant list's check, the pass's one, and the second count's own.
    assert after - before == 3


async def test_in_transaction_pool_mode_a_statement_is_unnamed_and_its_values_bound(platform: Platform) -> None:
    settings = load(
        {"database_url": platform.exporter_url, "database_pool_mode": "transaction", "database_max_connections": "1"},
        {},
    )
    reader = Postgres(postgres_settings(settings), Timeouts(deadline=5.0))
    try:
        assert [tuple(row) for row in await reader.fetch("SELECT $1::int + $2::int AS n", 40, 2)] == [(42,)]
        assert await reader.fetch("SELECT name FROM pg_prepared_statements") == []
        assert reader.prepares == 0
    finally:
        await reader.close()


async def test_a_session_lent_without_the_connections_statements_is_found_lost_in_the_servers_words(
    platform: Platform,
) -> None:
    lane = Lane()
    settings = load({"database_url": platform.exporter_url, "database_max_connections": "1"}, {})
    reader = Postgres(postgres_settings(settings), Timeouts(deadline=5.0), lanes=[lane])
    try:
        await reader.fetch("SELECT 1")
        assert lane.connection is not None
        [name] = [statement.get_name() for sql, statement in lane.prepared.items() if sql == BACKEND_PID_SQL]
        # As a transaction pooler would: the next transaction gets a session without the connection's statements.
        await lane.connection.execute("DEALLOCATE ALL")
        with pytest.raises(SessionNotKept) as lost:
            await reader.fetch("SELECT 1")
        assert lost.value.evidence == f'26000: prepared statement "{name}" does not exist'
        assert str(lost.value) == (
            "the server session of a connection changed between two of its transactions"
            f' (26000: prepared statement "{name}" does not exist): a transaction pooler is in front of the'
            " database; set --database.pool-mode transaction (ORPYCAMCP_DATABASE_POOL_MODE=transaction)"
        )
    finally:
        await reader.close()
