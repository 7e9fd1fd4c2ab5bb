"""PostgreSQL access: a lazy, small pool; every statement in a short read-only
transaction with a statement timeout; tenant schemas read in batches."""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from dataclasses import dataclass

import asyncpg

from exporter.sql import tenant_schema

ACTIVE_TENANTS_SQL = "SELECT slug FROM public.tenants WHERE provisioning_status = 'active' ORDER BY slug"
# One round trip opens the transaction: read-only, a statement timeout, and no
# parallel workers (they each open every tenant table cold and make these
# many-table statements slower).
BEGIN_SQL = (
    "BEGIN TRANSACTION READ ONLY;"
    " SET LOCAL statement_timeout = {timeout_ms:d};"
    " SET LOCAL max_parallel_workers_per_gather = 0"
)


@dataclass(frozen=True)
class PostgresSettings:
    url: str
    statement_timeout: float
    connect_timeout: float
    max_connections: int = 2
    batch_size: int = 250
    idle_close_seconds: float = 90.0
    max_queries_per_connection: int = 50_000
    application_name: str = "orpycamcp-exporter"


class Postgres:
    """Reads the contract tables; connects on first use, reconnects by itself."""

    def __init__(self, settings: PostgresSettings) -> None:
        self.settings = settings
        self._pool: asyncpg.Pool | None = None
        self._pool_lock = asyncio.Lock()
        self.statements = 0  # statements run, for the benchmarks and diagnose

    async def _get_pool(self) -> asyncpg.Pool:
        async with self._pool_lock:
            if self._pool is None:
                s = self.settings
                self._pool = await asyncpg.create_pool(
                    s.url,
                    min_size=0,
                    max_size=s.max_connections,
                    max_queries=s.max_queries_per_connection,
                    # An exporter nobody scrapes holds no connection.
                    max_inactive_connection_lifetime=s.idle_close_seconds,
                    timeout=s.connect_timeout,
                    # Batch statements are large; keep them prepared anyway.
                    statement_cache_size=1024,
                    max_cacheable_statement_size=4 * 1024 * 1024,
                    server_settings={
                        "application_name": s.application_name,
                        "default_transaction_read_only": "on",
                    },
                )
            return self._pool

    async def _run(self, connection: asyncpg.Connection, sql: str, args: Sequence[object]) -> list[asyncpg.Record]:
        """One statement in its own read-only transaction; locks are released at its end."""
        begin = BEGIN_SQL.format(timeout_ms=max(1, int(self.settings.statement_timeout * 1000)))
        try:
            await connection.execute(begin)
            rows: list[asyncpg.Record] = await connection.fetch(sql, *args)
            await connection.execute("COMMIT")
            self.statements += 1
            return rows
        except BaseException:
            # Whatever went wrong (an SQL error, a timeout, a cancellation, a
            # dead socket), never hand the connection back mid-transaction or
            # wait on a stalled peer for a rollback: drop it.
            connection.terminate()
            raise

    async def fetch(self, sql: str, *args: object) -> list[asyncpg.Record]:
        pool = await self._get_pool()
        async with pool.acquire(timeout=self.settings.connect_timeout) as connection:
            return await self._run(connection, sql, args)

    async def active_tenant_slugs(self) -> list[str]:
        rows = await self.fetch(ACTIVE_TENANTS_SQL)
        return [row["slug"] for row in rows]

    async def fetch_tenant_batches(
        self, signal: str, batch_sql: Callable[[Sequence[str]], str]
    ) -> list[asyncpg.Record]:
        """Run `batch_sql` over every active tenant's schema, batch by batch.

        Each batch is one statement in its own transaction (so the locks of its
        tables are released before the next), spread over the pool's connections.
        """
        schemas = [tenant_schema(signal, slug) for slug in await self.active_tenant_slugs()]
        size = self.settings.batch_size
        statements = [batch_sql(schemas[i : i + size]) for i in range(0, len(schemas), size)]
        if not statements:
            return []
        pool = await self._get_pool()
        queue = list(reversed(statements))
        rows: list[asyncpg.Record] = []

        async def worker() -> None:
            async with pool.acquire(timeout=self.settings.connect_timeout) as connection:
                while queue:
                    rows.extend(await self._run(connection, queue.pop(), ()))

        async with asyncio.TaskGroup() as group:
            for _ in range(min(self.settings.max_connections, len(statements))):
                group.create_task(worker())
        return rows

    async def close(self) -> None:
        async with self._pool_lock:
            if self._pool is not None:
                pool, self._pool = self._pool, None
                try:
                    await asyncio.wait_for(pool.close(), timeout=2)
                except (TimeoutError, OSError, asyncpg.InterfaceError):
                    pool.terminate()
