"""PostgreSQL access for many tenant schemas.

A few connections ("lanes", `max_connections`), opened on first use, closed
when idle, replaced after `max_queries_per_connection` statements or when
unusable (a timeout, a cancellation, a broken socket). A statement the server
refuses (one tenant's missing table, a permission) ends its own transaction
only: the connection, its prepared statements and the other lanes go on.
Tenant schemas are read in batches, one statement each.

Every statement runs in a transaction of its own that carries its guarantees
with it: `BEGIN READ ONLY` and `SET LOCAL` of the statement and lock timeouts,
no parallel workers, no JIT, TimeZone UTC, generic plans, sent as one
simple-query message (one round trip), then the statement, then COMMIT, which
releases the locks of its tables before the next one. Nothing is set for the session (only `application_name`
at connect, which every pooler accepts), so the guarantees hold whatever road
leads to the server: directly, or through a session or a transaction pooler.

Pool modes (`PoolMode`):
- session (a direct connection, or a session pooler): the batch statements are
  prepared deliberately (named) on their lane and reused on every refresh:
  PostgreSQL plans each one once per connection, and a many-table statement
  costs far more to plan than to run. Names carry a random token of their
  connection, so on a road that moves a connection between server sessions a
  name can never resolve to another client's statement: it is missing, and
  that (or the server process changing under the connection) is reported as
  `SessionNotKept`, never a number.
- transaction (a transaction pooler): nothing outlives a transaction: every
  statement is unnamed, parsed and planned inside the transaction it runs in.

Each lane owns a contiguous range of each signal's tenants (each signal
starting on its own lane), so a backend only ever opens (and keeps in its
catalog caches) its share of the tenant tables, and its share of the prepared
plans. How the tenants are cut into batches: exporter/sources/batches.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import logging
import secrets
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from enum import StrEnum

import asyncpg

from exporter.clock import SYSTEM_CLOCK, Clock, Timer
from exporter.errors import SessionNotKept, TenantListUnreadable, server_words
from exporter.lifecycle import CLOSE_SECONDS, Lifecycle, cancel_and_wait
from exporter.replication import STANDBY_SQL, ReplicaLink, require_fresh, standby_link
from exporter.sources.batches import BatchProgress, lane_shares, tenant_batches
from exporter.sources.connect import connect
from exporter.sources.identifiers import tenant_schema
from exporter.sources.postgres_errors import typed_errors
from exporter.sources.road import BACKEND_PID_SQL, COMMIT_SQL, RoadUndecided, SessionProbe, probe_road
from exporter.timeouts import Timeouts

log = logging.getLogger("orpycamcp.postgres")

# Errors that say public.tenants itself is missing or out of the role's reach.
UNREADABLE_TENANT_LIST = (
    asyncpg.exceptions.UndefinedTableError,
    asyncpg.exceptions.InsufficientPrivilegeError,
    asyncpg.exceptions.UndefinedColumnError,
)
ACTIVE_TENANTS_SQL = "SELECT slug FROM public.tenants WHERE provisioning_status = 'active' ORDER BY slug"
ROLLBACK_SQL = "ROLLBACK"
# Server errors after which the connection is of no further use: the server
# ends the session (shutdown, crash, a connection failure).
CONNECTION_ENDING = (
    asyncpg.exceptions.PostgresConnectionError,
    asyncpg.exceptions.AdminShutdownError,
    asyncpg.exceptions.CrashShutdownError,
    asyncpg.exceptions.CannotConnectNowError,
)
# A prepared statement the server does not know (26000), or a name it already
# knows (42P05): the connection's server session is not the one it prepared on.
_SESSION_STATE_LOST = (
    asyncpg.exceptions.InvalidSQLStatementNameError,
    asyncpg.exceptions.DuplicatePreparedStatementError,
)


class PoolMode(StrEnum):
    """What the road to the server keeps between two transactions of one connection."""

    SESSION = "session"  # the server session: a direct connection, or a session pooler
    TRANSACTION = "transaction"  # nothing: a transaction pooler


@dataclass(frozen=True, kw_only=True)
class PostgresSettings:
    """Built from the options that feed it (exporter.settings), which hold every default."""

    url: str = field(repr=False)  # it may hold the password
    max_connections: int
    batch_size: int
    idle_close_seconds: float
    max_queries_per_connection: int
    pool_mode: PoolMode
    replica_max_staleness: float
    application_name: str = "orpycamcp-exporter"


def milliseconds(seconds: float) -> str:
    return str(max(1, int(seconds * 1000)))


def transaction_opening(timeouts: Timeouts) -> str:
    """The statements opening every transaction, sent as one simple-query message.

    Measured against the alternatives (`SELECT set_config(..., true)` after the
    BEGIN, or each SET on its own), this is the cheapest: the settings cost no
    round trip of their own.
    """
    return (
        "BEGIN TRANSACTION READ ONLY;"
        f" SET LOCAL statement_timeout = {milliseconds(timeouts.statement)};"
        f" SET LOCAL lock_timeout = {milliseconds(timeouts.lock)};"
        # Parallel workers each open every tenant table cold: these many-table
        # statements run several times faster without them.
        " SET LOCAL max_parallel_workers_per_gather = 0;"
        # A timestamp without time zone compared with now() (declared arrivals) is read as UTC.
        " SET LOCAL TimeZone = 'UTC';"
        # A large batch can cross jit_above_cost; compiling it costs more than running it.
        " SET LOCAL jit = off;"
        # A statement binding values (a declared backlog's pending values) would
        # otherwise be planned anew for its first 5 runs on every connection;
        # the plans do not depend on those values.
        " SET LOCAL plan_cache_mode = force_generic_plan"
    )


def _statement_names() -> Iterator[str]:
    """Names for one connection's prepared statements, unique across every client of
    the server: through a road that moves the connection to another server session,
    a name is missing there (an error) rather than another client's statement."""
    token = secrets.token_hex(8)
    return (f"orpycamcp_{token}_{number}" for number in itertools.count())


class _Lane:
    """One connection, its prepared statements, and the lock that serialises its use."""

    def __init__(self) -> None:
        self.lock = asyncio.Lock()
        self.connection: asyncpg.Connection | None = None
        self.statement_names = _statement_names()
        self.prepared: dict[str, asyncpg.prepared_stmt.PreparedStatement] = {}
        self.by_signal: dict[str, set[str]] = {}
        self.statements = 0  # on the current connection
        self.backend_pid: int | None = None  # the server process of the connection's first transaction
        self.idle_timer: Timer | None = None

    def forget(self) -> asyncpg.Connection | None:
        connection, self.connection = self.connection, None
        self.statement_names = _statement_names()
        self.prepared = {}
        self.by_signal = {}
        self.statements = 0
        self.backend_pid = None
        if self.idle_timer is not None:
            self.idle_timer.cancel()
            self.idle_timer = None
        return connection


class _Road:
    """What the readers of one set of lanes learned about the road to the server."""

    def __init__(self) -> None:
        # Set once a connection's server session did not last in session pool
        # mode: it will not start lasting, so the signals stay unmeasured (with
        # the setting to change) instead of flapping between measured and not.
        self.session_not_kept: SessionNotKept | None = None


class Postgres:
    """Reads the contract tables; connects on first use, reconnects by itself."""

    def __init__(
        self,
        settings: PostgresSettings,
        timeouts: Timeouts,
        tenants: Sequence[str] | None = None,
        lanes: Sequence[_Lane] | None = None,
        road: _Road | None = None,
        life: Lifecycle | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.settings = settings
        self.timeouts = timeouts
        self._tenants = None if tenants is None else list(tenants)
        self._lanes = list(lanes) if lanes is not None else [_Lane() for _ in range(max(1, settings.max_connections))]
        self._road = road if road is not None else _Road()
        self._life = life if life is not None else Lifecycle("the PostgreSQL reader")
        self.clock = clock
        self._opening = transaction_opening(timeouts)
        self._closing: set[asyncio.Task[None]] = set()
        self._lane_released = asyncio.Event()
        self._signal_lanes: dict[str, int] = {}
        self._tenants_in_flight: asyncio.Task[list[str]] | None = None
        self._standby_in_flight: asyncio.Task[ReplicaLink | None] | None = None
        self._passes: dict[str, asyncio.Task[list[asyncpg.Record]]] = {}
        self.statements = 0  # statements run, for the benchmarks and diagnose
        self.prepares = 0  # statements prepared by name (planned anew), in session mode

    # -- lanes ---------------------------------------------------------------

    async def _connect(self) -> asyncpg.Connection:
        """A new connection for a lane; in session pool mode, only once the road is
        known to keep its server session (so no value is ever read on one that
        does not)."""
        connection = await self._open()
        if self.settings.pool_mode is PoolMode.SESSION:
            await self._decide_road(connection)
        return connection

    async def _decide_road(self, connection: asyncpg.Connection) -> None:
        """Raises SessionNotKept (and drops `connection`) unless it keeps its server session."""
        try:
            other = await self._open()
            try:
                probe = await probe_road(connection, other, self._opening, self.timeouts)
            finally:
                other.terminate()
        except RoadUndecided as undecided:
            # As before the probe: every pass still checks the server process and
            # every statement name, so a changed session is found, never read.
            log.warning("the road to the database was not checked: %s; checked on every pass instead", undecided)
            return
        except BaseException:
            connection.terminate()
            raise
        if not probe.kept:
            connection.terminate()
            raise self._session_not_kept(probe.evidence)

    async def _open(self) -> asyncpg.Connection:
        s = self.settings
        connection: asyncpg.Connection = await connect(
            s.url,
            timeout=self.timeouts.connect,
            # The one startup parameter every pooler accepts; the guarantees
            # travel with each transaction instead.
            server_settings={"application_name": s.application_name},
            # asyncpg's own statement names repeat across connections (a
            # transaction pooler could resolve one to another client's
            # statement): the statements are named here, or not at all.
            statement_cache_size=0,
        )
        return connection

    async def _first_free_lane(self) -> _Lane:
        """Whichever lane is free first: a statement stuck on one lane (a lock,
        a slow plan) does not hold up a statement that may run on the other."""
        while True:
            for lane in self._lanes:
                if not lane.lock.locked():
                    return lane
            self._lane_released.clear()
            await self._lane_released.wait()

    @contextlib.asynccontextmanager
    async def _use(self, lane: _Lane | None = None) -> AsyncIterator[_Lane]:
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
                self._close_later(lane.forget())
                raise
            finally:
                if kept:
                    self._statement_done(lane)
                else:
                    # Anything else (a timeout, a cancellation mid-statement, a
                    # dead socket, a protocol state unknown, a road that does
                    # not keep the session): never reuse the connection or wait
                    # on a stalled peer; drop it and its prepared statements.
                    connection = lane.forget()
                    if connection is not None:
                        connection.terminate()
        finally:
            lane.lock.release()
            self._lane_released.set()

    async def _rolled_back(self, lane: _Lane, exc: asyncpg.PostgresError) -> bool:
        """Whether the transaction of a statement the server refused ended and
        left its connection usable for the next one."""
        connection = lane.connection
        if connection is None or connection.is_closed() or isinstance(exc, CONNECTION_ENDING):
            return False
        try:
            await connection.execute(ROLLBACK_SQL, timeout=self.timeouts.client)
        except (TimeoutError, OSError, asyncpg.InterfaceError, asyncpg.PostgresError):
            return False
        return True

    def _statement_done(self, lane: _Lane) -> None:
        lane.statements += 1
        self.statements += 1
        if lane.statements >= self.settings.max_queries_per_connection:
            # Bounds what the backend accumulates (catalog caches, plans).
            self._close_later(lane.forget())
        else:
            lane.idle_timer = self.clock.call_later(self.settings.idle_close_seconds, lambda: self._close_idle(lane))

    # -- transactions --------------------------------------------------------

    async def _transaction(
        self, lane: _Lane, sql: str, args: Sequence[object], check_session: bool
    ) -> list[asyncpg.Record]:
        """`sql` (`args` bound) in a read-only transaction of its own, with its own limits.

        Session mode: the statement is prepared (named) once per connection;
        with `check_session`, the transaction first makes sure it runs in the
        server session the connection started with.
        """
        connection = lane.connection
        assert connection is not None  # set by _use
        client = self.timeouts.client
        await connection.execute(self._opening, timeout=client)
        if self.settings.pool_mode is PoolMode.TRANSACTION:
            # Unnamed: parsed, planned and run inside this transaction, so on
            # the one server session the pooler lends for it.
            rows: list[asyncpg.Record] = await connection.fetch(sql, *args, timeout=client)
        else:
            if check_session or lane.backend_pid is None:
                await self._check_session(lane)
            rows = await self._fetch_prepared(lane, sql, args)
        await connection.execute(COMMIT_SQL, timeout=client)
        return rows

    async def _fetch_prepared(self, lane: _Lane, sql: str, args: Sequence[object] = ()) -> list[asyncpg.Record]:
        connection = lane.connection
        assert connection is not None  # set by _use
        try:
            statement = lane.prepared.get(sql)
            if statement is None:
                statement = await connection.prepare(sql, name=next(lane.statement_names), timeout=self.timeouts.client)
                self.prepares += 1
                lane.prepared[sql] = statement
            try:
                rows: list[asyncpg.Record] = await statement.fetch(*args, timeout=self.timeouts.client)
            except asyncpg.exceptions.FeatureNotSupportedError:
                # "cached plan must not change result type": a table changed under
                # the statement; prepared anew next time, else it fails on every use.
                lane.prepared.pop(sql, None)
                raise
        except _SESSION_STATE_LOST as exc:
            raise self._session_not_kept(server_words(exc)) from exc
        return rows

    async def _check_session(self, lane: _Lane) -> None:
        """The server process of this transaction is the connection's first one."""
        pid: int = (await self._fetch_prepared(lane, BACKEND_PID_SQL))[0][0]
        if lane.backend_pid is None:
            lane.backend_pid = pid
        elif pid != lane.backend_pid:
            raise self._session_not_kept(f"server process {lane.backend_pid} became {pid}")

    def _session_not_kept(self, evidence: str) -> SessionNotKept:
        error = SessionNotKept(evidence)
        if self._road.session_not_kept is None:
            self._road.session_not_kept = error
            log.error("%s", error, extra={"reason": str(error.reason)})
        return error

    def _refuse_lost_session(self) -> None:
        """In session mode on a road that does not keep sessions, nothing is read any more."""
        lost = self._road.session_not_kept
        if lost is not None and self.settings.pool_mode is PoolMode.SESSION:
            raise SessionNotKept(lost.evidence)

    def _close_idle(self, lane: _Lane) -> None:
        """Nobody used the lane for idle_close_seconds: an unscraped exporter holds no connection."""
        lane.idle_timer = None
        if not lane.lock.locked() and lane.connection is not None:
            self._close_later(lane.forget())

    def _close_later(self, connection: asyncpg.Connection | None) -> None:
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

    # -- public --------------------------------------------------------------

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        """The rows of one statement (`args` bound), in a transaction of its own."""
        with typed_errors():
            return await self._fetch(sql, args)

    async def _fetch(self, sql: str, args: Sequence[object]) -> list[asyncpg.Record]:
        self._refuse_lost_session()
        async with self._use() as lane:
            return await self._transaction(lane, sql, args, check_session=True)

    async def probe_session(self) -> SessionProbe:
        """Whether a connection keeps its server session between its transactions
        (exporter.sources.road), whatever the pool mode (for diagnose)."""
        self._life.ensure_open()
        with typed_errors():
            return await self._probe_session()

    async def _probe_session(self) -> SessionProbe:
        first = await self._open()
        try:
            second = await self._open()
            try:
                return await probe_road(first, second, self._opening, self.timeouts)
            finally:
                second.terminate()
        finally:
            first.terminate()

    def narrowed(self, tenants: Sequence[str]) -> Postgres:
        """A reader of just these tenants, on this reader's connections (diagnose
        uses it to find the tenant a signal fails on)."""
        return Postgres(
            self.settings,
            self.timeouts,
            tenants=tenants,
            lanes=self._lanes,
            road=self._road,
            life=self._life,
            clock=self.clock,
        )

    async def standby_link(self) -> ReplicaLink | None:
        """How far behind its primary the server read may be (None on a primary),
        read once for the signals (and the replay-lag gauge) that ask at the same time."""
        if self._standby_in_flight is None:
            task = asyncio.get_running_loop().create_task(self._read_standby())
            self._standby_in_flight = task
            task.add_done_callback(self._standby_read)
        return await asyncio.shield(self._standby_in_flight)

    def _standby_read(self, task: asyncio.Task[ReplicaLink | None]) -> None:
        self._standby_in_flight = None
        if not task.cancelled():
            task.exception()  # retrieved here too, in case every reader gave up waiting

    async def _read_standby(self) -> ReplicaLink | None:
        row = (await self.fetch(STANDBY_SQL))[0]
        return standby_link(bool(row["standby"]), row["lag"])

    async def require_fresh(self, signal: str) -> None:
        """Raises ReplicaStale when the server read is a standby too far behind its primary."""
        link = await self.standby_link()
        require_fresh(signal, link, self.settings.replica_max_staleness, "--database.replica-max-staleness")

    async def active_tenant_slugs(self) -> list[str]:
        """The active tenants, read once for the signals that ask at the same time."""
        self._life.ensure_open()
        if self._tenants is not None:
            return list(self._tenants)
        if self._tenants_in_flight is None:
            task = asyncio.get_running_loop().create_task(self._read_tenants())
            self._tenants_in_flight = task
            task.add_done_callback(self._tenants_read)
        with typed_errors():
            return list(await asyncio.shield(self._tenants_in_flight))

    def _tenants_read(self, task: asyncio.Task[list[str]]) -> None:
        self._tenants_in_flight = None
        if not task.cancelled():
            task.exception()  # retrieved here too, in case every reader gave up waiting

    async def _read_tenants(self) -> list[str]:
        try:
            rows = await self._fetch(ACTIVE_TENANTS_SQL, ())
        except UNREADABLE_TENANT_LIST as exc:
            raise TenantListUnreadable(exc.sqlstate, str(exc)) from exc
        return [row["slug"] for row in rows]

    async def fetch_tenant_batches(
        self, signal: str, batch_sql: Callable[[Sequence[str]], str], args: Sequence[object] = ()
    ) -> list[asyncpg.Record]:
        """Run `batch_sql` over every active tenant's schema, batch by batch,
        binding `args` to every batch's statement.

        Each batch is one statement in its own transaction. The batches are
        split into contiguous ranges, one per lane; the lanes run side by side,
        one statement at a time each, so signals measured at the same time
        interleave on them.
        """
        self._life.ensure_open()
        self._refuse_lost_session()
        previous = self._passes.get(signal)
        if previous is not None:
            # The pass a deadline cut is still warming the lanes: let it end first.
            with contextlib.suppress(Exception):
                await asyncio.shield(previous)
        slugs = await self.active_tenant_slugs()
        batches = tenant_batches(slugs, self.settings.batch_size)
        statements = [batch_sql([tenant_schema(signal, slug) for slug in batch]) for batch in batches]
        task = asyncio.get_running_loop().create_task(self._run_batches(signal, statements, args))
        self._passes[signal] = task
        task.add_done_callback(lambda done: self._pass_done(signal, done))
        # Shielded: a measurement cut at its deadline leaves the pass running to
        # its end (each statement bounded by statement_timeout), so what it
        # prepared and the catalogs it loaded serve the next refresh instead of
        # being thrown away with the connection.
        with typed_errors():
            return await asyncio.shield(task)

    def _pass_done(self, signal: str, task: asyncio.Task[list[asyncpg.Record]]) -> None:
        if self._passes.get(signal) is task:
            del self._passes[signal]
        if not task.cancelled():
            task.exception()  # retrieved here too, in case the measurement gave up waiting

    async def _run_batches(
        self, signal: str, statements: Sequence[str], args: Sequence[object]
    ) -> list[asyncpg.Record]:
        # Each signal starts on its own lane: with few batches the signals run
        # side by side instead of queueing on the first lane. Every lane still
        # reads one contiguous share of each signal's tenants.
        offset = self._signal_lanes.setdefault(signal, len(self._signal_lanes))
        lanes = [self._lanes[(i + offset) % len(self._lanes)] for i in range(min(len(self._lanes), len(statements)))]
        rows: list[asyncpg.Record] = []
        progress = BatchProgress(asyncio.get_running_loop().time)

        failures: list[Exception] = []

        async def run(lane: _Lane, sqls: Sequence[str]) -> None:
            used: set[str] = set()
            for index, sql in enumerate(sqls):
                if failures:
                    # The pass is unmeasured already: the other lanes stop
                    # between two statements, never in the middle of one, so
                    # their connections and prepared statements stay.
                    return
                try:
                    async with self._use(lane):
                        # The session is checked once per pass on each lane; every
                        # statement name is checked by the server on every use.
                        rows.extend(await self._transaction(lane, sql, args, check_session=index == 0))
                except Exception as exc:
                    failures.append(exc)
                    return
                used.add(sql)
                progress.done(signal, len(statements))
            # Statements of this signal no longer needed (the tenants changed)
            # are released, and closed on the server with the next prepare.
            for stale in lane.by_signal.get(signal, set()) - used:
                lane.prepared.pop(stale, None)
            lane.by_signal[signal] = used

        async with asyncio.TaskGroup() as group:
            for lane, share in zip(lanes, lane_shares(statements, len(lanes)), strict=True):
                group.create_task(run(lane, share))
        if failures:
            raise failures[0]  # the first failure speaks for the pass
        return rows

    async def close(self) -> None:
        """Cancel the passes, the tenant list and the standby check in flight, then
        close every connection (a statement cut is cancelled on the server first),
        each step bounded; nothing connects again."""
        self._life.close()
        await cancel_and_wait([*self._passes.values(), self._tenants_in_flight, self._standby_in_flight])
        for lane in self._lanes:
            self._close_later(lane.forget())
        if self._closing:
            await asyncio.wait(set(self._closing), timeout=CLOSE_SECONDS)
            # Past the bound, a close is cancelled: asyncpg then aborts its connection.
            await cancel_and_wait(set(self._closing), CLOSE_SECONDS)
