"""The PostgreSQL reader's connections: a few lanes (`--database.max-connections`),
each one connection, its prepared statements, and the lock that serialises its use.

A lane connects on first use, closes when unused for `idle_close` (an
unscraped exporter holds no connection), and is replaced after
`max_queries_per_connection` statements (bounding what its backend accumulates)
or when unusable (a timeout, a cancellation, a broken socket). A statement the
server refuses (one tenant's missing table, a permission) ends its own
transaction only: the connection and its prepared statements go on.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import secrets
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator, Sequence

import asyncpg

from exporter.clock import Clock, Timer
from exporter.lifecycle import CLOSE_SECONDS, Lifecycle, cancel_and_wait
from exporter.sources.postgres.transaction import ROLLBACK_SQL

# Server errors after which the connection is of no further use: the server
# ends the session (shutdown, crash, a connection failure).
CONNECTION_ENDING = (
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
)


def statement_names() -> Iterator[str]:
    """Names for one connection's prepared statements, unique across every client of
    the server: through a pooler that moves the connection to another server session,
    a name is missing there (an error) rather than another client's statement."""
    token = secrets.token_hex(8)
    return (f"orpycamcp_{token}_{number}" for number in itertools.count())


class Lane:
    """One connection, its prepared statements, and the lock that serialises its use."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.connection: asyncpg.Connection | None = None
        self.statement_names = statement_names()
        self.prepared: dict[str, asyncpg.prepared_stmt.PreparedStatement] = {}
        self.by_signal: dict[str, set[str]] = {}
        self.statements = 0  # on the current connection
        self.backend_pid: int | None = None  # the server process of the connection's first transaction
        self.idle_timer: Timer | None = None

    def forget(self) -> asyncpg.Connection | None:
        connection, self.connection = self.connection, None
        self.statement_names = statement_names()
        self.prepared = {}
        self.by_signal = {}
        self.statements = 0
        self.backend_pid = None
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        return connection


class LanePool:
    """Lends the lanes one statement at a time, connecting them with `connect`;
    `on_statement` is told of every statement that kept its connection."""

    def __init__(
        self,
        lanes: Sequence[Lane],
        connect: Callable[[], Awaitable[asyncpg.Connection]],
        *,
        life: Lifecycle,
        clock: Clock,
        client_timeout: float,
        idle_close: float,
        max_queries_per_connection: int,
        on_statement: Callable[[], None],
    ) -> None:
        self.lanes = lanes
        self._connect = connect
        self._life = life
        self._clock = clock
        self._client_timeout = client_timeout
        self._idle_close = idle_close
        self._max_queries = max_queries_per_connection
        self._on_statement = on_statement
        self._closing: set[asyncio.Task[None]] = set()
        self._lane_released = asyncio.Event()

    async def _first_free_lane(self) -> Lane:
        """Whichever lane is free first: a statement stuck on one lane (a lock,
        a slow plan) does not hold up a statement that may run on the other."""
        while True:
            for lane in self.lanes:
                if not lane.lock.locked():
                    return lane
            self._lane_released.clear()
            await self._lane_released.wait()

    @contextlib.asynccontextmanager
    async def use(self, lane: Lane | None = None) -> AsyncIterator[Lane]:
        """A lane (the given one, else the first free) with its connection, for
        one statement; the connection is kept after a statement the server
        refused, dropped after any other failure."""
        self._life.ensure_open()
        if lane is None:
            lane = await self._first_free_lane()
        await lane.lock.acquire()
        try:
            self._life.ensure_open()  # closed while this waited for the lane
            if lane.idle_timer is not None:
                lane.idle_timer.cancel()
                lane.idle_timer = None
            if lane.connection is None or lane.connection.is_closed():
                lane.forget()
                lane.connection = await self._connect()
            kept = False
            try:
                yield lane
                kept = True
            except asyncpg.PostgresError as exc:
                # The server refused this statement (a missing table, a
                # permission, a value the contract refuses): its transaction
                # ends, the connection and its prepared statements stay.
                kept = await self._rolled_back(lane, exc)
                raise
            except (asyncio.CancelledError, TimeoutError):
                # A statement may still run on the server: asyncpg asks the
                # server to cancel it, and the connection closes once that is
                # done (bounded), so no backend goes on working for nobody.
                self.close_later(lane.forget())
                raise
            finally:
                if kept:
                    self._statement_done(lane)
                else:
                    # Anything else (a timeout, a cancellation mid-statement, a
                    # dead socket, a protocol state unknown, a pooler that does
                    # not keep the session): never reuse the connection or wait
                    # on a stalled peer; drop it and its prepared statements.
                    connection = lane.forget()
                    if connection is not None:
                        connection.terminate()
        finally:
            lane.lock.release()
            self._lane_released.set()

    async def _rolled_back(self, lane: Lane, exc: asyncpg.PostgresError) -> bool:
        """Whether the transaction of a statement the server refused ended and
        left its connection usable for the next one."""
        connection = lane.connection
        if connection is None or connection.is_closed() or isinstance(exc, CONNECTION_ENDING):
            return False
        try:
            await connection.execute(ROLLBACK_SQL, timeout=self._client_timeout)
        except (TimeoutError, OSError, asyncpg.InterfaceError, asyncpg.PostgresError):
            return False
        return True

    def _statement_done(self, lane: Lane) -> None:
        lane.statements += 1
        self._on_statement()
        if lane.statements >= self._max_queries:
            # Bounds what the backend accumulates (catalog caches, plans).
            self.close_later(lane.forget())
        else:
            lane.idle_timer = self._clock.call_later(self._idle_close, lambda: self._close_idle(lane))

    def _close_idle(self, lane: Lane) -> None:
        """Nobody used the lane for idle_close: an unscraped exporter holds no connection."""
        lane.idle_timer = None
        if not lane.lock.locked() and lane.connection is not None:
            self.close_later(lane.forget())

    def close_later(self, connection: asyncpg.Connection | None) -> None:
        if connection is None:
            return
        task = asyncio.get_running_loop().create_task(self._close_connection(connection))
        self._closing.add(task)
        task.add_done_callback(self._closing.discard)

    @staticmethod
    async def _close_connection(connection: asyncpg.Connection) -> None:
        try:
            await connection.close(timeout=CLOSE_SECONDS)
        except Exception:  # whatever state it was left in, it ends here
            connection.terminate()

    async def close(self) -> None:
        """Close every connection (a statement cut is cancelled on the server first), bounded."""
        for lane in self.lanes:
            self.close_later(lane.forget())
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=CLOSE_SECONDS)
            # Past the bound, a close is cancelled: asyncpg then aborts its connection.
            await cancel_and_wait(set(self._closing), CLOSE_SECONDS)
