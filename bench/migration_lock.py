"""The migration-lock benchmark: the refresh of the PostgreSQL signals with
migration_lock against the same refresh without it, in the same run, on the
same tenants (bench/paired.py).

While it runs, one session holds the platform's migration advisory lock and
one waits for it, so the read must find both (held, one waiter).

    .venv/bin/python -m bench.migration_lock                 # 10,000 tenants, 3 pairs
    .venv/bin/python -m bench.migration_lock --tenants 1000 --runs 2

Writes bench/results/migration-lock-<date>.json and prints the markdown rows.
"""

from __future__ import annotations

import asyncio
import contextlib
import sys
from collections.abc import AsyncIterator, Sequence
from typing import Any

import asyncpg

from bench.paired import Bench, Exact, main
from exporter.contract.fixed import LOCK_KEY
from registry.families import MIGRATION_LOCK_HELD, MIGRATION_LOCK_WAITERS


def lock_read_exact(samples: Sequence[Any]) -> bool:
    values = {sample.family: sample.value for sample in samples}
    return values.get(MIGRATION_LOCK_HELD.name) == 1 and values.get(MIGRATION_LOCK_WAITERS.name) == 1


def exact(_: int) -> Exact:
    return lock_read_exact


@contextlib.asynccontextmanager
async def lock_held(admin_url: str) -> AsyncIterator[None]:
    """The migration lock held by one session and awaited by another, while the bench runs."""
    holder = await asyncpg.connect(admin_url)
    waiter = await asyncpg.connect(admin_url)
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        blocked = asyncio.create_task(waiter.execute("SELECT pg_advisory_lock($1)", LOCK_KEY))
        yield
        await holder.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        await blocked
    finally:
        await holder.close()
        await waiter.close()


BENCH = Bench(
    name="migration-lock",
    added="migration_lock",
    exact=exact,
    read="pg_locks + pg_stat_activity, one statement",
    password="bench-migration-lock-exporter",  # noqa: S106 -- a throwaway server's role
    during=lock_held,
)


if __name__ == "__main__":
    sys.exit(main(BENCH, __doc__))
