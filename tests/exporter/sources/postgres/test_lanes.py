"""The PostgreSQL reader's lanes, on real connections to the session's PostgreSQL,
with a clock the test moves: statement names, which failures keep a connection,
recycling, idle close, and lending the first free lane."""

from __future__ import annotations

import asyncio
import functools
import os
import re
import signal
from collections.abc import AsyncIterator, Callable

import asyncpg
import pytest

from exporter.errors import Closed
from exporter.lifecycle import CLOSE_SECONDS, Lifecycle
from exporter.sources.postgres.lanes import Lane, LanePool, statement_names
from tests.clock import FakeClock
from tests.platform import Platform
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

IDLE_SECONDS = 30.0
NAME = re.compile(r"orpycamcp_([0-9a-f]{16})_([0-9]+)")


def test_statement_names_are_numbered_under_a_token_of_their_own() -> None:
    names = statement_names()
    first = [next(names) for _ in range(3)]
    matches = [NAME.fullmatch(name) for name in first]
    assert all(match is not None for match in matches), first
    tokens = {match.group(1) for match in matches if match is not None}
    assert len(tokens) == 1
    assert [match.group(2) for match in matches if match is not None] == ["0", "1", "2"]
    # Another connection's names (another lane, another exporter): another token.
    other = next(statement_names())
    assert other.rpartition("_")[0] != first[0].rpartition("_")[0]


class Connections:
    """Opens real connections to the platform's database, and keeps them to look at."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.opened: list[asyncpg.Connection] = []

    async def __call__(self) -> asyncpg.Connection:
        connection = await asyncpg.connect(self.platform.exporter_url, statement_cache_size=0)
        self.opened.append(connection)
        return connection

    async def close(self) -> None:
        for connection in self.opened:
            connection.terminate()


class Pool:
    """A LanePool of `lanes` lanes on real connections, its clock, and its count of statements."""

    def __init__(self, platform: Platform, lanes: int = 1, max_queries: int = 100, client_timeout: float = 5.0) -> None:
        self.connections = Connections(platform)
        self.clock = FakeClock()
        self.life = Lifecycle("the lanes under test")
        self.statements = 0
        self.lanes = [Lane() for _ in range(lanes)]
        self.pool = LanePool(
            self.lanes,
            self.connections,
            life=self.life,
            clock=self.clock,  # type: ignore[arg-type]
            client_timeout=client_timeout,
            idle_close=IDLE_SECONDS,
            max_queries_per_connection=max_queries,
            on_statement=self.count,
        )

    def count(self) -> None:
        self.statements += 1

    async def run(self, sql: str = "SELECT 1") -> asyncpg.Connection:
        """`sql` in a transaction on a lane; the connection it ran on."""
        async with self.pool.use() as lane:
            connection = lane.connection
            assert connection is not None
            await connection.execute("BEGIN")
            await connection.fetch(sql)
            await connection.execute("COMMIT")
            return connection


@pytest.fixture
async def pool(platform: Platform) -> AsyncIterator[Pool]:
    made = Pool(platform)
    yield made
    await made.pool.close()
    await made.connections.close()


async def fail_on_a_lane(pool: LanePool, failure: BaseException, before: Callable[[], object] = object) -> None:
    """A statement on a lane that fails with `failure`, after `before` happened."""
    async with pool.use():
        before()
        raise failure


async def closed_soon(connection: asyncpg.Connection) -> bool:
    """Whether the connection closes within a generous bound (above CLOSE_SECONDS)."""

    async def closed() -> bool:
        return bool(connection.is_closed())

    return await wait_until(closed, 4 * CLOSE_SECONDS, step=0.01)


async def test_one_connection_serves_statement_after_statement(pool: Pool) -> None:
    connections = {await pool.run() for _ in range(3)}
    assert len(connections) == 1
    assert pool.statements == 3
    assert pool.lanes[0].statements == 3


async def test_a_statement_the_server_refuses_keeps_the_connection_and_ends_its_transaction(pool: Pool) -> None:
    connection = await pool.run()
    lane = pool.lanes[0]
    prepared = await connection.prepare("SELECT 2", name=next(lane.statement_names))
    lane.prepared["SELECT 2"] = prepared
    with pytest.raises(asyncpg.UndefinedTableError):
        await pool.run("SELECT * FROM public.no_such_table")
    assert not connection.is_in_transaction()
    assert lane.connection is connection
    assert lane.prepared == {"SELECT 2": prepared}
    assert await pool.run() is connection
    assert pool.statements == 3  # the refused one too: its connection went on


@pytest.mark.parametrize(
    "failure",
    [
        asyncpg.exceptions.AdminShutdownError("terminating connection due to administrator command"),
        asyncpg.exceptions.CrashShutdownError("the server crashed"),
        asyncpg.exceptions.CannotConnectNowError("the database system is starting up"),
        asyncpg.exceptions.ConnectionFailureError("connection failure"),
        ValueError("a reply of no known shape"),
    ],
    ids=lambda failure: type(failure).__name__,
)
async def test_a_failure_that_may_have_ended_the_session_drops_the_connection(pool: Pool, failure: Exception) -> None:
    connection = await pool.run()
    lane = pool.lanes[0]
    lane.backend_pid = connection.get_server_pid()
    with pytest.raises(type(failure)):
        await fail_on_a_lane(pool.pool, failure)
    assert connection.is_closed()
    assert (lane.connection, lane.backend_pid, lane.statements) == (None, None, 0)
    assert await pool.run() is not connection
    assert pool.statements == 2


async def test_a_refusal_on_a_connection_closed_meanwhile_drops_it(pool: Pool) -> None:
    connection = await pool.run()
    with pytest.raises(asyncpg.UndefinedTableError):
        await fail_on_a_lane(pool.pool, asyncpg.UndefinedTableError("relation does not exist"), connection.terminate)
    assert pool.lanes[0].connection is None
    assert await pool.run() is not connection


async def test_a_refusal_whose_rollback_gets_no_answer_drops_the_connection(platform: Platform) -> None:
    made = Pool(platform, client_timeout=0.3)
    try:
        connection = await made.run()
        backend = connection.get_server_pid()
        # The server session stalls: the rollback is never answered.
        stall = functools.partial(os.kill, backend, signal.SIGSTOP)
        with pytest.raises(asyncpg.UndefinedTableError):
            await fail_on_a_lane(made.pool, asyncpg.UndefinedTableError("relation does not exist"), stall)
        assert made.lanes[0].connection is None
        assert connection.is_closed()
        assert made.statements == 1
    finally:
        os.kill(backend, signal.SIGCONT)
        await made.pool.close()
        await made.connections.close()


@pytest.mark.parametrize("failure", [TimeoutError(), asyncio.CancelledError()], ids=["timeout", "cancelled"])
async def test_a_statement_cut_short_closes_its_connection(pool: Pool, failure: BaseException) -> None:
    connection = await pool.run()
    with pytest.raises(type(failure)):
        await fail_on_a_lane(pool.pool, failure)
    assert pool.lanes[0].connection is None
    assert await closed_soon(connection)
    assert pool.statements == 1


async def test_a_connection_the_server_closed_is_replaced_before_use(pool: Pool, platform: Platform) -> None:
    connection = await pool.run()
    await connection.close()
    replacement = await pool.run()
    assert replacement is not connection
    assert pool.lanes[0].statements == 1  # counted anew on the new connection


async def test_a_connection_is_replaced_after_its_share_of_statements(platform: Platform) -> None:
    made = Pool(platform, max_queries=3)
    try:
        first = [await made.run() for _ in range(3)]
        assert len(set(first)) == 1
        assert made.lanes[0].connection is None  # retired with its third statement
        assert await closed_soon(first[0])
        second = [await made.run() for _ in range(3)]
        assert len(set(second)) == 1
        assert second[0] is not first[0]
        assert made.statements == 6
    finally:
        await made.pool.close()
        await made.connections.close()


async def test_a_lane_unused_for_the_idle_time_closes_its_connection(pool: Pool) -> None:
    connection = await pool.run()
    pool.clock.advance(IDLE_SECONDS - 1)
    assert pool.lanes[0].connection is connection
    # Used again just in time: the idle time starts over.
    assert await pool.run() is connection
    pool.clock.advance(IDLE_SECONDS - 1)
    assert pool.lanes[0].connection is connection
    pool.clock.advance(1)
    assert pool.lanes[0].connection is None
    assert pool.lanes[0].idle_timer is None
    assert await closed_soon(connection)
    assert await pool.run() is not connection


async def test_a_lane_in_use_at_its_idle_time_keeps_its_connection(pool: Pool) -> None:
    connection = await pool.run()
    lane = pool.lanes[0]
    timer = lane.idle_timer
    assert timer is not None
    async with pool.pool.use() as used:
        assert used.idle_timer is None
        # The timer was cancelled when the lane was taken; fired anyway, it finds the lane busy.
        timer.callback()  # type: ignore[attr-defined]
        assert used.connection is connection
    assert lane.connection is connection


async def test_a_statement_takes_the_first_free_lane(platform: Platform) -> None:
    made = Pool(platform, lanes=2)
    try:
        release, both_taken = asyncio.Event(), asyncio.Event()
        taken: list[Lane] = []

        async def hold() -> None:
            async with made.pool.use() as lane:
                taken.append(lane)
                if len(taken) == len(made.lanes):
                    both_taken.set()
                await release.wait()

        holders = [asyncio.create_task(hold()) for _ in range(2)]
        await asyncio.wait_for(both_taken.wait(), 10)
        assert set(taken) == set(made.lanes)  # one each
        waiting = asyncio.create_task(made.run())
        await asyncio.sleep(0.05)
        assert not waiting.done()  # both lanes busy: it waits for one
        release.set()
        await asyncio.gather(*holders)
        assert await waiting in {lane.connection for lane in made.lanes}
        # A given lane is waited for, even when another is free.
        async with made.pool.use(made.lanes[1]) as lane:
            assert lane is made.lanes[1]
    finally:
        await made.pool.close()
        await made.connections.close()


async def test_after_close_no_connection_is_open_nor_opened(pool: Pool) -> None:
    connection = await pool.run()
    pool.life.close()
    await pool.pool.close()
    assert connection.is_closed()
    assert pool.lanes[0].connection is None
    with pytest.raises(Closed):
        await pool.run()
    assert pool.connections.opened == [connection]


async def test_a_lane_forgets_its_connection_and_what_it_knew_of_it(pool: Pool) -> None:
    connection = await pool.run()
    lane = pool.lanes[0]
    names_before = next(lane.statement_names)
    lane.by_signal["dlq"] = {"SELECT 1"}
    lane.backend_pid = 7
    timer = lane.idle_timer
    forgotten = lane.forget()
    connection.terminate()
    assert forgotten is connection
    assert timer is not None
    assert timer.cancelled  # type: ignore[attr-defined]
    assert what_it_knows(lane) == (None, {}, {}, 0, None, None)
    # New names for the next connection: none of the old connection's statements is ever named again.
    assert next(lane.statement_names).rpartition("_")[0] != names_before.rpartition("_")[0]
    assert lane.forget() is None


def what_it_knows(lane: Lane) -> tuple[object, ...]:
    return (lane.connection, lane.prepared, lane.by_signal, lane.statements, lane.backend_pid, lane.idle_timer)


def test_a_new_lane_knows_as_little_as_a_forgotten_one() -> None:
    fresh, forgotten = Lane(), Lane()
    forgotten.statements, forgotten.backend_pid = 3, 7
    forgotten.forget()
    assert what_it_knows(fresh) == what_it_knows(forgotten) == (None, {}, {}, 0, None, None)
    assert NAME.fullmatch(next(fresh.statement_names))


async def test_a_connection_closed_while_its_server_session_stalls_is_ended(pool: Pool) -> None:
    connection = await pool.run()
    backend = connection.get_server_pid()
    running = asyncio.all_tasks()
    os.kill(backend, signal.SIGSTOP)  # the server never answers the close
    try:
        pool.clock.advance(IDLE_SECONDS)
        assert pool.lanes[0].connection is None
        assert asyncio.all_tasks() > running  # closing

        async def closed() -> bool:
            return asyncio.all_tasks() <= running

        # Past its bound (CLOSE_SECONDS), the close gives up waiting and ends the connection.
        assert await wait_until(closed, 4 * CLOSE_SECONDS, step=0.01)
        assert connection.is_closed()
    finally:
        os.kill(backend, signal.SIGCONT)
