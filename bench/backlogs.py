"""The declared-backlog benchmark: each declared backlog's refresh against the
dlq refresh, measured in the same run, on the same tenants.

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py: 20
dead letters each) and, in every tenant, the Celery-style dead_letter_queue
of deploy/backlogs.example.yml (20 rows each, one in three pending, indexed on
(status, task_name, created_at)); plus a global outbox of `--outbox-rows` rows
(1 in 100 pending, partial index on the pending predicate). `--runs` fresh
exporters with dlq and both backlogs enabled (default settings) each do a first
refresh and `--steady` refreshes; every signal's measurement duration comes
from its cache. Every refresh must be complete and the counts exact.

    .venv/bin/python -m bench.backlogs                  # 10,000 tenants, 3 runs
    .venv/bin/python -m bench.backlogs --tenants 1000 --runs 2

Writes bench/results/backlogs-<date>.json and prints the markdown row.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

from bench.figures import Spread
from bench.machine import execute
from devkit.backlogs import example_backlogs
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import (
    create_database,
    create_queues,
    create_tenants,
    expected_queue_totals,
    expected_totals,
)
from exporter.cache import SignalCache
from exporter.service import build_exporter
from exporter.settings import load
from registry.backlogs import PENDING_ITEMS
from registry.families import DLQ_PENDING

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-backlogs-exporter"  # noqa: S105 -- a throwaway server's role
OUTBOX_SQL = """
CREATE TABLE public.outbox (
    id bigserial PRIMARY KEY, partition int NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO public.outbox (partition, status, created_at)
SELECT i % 4, CASE WHEN i % 100 = 0 THEN 'NEW' ELSE 'PROCESSED' END, timestamptz '2026-01-01' + make_interval(secs => i)
FROM generate_series(1, {rows}) AS i;
CREATE INDEX outbox_unprocessed_idx ON public.outbox (partition, created_at) WHERE status <> 'PROCESSED';
GRANT SELECT ON public.outbox TO orpycamcp_exporter;
ANALYZE public.outbox;
"""
SIGNALS = ("dlq", "kyc_dead_letters", "outbox")


@dataclass
class Figures:
    tenants: int
    outbox_rows: int
    runs: int
    steady: int
    first: dict[str, Spread]
    steady_by_signal: dict[str, Spread]
    ratio_to_dlq: dict[str, float]
    failures: list[str]
    correct: bool
    create_seconds: float


def pending_total(caches: Mapping[str, SignalCache], signal: str, family: str) -> int | None:
    outcome = caches[signal].last
    if outcome is None or outcome.samples is None:
        return None
    return int(sum(sample.value for sample in outcome.samples if sample.family == family))


async def measure(url: str, backlogs_file: str, tenants: int, outbox_rows: int, runs: int, steady: int) -> Figures:
    first: dict[str, list[float]] = {name: [] for name in SIGNALS}
    steadies: dict[str, list[float]] = {name: [] for name in SIGNALS}
    failures: list[str] = []
    want = {
        "dlq": sum(expected_totals(1, tenants).pending.values()),
        "kyc_dead_letters": sum(expected_queue_totals(1, tenants).pending.values()),
        "outbox": outbox_rows // 100,
    }
    families = {"dlq": DLQ_PENDING.name, "kyc_dead_letters": PENDING_ITEMS, "outbox": PENDING_ITEMS}
    correct = True
    for run in range(runs):
        settings = load({"database_url": url, "signals": ",".join(SIGNALS), "backlogs_file": backlogs_file}, {})
        exporter = build_exporter(settings)
        for cache in exporter.caches.values():
            cache.ttl = 0  # every scrape refreshes every signal
        try:
            for refresh in range(steady + 1):
                await exporter.scrape()
                caches = exporter.caches
                for name in SIGNALS:
                    outcome = caches[name].last
                    assert outcome is not None
                    (first if refresh == 0 else steadies)[name].append(outcome.duration)
                    if outcome.failure is not None:
                        failures.append(f"run {run} refresh {refresh} {name}: {outcome.failure.reason}")
                    elif pending_total(caches, name, families[name]) != want[name]:
                        correct = False
        finally:
            await exporter.close()
    medians = {name: Spread.of(values) for name, values in steadies.items()}
    return Figures(
        tenants=tenants,
        outbox_rows=outbox_rows,
        runs=runs,
        steady=steady,
        first={name: Spread.of(values) for name, values in first.items()},
        steady_by_signal=medians,
        ratio_to_dlq={name: round(medians[name].median / medians["dlq"].median, 2) for name in SIGNALS},
        failures=failures,
        correct=correct and not failures,
        create_seconds=0.0,
    )


def markdown(figures: Figures) -> str:
    head = "| tenants | signal | first refresh ms | steady refresh ms (min-max) | steady vs dlq | counts exact |"
    rows = [head, "|---|---|---|---|---|---|"]
    for name in SIGNALS:
        rows.append(
            f"| {figures.tenants:,} | {name} | {figures.first[name].ms()} | {figures.steady_by_signal[name].ms()}"
            f" | {figures.ratio_to_dlq[name]:.2f}x | {'yes' if figures.correct else 'NO'} |"
        )
    return "\n".join(rows) + "\n"


async def run(args: argparse.Namespace, server: LocalPostgres, backlogs_file: str) -> Figures:
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, args.tenants)
    await create_queues(admin_url, 1, args.tenants)
    await execute(admin_url, OUTBOX_SQL.format(rows=args.outbox_rows))
    await execute(admin_url, "VACUUM ANALYZE")
    await execute(admin_url, "CHECKPOINT")
    created = time.monotonic() - started
    print(f"{args.tenants:,} tenants and their queues in {created:.0f} s", flush=True)
    figures = await measure(url, backlogs_file, args.tenants, args.outbox_rows, args.runs, args.steady)
    figures.create_seconds = round(created, 1)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--outbox-rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh exporters")
    parser.add_argument("--steady", type=int, default=5, help="refreshes after the first, per run")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        backlogs_file = str(Path(directory) / "backlogs.yml")
        Path(backlogs_file).write_text(example_backlogs())
        server = start_postgres()
        try:
            figures = asyncio.run(run(args, server, backlogs_file))
        finally:
            server.remove()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    (args.out / f"backlogs-{stamp}.json").write_text(json.dumps(asdict(figures), indent=1, default=str) + "\n")
    print(markdown(figures))
    return 0 if figures.correct else 1


if __name__ == "__main__":
    sys.exit(main())
