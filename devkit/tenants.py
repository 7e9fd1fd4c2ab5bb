"""Create many tenants fast: one DO block per batch of tenants, each tenant
with its schema (public.orpycamcp_create_tenant_schema), its grants
(public.orpycamcp_grant_tenant) and ~60 rows: 20 dead letters (pending, and
resolved an hour after they were created), 20 preservation retries (exhausted
and retrying) and 20 notification dedup rows.

The rows are a pure function of the tenant's number, so the totals the
exporter must report are known without reading the database back
(`expected_totals`). Tenants are numbered from 1; tenant k's slug is
`t000k` (zero-padded), so they sort by number.

    .venv/bin/python -m devkit.tenants 10000   # a throwaway server, timed
"""

from __future__ import annotations

import argparse
import asyncio
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

import asyncpg

from devkit.servers import LocalPostgres, start_postgres
from exporter.tools.demo import load_contract
from registry.values import ARTIFACTS, ORIGIN_GROUPS, PHASES

DEAD_LETTERS_PER_TENANT = 20
RETRIES_PER_TENANT = 20
DEDUP_ROWS_PER_TENANT = 20
RESOLVED_AFTER_S = 3600  # a resolved dead letter's resolved_at, after its created_at
# Tenants per DO block: each block is one transaction, and the DDL of one
# tenant takes ~8 locks (schema, 2 tables, their indexes): 250 stays well
# inside the shared lock table of a stock server (64 x max_connections).
BLOCK = 250
EPOCH = datetime(2026, 1, 1, tzinfo=UTC)


def slug(number: int) -> str:
    return f"t{number:06d}"


# The same rules in SQL (inside the DO block, `k` the tenant number, `j` the
# row number 1..20) and in Python (expected_totals), kept side by side.
TENANT_BLOCK = """
DO $block$
DECLARE
    k int;
    s text;
    schema_name text;
BEGIN
    FOR k IN {first}..{last} LOOP
        s := 't' || lpad(k::text, 6, '0');
        INSERT INTO public.tenants (slug) VALUES (s);
        PERFORM public.orpycamcp_create_tenant_schema(s);
        PERFORM public.orpycamcp_grant_tenant(s);
        schema_name := quote_ident('tenant_' || s);
        EXECUTE format($sql$
            INSERT INTO %1$s.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at,
                                                 resolved_at)
            SELECT 'e' || j, %2$L,
                   (ARRAY[{groups}])[(%3$s + j) %% {n_groups} + 1],
                   CASE WHEN (%3$s + j) %% 3 = 0 THEN 'pending' ELSE 'resolved' END,
                   timestamptz '{epoch}' + make_interval(secs => %3$s * 20 + j),
                   CASE WHEN (%3$s + j) %% 3 = 0 THEN NULL
                        ELSE timestamptz '{epoch}' + make_interval(secs => %3$s * 20 + j + {resolved_after}) END
            FROM generate_series(1, {dead_letters}) AS j;
            INSERT INTO %1$s.notification_processed_events (event_id, processed_at)
            SELECT 'n' || j, timestamptz '{epoch}' + make_interval(secs => %3$s * 20 + j)
            FROM generate_series(1, {dedup_rows}) AS j;
            INSERT INTO %1$s.preservation_retry (artifact_id, artifact, phase, status, attempts)
            SELECT 'a' || j,
                   (ARRAY[{artifacts}])[(%3$s + j) %% {n_artifacts} + 1],
                   (ARRAY[{phases}])[(%3$s * 3 + j) %% {n_phases} + 1],
                   CASE WHEN (%3$s + j) %% 4 = 0 THEN 'exhausted' ELSE 'retrying' END,
                   5
            FROM generate_series(1, {retries}) AS j;
        $sql$, schema_name, s, k);
    END LOOP;
END
$block$;
"""


def _array(values: tuple[str, ...]) -> str:
    return ", ".join(f"'{value}'" for value in values)


def tenant_block(first: int, last: int) -> str:
    return TENANT_BLOCK.format(
        first=first,
        last=last,
        groups=_array(ORIGIN_GROUPS),
        n_groups=len(ORIGIN_GROUPS),
        artifacts=_array(ARTIFACTS),
        n_artifacts=len(ARTIFACTS),
        phases=_array(PHASES),
        n_phases=len(PHASES),
        epoch=EPOCH.isoformat(),
        dead_letters=DEAD_LETTERS_PER_TENANT,
        retries=RETRIES_PER_TENANT,
        resolved_after=RESOLVED_AFTER_S,
        dedup_rows=DEDUP_ROWS_PER_TENANT,
    )


@dataclass
class Totals:
    """What the exporter must report for tenants 1..n (all active)."""

    pending: dict[str, int] = field(default_factory=dict)
    oldest: dict[str, datetime] = field(default_factory=dict)
    exhausted: dict[tuple[str, str], int] = field(default_factory=dict)
    # housekeeping: the oldest resolved_at per origin_group, the oldest dedup row.
    oldest_resolved: dict[str, datetime] = field(default_factory=dict)
    oldest_processed: datetime | None = None


def expected_totals(first: int, last: int) -> Totals:
    totals = Totals()
    for k in range(first, last + 1):
        for j in range(1, DEAD_LETTERS_PER_TENANT + 1):
            if (k + j) % 3 == 0:
                group = ORIGIN_GROUPS[(k + j) % len(ORIGIN_GROUPS)]
                created = EPOCH + timedelta(seconds=k * 20 + j)
                totals.pending[group] = totals.pending.get(group, 0) + 1
                if group not in totals.oldest or created < totals.oldest[group]:
                    totals.oldest[group] = created
            else:
                group = ORIGIN_GROUPS[(k + j) % len(ORIGIN_GROUPS)]
                resolved = EPOCH + timedelta(seconds=k * 20 + j + RESOLVED_AFTER_S)
                if group not in totals.oldest_resolved or resolved < totals.oldest_resolved[group]:
                    totals.oldest_resolved[group] = resolved
        for j in range(1, DEDUP_ROWS_PER_TENANT + 1):
            processed = EPOCH + timedelta(seconds=k * 20 + j)
            if totals.oldest_processed is None or processed < totals.oldest_processed:
                totals.oldest_processed = processed
        for j in range(1, RETRIES_PER_TENANT + 1):
            if (k + j) % 4 == 0:
                key = (ARTIFACTS[(k + j) % len(ARTIFACTS)], PHASES[(k * 3 + j) % len(PHASES)])
                totals.exhausted[key] = totals.exhausted.get(key, 0) + 1
    return totals


# A declared backlog's table in every tenant (the Celery-style dead-letter
# queue of deploy/backlogs.example.yml), with the index a tenant-scope backlog's
# prepared statement can use; rows again a pure function of k and j.
TASKS: tuple[str, ...] = ("face_match", "ocr_extraction", "liveness_detection", "doc_processing")
QUEUE_ROWS_PER_TENANT = 20
QUEUE_BLOCK = """
DO $block$
DECLARE
    k int;
    schema_name text;
BEGIN
    FOR k IN {first}..{last} LOOP
        schema_name := quote_ident('tenant_t' || lpad(k::text, 6, '0'));
        EXECUTE format($sql$
            CREATE TABLE %1$s.dead_letter_queue (
                id bigserial PRIMARY KEY, task_name text NOT NULL, status text NOT NULL,
                created_at timestamptz NOT NULL);
            CREATE INDEX ON %1$s.dead_letter_queue (status, task_name, created_at);
            GRANT SELECT ON %1$s.dead_letter_queue TO orpycamcp_exporter;
            INSERT INTO %1$s.dead_letter_queue (task_name, status, created_at)
            SELECT (ARRAY[{tasks}])[(%2$s + j) %% {n_tasks} + 1],
                   CASE WHEN (%2$s + j) %% 3 = 0 THEN 'pending' ELSE 'reprocessed' END,
                   timestamptz '{epoch}' + make_interval(secs => %2$s * 20 + j)
            FROM generate_series(1, {rows}) AS j;
        $sql$, schema_name, k);
    END LOOP;
END
$block$;
"""


def queue_block(first: int, last: int) -> str:
    return QUEUE_BLOCK.format(
        first=first,
        last=last,
        tasks=_array(TASKS),
        n_tasks=len(TASKS),
        epoch=EPOCH.isoformat(),
        rows=QUEUE_ROWS_PER_TENANT,
    )


def expected_queue_totals(first: int, last: int) -> Totals:
    """Pending tasks per task name and the oldest, for tenants first..last (only `pending`, `oldest` are set)."""
    totals = Totals()
    for k in range(first, last + 1):
        for j in range(1, QUEUE_ROWS_PER_TENANT + 1):
            if (k + j) % 3 == 0:
                task = TASKS[(k + j) % len(TASKS)]
                created = EPOCH + timedelta(seconds=k * 20 + j)
                totals.pending[task] = totals.pending.get(task, 0) + 1
                if task not in totals.oldest or created < totals.oldest[task]:
                    totals.oldest[task] = created
    return totals


async def create_queues(url: str, first: int, last: int, block: int = BLOCK) -> None:
    """The dead_letter_queue table of tenants first..last (created before by create_tenants)."""
    connection = await asyncpg.connect(url)
    try:
        for start in range(first, last + 1, block):
            await connection.execute(queue_block(start, min(start + block - 1, last)))
    finally:
        await connection.close()


async def create_tenants(url: str, first: int, last: int, block: int = BLOCK, connections: int = 2) -> None:
    """Tenants first..last (inclusive), `block` per DO block, over a few connections."""
    blocks = [(start, min(start + block - 1, last)) for start in range(first, last + 1, block)]
    queue = list(reversed(blocks))

    async def worker() -> None:
        connection = await asyncpg.connect(url)
        try:
            while queue:
                start, end = queue.pop()
                await connection.execute(tenant_block(start, end))
        finally:
            await connection.close()

    async with asyncio.TaskGroup() as group:
        for _ in range(min(connections, len(blocks))):
            group.create_task(worker())


async def create_database(server: LocalPostgres, name: str, exporter_password: str) -> str:
    """A fresh database holding the reference contract and the exporter role; its admin URL."""
    connection = await asyncpg.connect(server.url())
    try:
        await connection.execute(f"CREATE DATABASE {name}")
    finally:
        await connection.close()
    url = server.url(database=name)
    await load_contract(url, demo_data=False, exporter_password=exporter_password)
    return url


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("tenants", type=int)
    parser.add_argument("--block", type=int, default=BLOCK, help="tenants per DO block")
    args = parser.parse_args()
    server = start_postgres()
    try:
        url = asyncio.run(create_database(server, "bench", "bench-exporter"))
        started = time.monotonic()
        asyncio.run(create_tenants(url, 1, args.tenants, args.block))
        print(f"{args.tenants} tenants in {time.monotonic() - started:.1f} s")
    finally:
        server.remove()


if __name__ == "__main__":
    main()
