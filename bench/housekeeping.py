"""The housekeeping benchmark: the refresh of the PostgreSQL signals with
housekeeping against the same refresh without it, in the same run, on the same
tenants (bench/paired.py).

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py: each
with 13 or 14 resolved dead letters and 20 notification dedup rows). Every
refresh must be complete, the dead-letter counts exact, and housekeeping's
oldest resolved dead letter per origin_group and oldest dedup row equal to the
values the tenants were created with.

    .venv/bin/python -m bench.housekeeping                 # 10,000 tenants, 3 pairs
    .venv/bin/python -m bench.housekeeping --tenants 1000 --runs 2

Writes bench/results/housekeeping-<date>.json (figures, machine state at the
start and end) and prints the markdown rows.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.figures import Spread, save_figures
from bench.machine import execute, machine_state
from bench.paired import paired_refreshes
from bench.refreshes import SIGNALS
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import create_database, create_tenants, expected_totals
from registry.families import HOUSEKEEPING_DEDUP_OLDEST, HOUSEKEEPING_TERMINAL_OLDEST, HOUSEKEEPING_TERMINAL_UNDATED

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-housekeeping-exporter"  # noqa: S105 -- a throwaway server's role
WITH_HOUSEKEEPING = SIGNALS + ",housekeeping"


@dataclass
class Figures:
    tenants: int
    runs: int
    steady: int
    without: Spread
    with_housekeeping: Spread
    housekeeping_read: Spread
    ratio: float
    failures: list[str]
    correct: bool
    create_seconds: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)


def housekeeping_exact(tenants: int) -> Callable[[Sequence[Any]], bool]:
    totals = expected_totals(1, tenants)
    assert totals.oldest_processed is not None
    want: dict[tuple[str, tuple[str, ...]], float] = {
        (HOUSEKEEPING_TERMINAL_OLDEST.name, (g,)): at.timestamp() for g, at in totals.oldest_resolved.items()
    }
    want[(HOUSEKEEPING_DEDUP_OLDEST.name, ())] = totals.oldest_processed.timestamp()

    def exact(samples: Sequence[Any]) -> bool:
        got = {(s.family, tuple(s.labels)): s.value for s in samples if s.family != HOUSEKEEPING_TERMINAL_UNDATED.name}
        undated = [s.value for s in samples if s.family == HOUSEKEEPING_TERMINAL_UNDATED.name]
        return got == want and all(value == 0 for value in undated)

    return exact


async def measure(url: str, tenants: int, runs: int, steady: int, deadline: float) -> Figures:
    paired = await paired_refreshes(url, tenants, "housekeeping", housekeeping_exact(tenants), runs, steady, deadline)
    return Figures(
        tenants=tenants,
        runs=runs,
        steady=steady,
        without=paired.without,
        with_housekeeping=paired.with_signal,
        housekeeping_read=paired.own_read,
        ratio=paired.ratio,
        failures=paired.failures,
        correct=paired.correct,
    )


def markdown(figures: Figures) -> str:
    exact = "yes" if figures.correct else "NO"
    rows = [
        "| tenants | signals | steady refresh ms (min-max) | vs without | exact |",
        "|---|---|---|---|---|",
        f"| {figures.tenants:,} | {SIGNALS} | {figures.without.ms()} | 1.00x | {exact} |",
        f"| {figures.tenants:,} | {WITH_HOUSEKEEPING} | {figures.with_housekeeping.ms()} | {figures.ratio:.2f}x"
        f" | {exact} |",
        "",
        f"housekeeping's own read (every tenant, batched): {figures.housekeeping_read.ms()} ms",
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
    before = await machine_state(admin_url)
    figures = await measure(url, args.tenants, args.runs, args.steady, args.deadline)
    after = await machine_state(admin_url)
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
    print(f"wrote {save_figures(args.out, 'housekeeping', figures)}")
    print(markdown(figures))
    return 0 if figures.correct else 1


if __name__ == "__main__":
    sys.exit(main())
