"""The database's own floors, measured beside the exporter: the best hand-written
batched reading, and the naive one (one statement per tenant and signal)."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Sequence
from typing import Any

import asyncpg

from bench.figures import Backend, FloorFigures, NaiveFigures, Spread
from bench.machine import proc_status
from exporter.tenant_list import DEFAULT_TENANTS
from exporter.zones import UTC, epoch_sql, instant_sql

FLOOR_APP = "bench-floor"
FLOOR_BATCH = 250

# The measured tenants, as the exporter lists them (its filter bound: args, never SQL).
TENANTS = DEFAULT_TENANTS.query()


# The floor's own statements, written by hand (the status words literal, nothing bound):
# what the dlq and preservation signals read, the best way this benchmark knows.
def dlq_sql(schemas: Sequence[str]) -> str:
    union = "\n UNION ALL ".join(
        f"SELECT origin_group, {instant_sql('created_at', UTC)} AS created_at"
        f" FROM {schema}.evento_dead_letter WHERE status = 'pending'"
        for schema in schemas
    )
    return (
        f"WITH pending AS MATERIALIZED ({union})\n"
        f"SELECT origin_group, count(*) AS events, {epoch_sql('min(created_at)')} AS oldest,"
        " count(*) - count(created_at) AS undated"
        " FROM pending GROUP BY origin_group"
    )


def preservation_sql(schemas: Sequence[str]) -> str:
    union = "\n UNION ALL ".join(
        f"SELECT artifact, phase FROM {schema}.preservation_retry WHERE status = 'exhausted'" for schema in schemas
    )
    return (
        f"WITH exhausted AS MATERIALIZED ({union})\n"
        "SELECT artifact, phase, count(*) AS artifacts FROM exhausted GROUP BY artifact, phase"
    )


def floor_statements(schemas: Sequence[str]) -> tuple[str, str]:
    """Both table signals' floor statements over one batch of schemas."""
    return dlq_sql(schemas), preservation_sql(schemas)


async def floor_lane(connection: asyncpg.Connection, prepared: dict[str, Any], batches: list[list[str]]) -> int:
    """One connection's half: both signals' statements over its batches, prepared once, named."""
    done = 0
    for batch in batches:
        for sql in floor_statements(batch):
            statement = prepared.get(sql)
            if statement is None:
                statement = prepared[sql] = await connection.prepare(sql, name=f"floor_{len(prepared)}")
            await statement.fetch()
            done += 1
    return done


async def measure_floor(url: str, runs: int, steady: int) -> FloorFigures:
    """Hand-written best batched reading, refreshed like the exporter."""
    firsts: list[float] = []
    steadies: list[float] = []
    statements = 0
    backends: list[Backend] = []
    settings = {
        "application_name": FLOOR_APP,
        "default_transaction_read_only": "on",
        "max_parallel_workers_per_gather": "0",
        "jit": "off",
    }
    for run in range(runs):
        connected = time.monotonic()  # a fresh floor connects too, like a fresh exporter
        connections = [await asyncpg.connect(url, server_settings=settings) for _ in range(2)]
        prepared: list[dict[str, Any]] = [{}, {}]
        try:
            for refresh in range(steady + 1):
                started = connected if refresh == 0 else time.monotonic()
                count = 1
                rows = await connections[0].fetch(TENANTS.sql, *TENANTS.args)
                schemas = ['"tenant_' + row["slug"].replace('"', '""') + '"' for row in rows]
                slices = [schemas[i : i + FLOOR_BATCH] for i in range(0, len(schemas), FLOOR_BATCH)]
                half = (len(slices) + 1) // 2

                done = await asyncio.gather(
                    floor_lane(connections[0], prepared[0], slices[:half]),
                    floor_lane(connections[1], prepared[1], slices[half:]),
                )
                count += sum(done)
                (firsts if refresh == 0 else steadies).append(time.monotonic() - started)
                statements = count
            if run == runs - 1:
                for connection in connections:
                    pid = connection.get_server_pid()
                    status = proc_status(pid)
                    contexts = None
                    with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
                        contexts = await connection.fetchval("SELECT sum(total_bytes) FROM pg_backend_memory_contexts")
                    backends.append(
                        Backend(
                            pid,
                            round(status.get("VmRSS", 0), 1),
                            round(status.get("RssAnon", 0), 1),
                            None if contexts is None else round(int(contexts) / 2**20, 1),
                        )
                    )
        finally:
            for connection in connections:
                await connection.close()
    return FloorFigures(Spread.of(firsts), Spread.of(steadies), statements, backends)


NAIVE_DLQ = (
    "SELECT origin_group, count(*) AS events, min(created_at) AS oldest"
    " FROM {schema}.evento_dead_letter WHERE status = 'pending' GROUP BY origin_group"
)
NAIVE_PRESERVATION = (
    "SELECT artifact, phase, count(*) AS artifacts FROM {schema}.preservation_retry"
    " WHERE status = 'exhausted' GROUP BY artifact, phase"
)


async def naive_worker(pool: asyncpg.Pool, queue: list[str]) -> None:
    async with pool.acquire() as connection:
        while queue:
            await connection.fetch(queue.pop())


async def measure_naive(url: str, runs: int, cap: float) -> NaiveFigures:
    """One statement per tenant and signal, as a straightforward exporter would."""
    times: list[float] = []
    statements = 0
    capped = False
    pool = await asyncpg.create_pool(url, min_size=0, max_size=2)
    try:
        for _ in range(runs):
            started = time.monotonic()
            async with pool.acquire() as connection:
                rows = await connection.fetch(TENANTS.sql, *TENANTS.args)
            queue = [
                template.format(schema='"tenant_' + row["slug"] + '"')
                for row in rows
                for template in (NAIVE_DLQ, NAIVE_PRESERVATION)
            ]
            statements = len(queue) + 1
            queue.reverse()

            try:
                async with asyncio.timeout(cap):
                    await asyncio.gather(naive_worker(pool, queue), naive_worker(pool, queue))
            except TimeoutError:
                capped = True
                times.append(cap)
                break
            times.append(time.monotonic() - started)
    finally:
        pool.terminate()
    return NaiveFigures(Spread.of(times), statements, capped)
