"""The reader's statements in session pool mode, on the session's PostgreSQL:
prepared once per connection under the lane's own names, and prepared anew
when a table changed under one. (Through real PgBouncers: test_pool_modes.py.)"""

from __future__ import annotations

import re
from collections.abc import AsyncIterator

import pytest

from exporter.errors import DatabaseRefused, SessionNotKept
from exporter.loading import load
from exporter.service import postgres_settings
from exporter.sources.lanes import Lane
from exporter.sources.pooler import BACKEND_PID_SQL
from exporter.sources.postgres import Postgres
from exporter.timeouts import Timeouts
from tests.platform import Platform

pytestmark = pytest.mark.anyio

NAME = re.compile(r"orpycamcp_[0-9a-f]{16}_[0-9]+")


@pytest.fixture
async def reader(platform: Platform) -> AsyncIterator[Postgres]:
    # One lane: every statement on one connection, whose prepared statements the server lists.
    settings = load({"database_url": platform.exporter_url, "max_connections": "1"}, {})
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
    settings = load({"database_url": platform.exporter_url, "max_connections": "1"}, {})
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
