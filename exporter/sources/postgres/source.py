"""PostgreSQL reads for many tenant schemas: the tenant list, single statements,
and passes of batch statements over every tenant.

Every statement runs in a transaction of its own that carries its guarantees
with it (exporter/sources/postgres/transaction.py), on one of a few connections
("lanes", exporter/sources/postgres/lanes.py). Nothing is set for the session (only
`application_name` at connect, which every pooler accepts), so the guarantees
hold on every path to the server: directly, or through a session or a
transaction pooler.

Pool modes (`PoolMode`):
- session (a direct connection, or a session pooler): the batch statements are
  prepared deliberately (named) on their lane and reused on every refresh:
  PostgreSQL plans each one once per connection, and a many-table statement
  costs far more to plan than to run. Names carry a random token of their
  connection, so through a pooler that moves a connection between server sessions a
  name can never resolve to another client's statement: it is missing, and
  that (or the server process changing under the connection) is reported as
  `SessionNotKept`, never a number (exporter/sources/postgres/pooler.py).
- transaction (a transaction pooler): nothing outlives a transaction: every
  statement is unnamed, parsed and planned inside the transaction it runs in.

A pass reads one signal's batches: each lane owns a contiguous range of each
signal's tenants (each signal starting on its own lane), so a backend only ever
opens (and keeps in its catalog caches) its share of the tenant tables, and its
share of the prepared plans. How the tenants are cut into batches:
exporter/sources/postgres/batches.py.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field

import asyncpg

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.errors import ContractViolation, TenantListUnreadable
from exporter.freshness import STANDBY_SQL, ReplicaLink, require_fresh, standby_link
from exporter.lifecycle import Lifecycle, cancel_and_wait
from exporter.options import flag_of
from exporter.reading import CachedReading
from exporter.sources.postgres.batches import tenant_batches
from exporter.sources.postgres.column_types import ResultTypes
from exporter.sources.postgres.connect import connect
from exporter.sources.postgres.errors import row_security_table, server_words, typed_errors
from exporter.sources.postgres.identifiers import tenant_schema
from exporter.sources.postgres.lanes import Lane, LanePool
from exporter.sources.postgres.passes import run_pass
from exporter.sources.postgres.pool_mode import PoolMode
from exporter.sources.postgres.pooler import BACKEND_PID_SQL, SessionProbe, SessionWatch, probe_pooler
from exporter.sources.postgres.transaction import COMMIT_SQL, transaction_opening
from exporter.sources.url_secrets import server_mask
from exporter.tenant_list import TenantList
from exporter.timeouts import Timeouts

# Errors that say public.tenants itself is missing or out of the role's reach.
UNREADABLE_TENANT_LIST = (
    asyncpg.exceptions.UndefinedTableError,
    asyncpg.exceptions.InsufficientPrivilegeError,
    asyncpg.exceptions.UndefinedColumnError,
)
# A prepared statement the server does not know (26000), or a name it already
# knows (42P05): the connection's server session is not the one it prepared on.
_SESSION_STATE_LOST = (
    asyncpg.exceptions.InvalidSQLStatementNameError,
    asyncpg.exceptions.DuplicatePreparedStatementError,
)


# What the exporter's sessions are called unless the URL names them (application_name=).
APPLICATION_NAME = "orpycamcp-exporter"


@dataclass(frozen=True, kw_only=True)
class PostgresSettings:
    """Built from the options (exporter.service), which hold every default."""

    url: str = field(repr=False)  # it may hold the password
    max_connections: int
    batch_size: int
    idle_close: float
    max_queries_per_connection: int
    pool_mode: PoolMode
    replica_max_staleness: float
    application_name: str
    tenants: TenantList  # which tenants are measured (exporter.tenant_list), from the declarations file


class Postgres:
    """Reads the contract tables; connects on first use, reconnects by itself."""

    def __init__(
        self,
        settings: PostgresSettings,
        timeouts: Timeouts,
        tenants: Sequence[str] | None = None,
        lanes: Sequence[Lane] | None = None,
        watch: SessionWatch | None = None,
        life: Lifecycle | None = None,
        clock: Clock = SYSTEM_CLOCK,
    ) -> None:
        self.settings = settings
        self.timeouts = timeouts
        self._tenants = None if tenants is None else list(tenants)
        self._lanes = list(lanes) if lanes is not None else [Lane() for _ in range(max(1, settings.max_connections))]
        self._watch = watch if watch is not None else SessionWatch()
        self._life = life if life is not None else Lifecycle("the PostgreSQL reader")
        self.clock = clock
        self._opening = transaction_opening(timeouts)
        # The server's words with every echo of a credential of the URL hidden.
        self._mask = server_mask(settings.url, os.environ)
        self._pool = LanePool(
            self._lanes,
            self._connect,
            life=self._life,
            clock=clock,
            client_timeout=timeouts.client,
            idle_close=settings.idle_close,
            max_queries_per_connection=settings.max_queries_per_connection,
            on_statement=self._count_statement,
        )
        self._signal_lanes: dict[str, int] = {}
        # Read once for every signal that asks while the reading runs (no TTL: a refresh reads them anew).
        self._tenant_list = CachedReading(
            self._read_tenants, keep_for=0.0, task="read-tenants", life=self._life, clock=clock
        )
        self._standby = CachedReading(
            self._read_standby, keep_for=0.0, task="read-standby-link", life=self._life, clock=clock
        )
        self._passes: dict[str, asyncio.Task[list[asyncpg.Record]]] = {}
        self.statements = 0  # statements run, for the benchmarks and diagnose
        self.prepares = 0  # statements prepared by name (planned anew), in session mode

    # -- connections ---------------------------------------------------------

    async def _connect(self) -> asyncpg.Connection:
        """A new connection for a lane; in session pool mode, only once the pooler
        (if any) is known to keep its server session (so no value is ever read
        on one that does not)."""
        connection = await self._open()
        if self.settings.pool_mode is PoolMode.SESSION:
            await self._watch.require_kept(connection, self._open, self._opening, self.timeouts)
        return connection

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

    def _count_statement(self) -> None:
        self.statements += 1

    # -- transactions --------------------------------------------------------

    async def _transaction(
        self, lane: Lane, sql: str, args: Sequence[object], check_session: bool, types: ResultTypes | None = None
    ) -> list[asyncpg.Record]:
        """`sql` (`args` bound) in a read-only transaction of its own, with its own
        limits; its result columns of the `types` checked before any row is fetched.

        Session mode: the statement is prepared (named) once per connection;
        with `check_session`, the transaction first makes sure it runs in the
        server session the connection started with.
        """
        connection = lane.connection
        assert connection is not None  # set by LanePool.use
        client = self.timeouts.client
        await connection.execute(self._opening, timeout=client)
        if self.settings.pool_mode is PoolMode.TRANSACTION:
            # Unnamed (no statement cache): parsed, planned and run inside this
            # transaction, so on the one server session the pooler lends for it.
            statement = await connection.prepare(sql, timeout=client)
            if types is not None:
                types.check(statement)
            rows: list[asyncpg.Record] = await statement.fetch(*args, timeout=client)
        else:
            if check_session or lane.backend_pid is None:
                await self._check_session(lane)
            rows = await self._fetch_prepared(lane, sql, args, types)
        await connection.execute(COMMIT_SQL, timeout=client)
        return rows

    async def _fetch_prepared(
        self, lane: Lane, sql: str, args: Sequence[object] = (), types: ResultTypes | None = None
    ) -> list[asyncpg.Record]:
        connection = lane.connection
        assert connection is not None  # set by LanePool.use
        try:
            statement = lane.prepared.get(sql)
            if statement is None:
                statement = await connection.prepare(sql, name=next(lane.statement_names), timeout=self.timeouts.client)
                self.prepares += 1
                lane.prepared[sql] = statement
            if types is not None:
                types.check(statement)
            try:
                rows: list[asyncpg.Record] = await statement.fetch(*args, timeout=self.timeouts.client)
            except asyncpg.exceptions.FeatureNotSupportedError:
                # "cached plan must not change result type": a table changed under
                # the statement; prepared anew next time, else it fails on every use.
                lane.prepared.pop(sql, None)
                raise
        except _SESSION_STATE_LOST as exc:
            raise self._watch.not_kept(server_words(exc, self._mask)) from exc
        return rows

    async def _check_session(self, lane: Lane) -> None:
        """The server process of this transaction is the connection's first one."""
        pid: int = (await self._fetch_prepared(lane, BACKEND_PID_SQL))[0][0]
        if lane.backend_pid is None:
            lane.backend_pid = pid
        elif pid != lane.backend_pid:
            raise self._watch.not_kept(f"server process {lane.backend_pid} became {pid}")

    def _refuse_lost_session(self) -> None:
        """In session mode through a pooler that does not keep sessions, nothing is read any more."""
        if self.settings.pool_mode is PoolMode.SESSION:
            self._watch.refuse_if_lost()

    # -- public --------------------------------------------------------------

    async def fetch(self, sql: str, *args: object, types: ResultTypes | None = None) -> list[asyncpg.Record]:
        """The rows of one statement (`args` bound), in a transaction of its own,
        once its result columns are of the `types`."""
        with typed_errors(self._mask):
            return await self._fetch(sql, args, types)

    async def _fetch(self, sql: str, args: Sequence[object], types: ResultTypes | None = None) -> list[asyncpg.Record]:
        self._refuse_lost_session()
        async with self._pool.use() as lane:
            return await self._transaction(lane, sql, args, check_session=True, types=types)

    async def probe_session(self) -> SessionProbe:
        """Whether a connection keeps its server session between its transactions
        (exporter.sources.postgres.pooler), whatever the pool mode (for diagnose)."""
        self._life.ensure_open()
        with typed_errors(self._mask):
            return await self._probe_session()

    async def _probe_session(self) -> SessionProbe:
        first = await self._open()
        try:
            second = await self._open()
            try:
                return await probe_pooler(first, second, self._opening, self.timeouts)
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
            watch=self._watch,
            life=self._life,
            clock=self.clock,
        )

    async def standby_link(self) -> ReplicaLink | None:
        """How far behind its primary the server read may be (None on a primary),
        read once for the signals (and the replay-lag gauge) that ask at the same time."""
        return await self._standby.value()

    async def _read_standby(self) -> ReplicaLink | None:
        row = (await self.fetch(STANDBY_SQL))[0]
        return standby_link(bool(row["standby"]), row["lag"])

    async def require_fresh(self, signal: str) -> ReplicaLink | None:
        """The link of the server read (None on a primary); raises ReplicaStale when
        it is a standby too far behind its primary."""
        link = await self.standby_link()
        require_fresh(signal, link, self.settings.replica_max_staleness, flag_of("database_replica_max_staleness"))
        return link

    async def active_tenant_slugs(self) -> list[str]:
        """The active tenants, read once for the signals that ask at the same time."""
        self._life.ensure_open()
        if self._tenants is not None:
            return list(self._tenants)
        with typed_errors(self._mask):
            return list(await self._tenant_list.value())

    async def tenant_slugs(self, tenants: TenantList) -> list[str]:
        """The tenants another list than the measured one names (a signal's narrower filter),
        read now, failing as the tenant list does."""
        self._life.ensure_open()
        with typed_errors(self._mask):
            return await self._read_tenant_list(tenants)

    async def _read_tenants(self) -> list[str]:
        return await self._read_tenant_list(self.settings.tenants)

    async def _read_tenant_list(self, tenants: TenantList) -> list[str]:
        try:
            rows = await self._fetch(*tenants.query())
        except UNREADABLE_TENANT_LIST as exc:
            if row_security_table(exc) is not None:
                raise  # every row or none: not a missing grant (exporter.sources.postgres.errors)
            raise TenantListUnreadable(exc.sqlstate, self._mask(str(exc))) from exc
        unstated = sum(1 for row in rows if row["unstated"])
        if unstated:
            raise ContractViolation(
                "tenants",
                f"{tenants.name}.{'/'.join(tenants.condition_columns)}",
                f"NULL for {unstated} tenant(s): is each measured or not?",
            )
        return [row["slug"] for row in rows]

    async def fetch_tenant_batches(
        self,
        signal: str,
        batch_sql: Callable[[Sequence[str]], str],
        args: Sequence[object] = (),
        types: ResultTypes | None = None,
        within: frozenset[str] | None = None,
    ) -> list[asyncpg.Record]:
        """Run `batch_sql` over every active tenant's schema (those `within`, when given),
        batch by batch, binding `args` to every batch's statement, whose result columns must
        be of the `types`.

        Each batch is one statement in its own transaction. The batches are
        split into contiguous ranges, one per lane; the lanes run side by side,
        one statement at a time each, so signals measured at the same time
        interleave on them (exporter.sources.postgres.passes).
        """
        self._life.ensure_open()
        self._refuse_lost_session()
        previous = self._passes.get(signal)
        if previous is not None:
            # The pass a deadline cut is still warming the lanes: let it end first.
            with contextlib.suppress(Exception):
                await asyncio.shield(previous)
        slugs = [slug for slug in await self.active_tenant_slugs() if within is None or slug in within]
        batches = tenant_batches(slugs, self.settings.batch_size)
        statements = [batch_sql([tenant_schema(signal, slug) for slug in batch]) for batch in batches]
        task = asyncio.get_running_loop().create_task(self._run_batches(signal, statements, args, types))
        self._passes[signal] = task
        task.add_done_callback(lambda done: self._pass_done(signal, done))
        # Shielded: a measurement cut at its deadline leaves the pass running to
        # its end (each statement bounded by statement_timeout), so what it
        # prepared and the catalogs it loaded serve the next refresh instead of
        # being thrown away with the connection.
        with typed_errors(self._mask):
            return await asyncio.shield(task)

    def _pass_done(self, signal: str, task: asyncio.Task[list[asyncpg.Record]]) -> None:
        if self._passes.get(signal) is task:
            del self._passes[signal]
        if not task.cancelled():
            task.exception()  # retrieved here too, in case the measurement gave up waiting

    async def _run_batches(
        self, signal: str, statements: Sequence[str], args: Sequence[object], types: ResultTypes | None
    ) -> list[asyncpg.Record]:
        # Each signal starts on its own lane: with few batches the signals run
        # side by side instead of queueing on the first lane. Every lane still
        # reads one contiguous share of each signal's tenants.
        offset = self._signal_lanes.setdefault(signal, len(self._signal_lanes))
        lanes = [self._lanes[(i + offset) % len(self._lanes)] for i in range(min(len(self._lanes), len(statements)))]

        async def statement(lane: Lane, sql: str, first: bool) -> list[asyncpg.Record]:
            async with self._pool.use(lane):
                # The session is checked once per pass on each lane; every
                # statement name is checked by the server on every use.
                return await self._transaction(lane, sql, args, check_session=first, types=types)

        return await run_pass(signal, statements, lanes, statement)

    async def close(self) -> None:
        """Cancel the passes, the tenant list and the standby check in flight, then
        close every connection (a statement cut is cancelled on the server first),
        each step bounded; nothing connects again."""
        self._life.close()
        await cancel_and_wait([*self._passes.values(), self._tenant_list.in_flight, self._standby.in_flight])
        await self._pool.close()
