"""One added signal's cost: the refresh of the PostgreSQL signals with it against
the same refresh without it, in the same run, on the same tenants.

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py).
`--runs` pairs of fresh exporters, alternated (without, with: the load of a
shared machine drifts), each doing a first refresh and `--steady` refreshes
with every signal re-measured; the wall time of each steady refresh and the
added signal's own duration are kept. Every refresh must be complete, the
dead-letter counts exact, and the added signal's samples what its bench's
`exact` says they must be. Writes bench/results/<name>-<date>.json (figures,
machine state at the start and end) and prints the markdown rows.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import time
from collections.abc import AsyncIterator, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench.figures import Spread, save_figures
from bench.machine import execute, machine_state
from bench.refreshes import SIGNALS, counts_check, fresh_exporter
from devkit.servers import start_postgres
from devkit.tenants import create_database, create_tenants

RESULTS = Path(__file__).resolve().parent / "results"

Exact = Callable[[Sequence[Any]], bool]


@dataclass
class Figures:
    added: str
    tenants: int
    runs: int
    steady: int
    without: Spread
    with_signal: Spread
    own_read: Spread
    ratio: float
    failures: list[str]
    correct: bool
    create_seconds: float = 0.0
    machine: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class Bench:
    """What a bench of one added signal states: its name, what its samples must be
    over `tenants` tenants, what its own read is, and what holds while it runs."""

    name: str
    added: str
    exact: Callable[[int], Exact]
    read: str
    password: str
    during: Callable[[str], contextlib.AbstractAsyncContextManager[None]] | None = None


async def paired_refreshes(url: str, bench: Bench, tenants: int, runs: int, steady: int, deadline: float) -> Figures:
    with_added = f"{SIGNALS},{bench.added}"
    walls: dict[str, list[float]] = {SIGNALS: [], with_added: []}
    own: list[float] = []
    failures: list[str] = []
    check = counts_check(tenants)
    exact = bench.exact(tenants)
    correct = True
    for run in range(runs):
        for signals in (SIGNALS, with_added):
            options: dict[str, object] = {
                "database_url": url,
                "signals": signals,
                "deadline": deadline,
                "ttl": 2 * deadline,
            }
            async with fresh_exporter(options) as exporter:
                for refresh in range(steady + 1):
                    started = time.monotonic()
                    await exporter.scrape()
                    wall = time.monotonic() - started
                    for name, cache in exporter.caches.items():
                        outcome = cache.last
                        assert outcome is not None
                        if outcome.failure is not None:
                            failures.append(f"run {run} refresh {refresh} {name}: {outcome.failure.reason}")
                    if refresh == 0:
                        correct = correct and check(exporter)
                        continue
                    walls[signals].append(wall)
                    read = exporter.caches.get(bench.added)
                    if read is not None and read.last is not None:
                        own.append(read.last.duration)
                        correct = correct and read.last.samples is not None and exact(read.last.samples)
    without, with_signal = Spread.of(walls[SIGNALS]), Spread.of(walls[with_added])
    return Figures(
        added=bench.added,
        tenants=tenants,
        runs=runs,
        steady=steady,
        without=without,
        with_signal=with_signal,
        own_read=Spread.of(own),
        ratio=round(with_signal.median / without.median, 3),
        failures=failures,
        correct=correct and not failures,
    )


def markdown(bench: Bench, figures: Figures) -> str:
    exact = "yes" if figures.correct else "NO"
    rows = [
        "| tenants | signals | steady refresh ms (min-max) | vs without | exact |",
        "|---|---|---|---|---|",
        f"| {figures.tenants:,} | {SIGNALS} | {figures.without.ms()} | 1.00x | {exact} |",
        f"| {figures.tenants:,} | {SIGNALS},{bench.added} | {figures.with_signal.ms()} | {figures.ratio:.2f}x"
        f" | {exact} |",
        "",
        f"{bench.added}'s own read ({bench.read}): {figures.own_read.ms()} ms",
    ]
    return "\n".join(rows) + "\n"


@contextlib.asynccontextmanager
async def nothing_held(_: str) -> AsyncIterator[None]:
    yield


async def run(bench: Bench, args: argparse.Namespace, server: Any) -> Figures:
    admin_url = await create_database(server, "bench", bench.password)
    url = server.url(user="orpycamcp_exporter", password=bench.password, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, args.tenants)
    await execute(admin_url, "VACUUM ANALYZE")
    await execute(admin_url, "CHECKPOINT")
    created = time.monotonic() - started
    print(f"{args.tenants:,} tenants in {created:.0f} s", flush=True)
    async with (bench.during or nothing_held)(admin_url):
        before = await machine_state(admin_url)
        figures = await paired_refreshes(url, bench, args.tenants, args.runs, args.steady, args.deadline)
        after = await machine_state(admin_url)
    figures.create_seconds = round(created, 1)
    figures.machine = {"start": before, "end": after}
    return figures


def main(bench: Bench, doc: str | None, argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=doc, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="pairs of fresh exporters (without, with)")
    parser.add_argument("--steady", type=int, default=4, help="refreshes after the first, per exporter")
    parser.add_argument("--deadline", type=float, default=30.0, help="seconds per measurement")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    server = start_postgres()
    try:
        figures = asyncio.run(run(bench, args, server))
    finally:
        server.remove()
    print(f"wrote {save_figures(args.out, bench.name, figures)}")
    print(markdown(bench, figures))
    return 0 if figures.correct else 1
