"""The migration-lock benchmark: the refresh of the PostgreSQL signals with
migration_lock against the same refresh without it, in the same run, on the
same tenants.

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py). While
it runs, one session holds the platform's migration advisory lock and one waits
for it, so the read finds both. `--runs` pairs of fresh exporters, alternated
(without, with: the load of a shared machine drifts), each doing a first
refresh and `--steady` refreshes with every signal re-measured; the wall time
of each steady refresh and migration_lock's own duration are kept. Every
refresh must be complete, the dead-letter counts exact, the lock read held
with one waiter.

    .venv/bin/python -m bench.migration_lock                 # 10,000 tenants, 3 pairs
    .venv/bin/python -m bench.migration_lock --tenants 1000 --runs 2

Writes bench/results/migration-lock-<date>.json (figures, machine state at the
start and end) and prints the markdown rows.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench.figures import Spread, save_figures
from bench.machine import execute, machine_state
from bench.paired import paired_refreshes
from bench.refreshes import SIGNALS
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import create_database, create_tenants
from exporter.contract.fixed import LOCK_KEY
from registry.families import MIGRATION_LOCK_HELD, MIGRATION_LOCK_WAITERS

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-migration-lock-exporter"  # noqa: S105 -- a throwaway server's role
WITH_LOCK = SIGNALS + ",migration_lock"


@dataclass
class Figures:
    tenants: int
    runs: int
    steady: int
    without: Spread
    with_lock: Spread
    lock_read: Spread
    ratio: float
    failures: list[str]
    correct: bool
    create_seconds: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)


def lock_read_exact(samples: Sequence[Any]) -> bool:
    values = {sample.family: sample.value for sample in samples}
    return values.get(MIGRATION_LOCK_HELD.name) == 1 and values.get(MIGRATION_LOCK_WAITERS.name) == 1


async def measure(url: str, tenants: int, runs: int, steady: int, deadline: float) -> Figures:
    paired = await paired_refreshes(url, tenants, "migration_lock", lock_read_exact, runs, steady, deadline)
    return Figures(
        tenants=tenants,
        runs=runs,
        steady=steady,
        without=paired.without,
        with_lock=paired.with_signal,
        lock_read=paired.own_read,
        ratio=paired.ratio,
        failures=paired.failures,
        correct=paired.correct,
    )


def markdown(figures: Figures) -> str:
    rows = [
        "| tenants | signals | steady refresh ms (min-max) | vs without | exact |",
        "|---|---|---|---|---|",
        f"| {figures.tenants:,} | {SIGNALS} | {figures.without.ms()} | 1.00x | {'yes' if figures.correct else 'NO'} |",
        f"| {figures.tenants:,} | {WITH_LOCK} | {figures.with_lock.ms()} | {figures.ratio:.2f}x"
        f" | {'yes' if figures.correct else 'NO'} |",
        "",
        f"migration_lock's own read (pg_locks + pg_stat_activity, one statement): {figures.lock_read.ms()} ms",
    ]
    return "\n".join(rows) + "\n"


async def run(args: argparse.Namespace, server: LocalPostgres) -> Figures:
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, args.tenants)
    await execute(admin_url, "VACUUM ANALYZE")
    await execute(admin_url, "CHECKPOINT")
    created = time.monotonic() - started
    print(f"{args.tenants:,} tenants in {created:.0f} s", flush=True)
    holder = await asyncpg.connect(admin_url)
    waiter = await asyncpg.connect(admin_url)
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", LOCK_KEY)
        blocked = asyncio.create_task(waiter.execute("SELECT pg_advisory_lock($1)", LOCK_KEY))
        before = await machine_state(admin_url)
        figures = await measure(url, args.tenants, args.runs, args.steady, args.deadline)
        after = await machine_state(admin_url)
        await holder.execute("SELECT pg_advisory_unlock($1)", LOCK_KEY)
        await blocked
    finally:
        await holder.close()
        await waiter.close()
    figures.create_seconds = round(created, 1)
    figures.machine = {"start": before, "end": after}
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="pairs of fresh exporters (without, with)")
    parser.add_argument("--steady", type=int, default=4, help="refreshes after the first, per exporter")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds per measurement")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    server = start_postgres()
    try:
        figures = asyncio.run(run(args, server))
    finally:
        server.remove()
    print(f"wrote {save_figures(args.out, 'migration-lock', figures)}")
    print(markdown(figures))
    return 0 if figures.correct else 1


if __name__ == "__main__":
    sys.exit(main())
