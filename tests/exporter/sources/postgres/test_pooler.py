"""The session check's reasoning over the server processes it sees, in process.

What a pooler does is modelled here by how it lends server sessions (pinned to a
connection; first-in first-out; last-in first-out; one at a time; none to
spare): the probe only ever sees the process id each transaction reports and
whether it had to wait. The same checks against a real PostgreSQL and real
PgBouncers, in every pool mode: test_pool_modes.py; directly, below."""

from __future__ import annotations

import asyncio
import itertools
import logging
import os
import signal
from collections import deque
from typing import Any

import asyncpg
import pytest

from exporter.sources.postgres.errors import SessionNotKept
from exporter.sources.postgres.pooler import BACKEND_PID_SQL, PoolerUndecided, SessionProbe, SessionWatch, probe_pooler
from exporter.sources.postgres.transaction import COMMIT_SQL, transaction_opening
from exporter.timeouts import Timeouts
from tests.platform import Platform

pytestmark = pytest.mark.anyio

# lock is a quarter of it: how long the probe waits for a server session.
TIMEOUTS = Timeouts(deadline=0.4)
OPENING = transaction_opening(TIMEOUTS)


class Pooler:
    """Server sessions (their process ids) lent to client connections for a transaction.

    `policy`: "pinned" (each connection keeps the session it first got, as
    directly or in a session pool), "fifo" (the session idle the longest),
    "lifo" (the one idle the shortest), "fresh" (a new session for every
    transaction, one at a time)."""

    def __init__(self, policy: str, sessions: int) -> None:
        self.policy = policy
        self.idle: deque[int] = deque(range(101, 101 + sessions))
        self.released = asyncio.Condition()
        self.new_pids = itertools.count(201)

    async def lend(self, connection: Connection) -> int:
        if self.policy == "pinned" and connection.pinned is not None:
            return connection.pinned
        async with self.released:
            await self.released.wait_for(lambda: bool(self.idle))
            pid = self.idle.pop() if self.policy == "lifo" else self.idle.popleft()
        if self.policy == "fresh":
            pid = next(self.new_pids)
        if self.policy == "pinned":
            connection.pinned = pid
        return pid

    async def give_back(self, pid: int) -> None:
        if self.policy == "pinned":
            return
        async with self.released:
            self.idle.append(pid)
            self.released.notify_all()


class Connection:
    """A client connection through `pooler`: what the probe sends, and the answers."""

    def __init__(self, pooler: Pooler) -> None:
        self.pooler = pooler
        self.pinned: int | None = None
        self.serving: int | None = None  # the server session of the open transaction
        self.sent: list[str] = []
        self.terminated = False

    async def execute(self, sql: str, timeout: float) -> None:  # noqa: ASYNC109 -- asyncpg's signature
        assert timeout == TIMEOUTS.client
        assert self.sent or sql == OPENING, "the first statement opens a transaction"
        self.sent.append(sql)
        if sql == OPENING:
            assert self.serving is None, "a transaction opened inside another"
            self.serving = await self.pooler.lend(self)
        elif sql == COMMIT_SQL:
            assert self.serving is not None, "a commit outside a transaction"
            pid, self.serving = self.serving, None
            await self.pooler.give_back(pid)
        else:
            raise AssertionError(f"unexpected statement {sql!r}")

    async def fetchval(self, sql: str, timeout: float) -> int:  # noqa: ASYNC109 -- asyncpg's signature
        assert (sql, timeout) == (BACKEND_PID_SQL, TIMEOUTS.client)
        assert self.serving is not None, "read outside a transaction"
        self.sent.append(sql)
        return self.serving

    def terminate(self) -> None:
        self.terminated = True


async def probe(policy: str, sessions: int) -> tuple[SessionProbe, Connection, Connection]:
    pooler = Pooler(policy, sessions)
    first, second = Connection(pooler), Connection(pooler)
    result = await probe_pooler(first, second, OPENING, TIMEOUTS)
    return result, first, second


@pytest.mark.parametrize("sessions", [2, 3])
async def test_a_connection_that_keeps_its_session_is_kept(sessions: int) -> None:
    result, first, second = await probe("pinned", sessions)
    assert result == SessionProbe(True, "server process 101 kept between transactions")
    # Each connection ran two transactions, both committed: nothing left open.
    for connection in (first, second):
        assert connection.sent == [OPENING, BACKEND_PID_SQL, COMMIT_SQL] * 2
        assert connection.serving is None


@pytest.mark.parametrize(
    ("policy", "sessions", "evidence"),
    [
        # The idle session lent last-in first-out: the second connection gets the first's.
        ("lifo", 2, "server process 102 served two connections in turn"),
        ("fifo", 1, "server process 101 served two connections in turn"),
        # First-in first-out over three: the first connection's next transaction gets another.
        ("fifo", 3, "server process 101 became 103 between two transactions"),
        # ... over two: the second connection's does.
        ("fifo", 2, "server process 102 became 101 between two transactions"),
    ],
)
async def test_a_session_lent_to_another_connection_or_changed_is_told(
    policy: str, sessions: int, evidence: str
) -> None:
    result, _, _ = await probe(policy, sessions)
    assert result == SessionProbe(False, evidence)


async def test_a_connection_that_waits_for_another_ones_transaction_is_told_by_what_it_gets_then() -> None:
    # One server session at a time, a new one each time: the second connection's
    # differs from the first's, and the first then waits for it; once the
    # second's transaction ends, the first gets yet another server process.
    result, first, second = await probe("fresh", 1)
    assert result == SessionProbe(False, "server process 201 became 203 between two transactions")
    assert first.sent == [OPENING, BACKEND_PID_SQL, COMMIT_SQL] * 2
    assert second.sent == [OPENING, BACKEND_PID_SQL, COMMIT_SQL]


async def test_a_second_connection_that_gets_no_session_in_time_leaves_it_undecided() -> None:
    with pytest.raises(PoolerUndecided) as undecided:
        await probe("pinned", 1)
    assert str(undecided.value) == undecided.value.evidence
    assert undecided.value.evidence == ("a second connection got no server session in time (a pool with none to spare)")


def test_a_lost_session_is_logged_once_and_refuses_every_read_after(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.ERROR, logger="orpycamcp.postgres")
    watch = SessionWatch()
    watch.refuse_if_lost()  # nothing lost yet: nothing raised
    first = watch.not_kept("server process 1 became 2")
    second = watch.not_kept("server process 3 became 4")
    assert (first.evidence, second.evidence) == ("server process 1 became 2", "server process 3 became 4")
    assert watch.session_not_kept is first
    assert [record.getMessage() for record in caplog.records] == [str(first)]
    assert caplog.records[0].__dict__["reason"] == str(first.reason)
    for _ in range(2):
        with pytest.raises(SessionNotKept) as refused:
            watch.refuse_if_lost()
        assert refused.value.evidence == "server process 1 became 2"


class Opener:
    """Opens the second connection of a probe (through `pooler`), or fails to."""

    def __init__(self, pooler: Pooler, failure: BaseException | None = None) -> None:
        self.pooler = pooler
        self.failure = failure
        self.opened: list[Connection] = []

    async def __call__(self) -> Any:
        if self.failure is not None:
            raise self.failure
        connection = Connection(self.pooler)
        self.opened.append(connection)
        return connection


async def require_kept(
    policy: str, sessions: int, watch: SessionWatch, failure: BaseException | None = None
) -> tuple[Connection, Opener]:
    pooler = Pooler(policy, sessions)
    connection = Connection(pooler)
    opener = Opener(pooler, failure)
    await watch.require_kept(connection, opener, OPENING, TIMEOUTS)
    return connection, opener


async def test_a_connection_that_keeps_its_session_is_kept_and_the_other_dropped() -> None:
    watch = SessionWatch()
    connection, opener = await require_kept("pinned", 2, watch)
    assert not connection.terminated
    assert [other.terminated for other in opener.opened] == [True]
    assert watch.session_not_kept is None


async def test_a_connection_that_does_not_keep_its_session_is_dropped_and_refused() -> None:
    watch = SessionWatch()
    with pytest.raises(SessionNotKept) as refused:
        await require_kept("lifo", 2, watch)
    assert refused.value.evidence == "server process 102 served two connections in turn"
    assert watch.session_not_kept is refused.value
    with pytest.raises(SessionNotKept):
        watch.refuse_if_lost()


async def test_a_probe_left_undecided_keeps_the_connection_and_says_so(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="orpycamcp.postgres")
    watch = SessionWatch()
    connection, opener = await require_kept("pinned", 1, watch)
    assert not connection.terminated
    assert [other.terminated for other in opener.opened] == [True]
    assert watch.session_not_kept is None
    assert [record.getMessage() for record in caplog.records] == [
        "whether the connection path keeps sessions was not checked: a second connection got no server session in time"
        " (a pool with none to spare); checked on every pass instead"
    ]


@pytest.mark.parametrize("failure", [OSError("connection refused"), asyncio.CancelledError()])
async def test_a_probe_that_fails_drops_the_connection_and_raises(failure: BaseException) -> None:
    watch = SessionWatch()
    pooler = Pooler("pinned", 2)
    connection = Connection(pooler)
    with pytest.raises(type(failure)):
        await watch.require_kept(connection, Opener(pooler, failure), OPENING, TIMEOUTS)
    assert connection.terminated
    assert watch.session_not_kept is None


async def test_a_direct_connection_keeps_its_server_process(platform: Platform) -> None:
    first = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    second = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    # Time on a loaded machine decides nothing either way: limits far from any scheduling delay.
    timeouts = Timeouts(deadline=4)
    try:
        pid = first.get_server_pid()
        assert await probe_pooler(first, second, transaction_opening(timeouts), timeouts) == SessionProbe(
            True, f"server process {pid} kept between transactions"
        )
        # Both connections' transactions ended: each is ready for the next.
        assert not first.is_in_transaction()
        assert not second.is_in_transaction()
    finally:
        await first.close()
        await second.close()


class Stopping:
    """An asyncpg connection whose server process is stopped (SIGSTOP) as its
    second transaction opens, and continued when `resume` is called."""

    def __init__(self, connection: asyncpg.Connection, opening: str) -> None:
        self.connection = connection
        self.opening = opening
        self.server_pid = connection.get_server_pid()
        self.openings = 0
        self.stopped = False

    async def execute(self, sql: str, timeout: float) -> None:  # noqa: ASYNC109 -- asyncpg's signature
        if sql == self.opening:
            self.openings += 1
            if self.openings == 2:
                os.kill(self.server_pid, signal.SIGSTOP)
                self.stopped = True
        await self.connection.execute(sql, timeout=timeout)

    async def fetchval(self, sql: str, timeout: float) -> Any:  # noqa: ASYNC109 -- asyncpg's signature
        return await self.connection.fetchval(sql, timeout=timeout)

    def terminate(self) -> None:
        self.connection.terminate()

    def resume(self) -> None:
        if self.stopped:
            os.kill(self.server_pid, signal.SIGCONT)
            self.stopped = False


class ResumingOnCommit:
    """An asyncpg connection that continues `stopped` once its own transaction committed."""

    def __init__(self, connection: asyncpg.Connection, stopped: Stopping) -> None:
        self.connection = connection
        self.stopped = stopped
        self.resumed = False

    async def execute(self, sql: str, timeout: float) -> None:  # noqa: ASYNC109 -- asyncpg's signature
        await self.connection.execute(sql, timeout=timeout)
        if sql == COMMIT_SQL:
            self.stopped.resume()
            self.resumed = True

    async def fetchval(self, sql: str, timeout: float) -> Any:  # noqa: ASYNC109 -- asyncpg's signature
        return await self.connection.fetchval(sql, timeout=timeout)


async def test_a_server_too_slow_for_the_lock_wait_is_no_pooler(platform: Platform) -> None:
    # The first connection's server process stands still through the whole lock
    # wait and continues only once the second's transaction ended: it answers
    # from its own process, so the session is kept. Time alone decides nothing.
    timeouts = Timeouts(deadline=4)
    opening = transaction_opening(timeouts)
    first = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    second = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    stopping = Stopping(first, opening)
    try:
        pid = first.get_server_pid()
        result = await probe_pooler(stopping, ResumingOnCommit(second, stopping), opening, timeouts)
        assert result == SessionProbe(True, f"server process {pid} kept between transactions")
        assert stopping.openings == 2
    finally:
        stopping.resume()
        await first.close()
        await second.close()


async def test_a_server_that_never_answers_leaves_it_undecided_and_the_connection_dropped(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    # Stopped for good: even once the other transaction ended, no answer. The
    # probe decides nothing, records nothing, and the connection in doubt is
    # dropped; the next connection is probed anew.
    first = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    stopping = Stopping(first, OPENING)
    watch = SessionWatch()

    async def open_other() -> Any:
        return await asyncpg.connect(platform.exporter_url, statement_cache_size=0)

    try:
        with pytest.raises(TimeoutError) as timed_out:
            await watch.require_kept(stopping, open_other, OPENING, TIMEOUTS)
        assert "even once the other connection's ended" in str(timed_out.value)
        assert watch.session_not_kept is None
        assert first.is_closed()
    finally:
        stopping.resume()
        first.terminate()
    # The next connection, on a server that answers, is probed and kept.
    again = await asyncpg.connect(platform.exporter_url, statement_cache_size=0)
    try:
        await watch.require_kept(again, open_other, OPENING, TIMEOUTS)
        assert not again.is_closed()
        assert watch.session_not_kept is None
    finally:
        await again.close()
