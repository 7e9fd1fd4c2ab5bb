"""The declared-backlog benchmark: each declared backlog's refresh against the
dlq refresh, measured in the same run, on the same tenants.

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py: 20
dead letters each) and, in every tenant, the Celery-style dead_letter_queue
of deploy/backlogs.example.yml (20 rows each, one in three pending, indexed on
(status, task_name, created_at)); plus a global outbox of `--outbox-rows` rows
(1 in 100 pending, partial index on the pending predicate). The same tenant
table is declared twice: kyc_dead_letters (pending and oldest only) and
kyc_states (the same, plus rows per state and arrivals within 1h and 24h: one
pass over every row instead of the pending ones); the rows of the first
`--recent` tenants are restamped minutes and hours before the run, so that the
windows count something. `--runs` fresh exporters with dlq and every backlog
enabled (default settings) each do a first refresh and `--steady` refreshes;
every signal's measurement duration comes from its cache. Every refresh must
be complete and the counts exact (states and arrivals computed here from the
rows' formula).

    .venv/bin/python -m bench.backlogs                  # 10,000 tenants, 3 runs
    .venv/bin/python -m bench.backlogs --tenants 1000 --runs 2

Writes bench/results/backlogs-<date>.json and prints the markdown row.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import tempfile
import time
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench.figures import Spread, save_figures
from bench.machine import execute
from devkit.backlogs import example_backlogs, pending_only
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import (
    QUEUE_ROWS_PER_TENANT,
    TASKS,
    create_database,
    create_queues,
    create_tenants,
    expected_queue_totals,
    expected_totals,
)
from exporter.cache import SignalCache
from exporter.loading import load
from exporter.service import build_exporter
from registry.backlogs import ARRIVALS, ITEMS, PENDING_ITEMS
from registry.families import DLQ_PENDING

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-backlogs-exporter"  # noqa: S105 -- a throwaway server's role
OUTBOX_SQL = """
CREATE TABLE public.outbox (
    id bigserial PRIMARY KEY, partition int NOT NULL, status text NOT NULL, created_at timestamptz NOT NULL);
INSERT INTO public.outbox (partition, status, created_at)
SELECT i % 4, CASE WHEN i % 100 = 0 THEN 'PENDING' ELSE 'PROCESSED' END,
    timestamptz '2026-01-01' + make_interval(secs => i)
FROM generate_series(1, {rows}) AS i;
CREATE INDEX outbox_unprocessed_idx ON public.outbox (partition, created_at) WHERE status <> 'PROCESSED';
GRANT SELECT ON public.outbox TO orpycamcp_exporter;
ANALYZE public.outbox;
"""
# The example's KYC backlog twice: with pending and oldest only, and as kyc_states with
# its rows per state and arrivals within two windows; and the example's outbox.
KYC_STATES = example_backlogs("kyc_dead_letters").removeprefix("backlogs:\n")
KYC_PLAIN = pending_only("kyc_dead_letters").removeprefix("backlogs:\n")
BACKLOGS = (
    "backlogs:\n"
    + KYC_PLAIN
    + KYC_STATES.replace("kyc_dead_letters:", "kyc_states:", 1).replace("windows: [1h]", "windows: [1h, 24h]", 1)
    + example_backlogs("outbox").removeprefix("backlogs:\n")
)
# Row j of a recent tenant: j minutes old (within 1h) for j <= 10, else 2h and j minutes (within 24h
# only); stable for the 50 minutes a run may last.
RECENT_SQL = """
DO $block$
BEGIN
    FOR k IN 1..{recent} LOOP
        EXECUTE format($sql$
            UPDATE %1$s.dead_letter_queue SET created_at = now() - make_interval(mins => CASE
                WHEN id <= 10 THEN id::int ELSE 120 + id::int END)
        $sql$, quote_ident('tenant_t' || lpad(k::text, 6, '0')));
    END LOOP;
END
$block$;
"""
SIGNALS = ("dlq", "kyc_dead_letters", "kyc_states", "outbox")


def expected_states(tenants: int, recent: int) -> dict[tuple[str, str, str], int]:
    """Rows per (family, task, state or window) of kyc_states, from devkit/tenants.py's formula."""
    want: dict[tuple[str, str, str], int] = {}
    for k in range(1, tenants + 1):
        for j in range(1, QUEUE_ROWS_PER_TENANT + 1):
            task = TASKS[(k + j) % len(TASKS)]
            state = "pending" if (k + j) % 3 == 0 else "reprocessed"
            want[(ITEMS, task, state)] = want.get((ITEMS, task, state), 0) + 1
            windows = (("1h", j <= 10), ("24h", True)) if k <= recent else ()
            for window, within in windows:
                if within:
                    want[(ARRIVALS, task, window)] = want.get((ARRIVALS, task, window), 0) + 1
    return want


def states_of(caches: Mapping[str, SignalCache]) -> dict[tuple[str, str, str], int] | None:
    outcome = caches["kyc_states"].last
    if outcome is None or outcome.samples is None:
        return None
    return {
        (sample.family, sample.labels[1], sample.labels[2]): int(sample.value)
        for sample in outcome.samples
        if sample.family in (ITEMS, ARRIVALS) and sample.value
    }


@dataclass
class Figures:
    tenants: int
    outbox_rows: int
    runs: int
    steady: int
    first: dict[str, Spread]
    steady_by_signal: dict[str, Spread]
    ratio_to_dlq: dict[str, float]
    states_vs_pending_only: float
    recent: int
    failures: list[str]
    correct: bool
    create_seconds: float


def pending_total(caches: Mapping[str, SignalCache], signal: str, family: str) -> int | None:
    outcome = caches[signal].last
    if outcome is None or outcome.samples is None:
        return None
    return int(sum(sample.value for sample in outcome.samples if sample.family == family))


async def measure(
    url: str,
    backlogs_config_file: str,
    tenants: int,
    outbox_rows: int,
    runs: int,
    steady: int,
    recent: int,
    deadline: float,
) -> Figures:
    first: dict[str, list[float]] = {name: [] for name in SIGNALS}
    steadies: dict[str, list[float]] = {name: [] for name in SIGNALS}
    failures: list[str] = []
    want = {
        "dlq": sum(expected_totals(1, tenants).pending.values()),
        "kyc_dead_letters": sum(expected_queue_totals(1, tenants).pending.values()),
        "kyc_states": sum(expected_queue_totals(1, tenants).pending.values()),
        "outbox": outbox_rows // 100,
    }
    families = {
        "dlq": DLQ_PENDING.name,
        "kyc_dead_letters": PENDING_ITEMS,
        "kyc_states": PENDING_ITEMS,
        "outbox": PENDING_ITEMS,
    }
    want_states = expected_states(tenants, recent)
    correct = True
    for run in range(runs):
        values = {"database_url": url, "signals": ",".join(SIGNALS), "backlogs_config_file": backlogs_config_file}
        settings = load({**values, "deadline": str(deadline), "ttl": str(deadline * 2)}, {})
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
                if states_of(caches) not in (None, want_states):
                    failures.append(f"run {run} refresh {refresh} kyc_states: states or arrivals not exact")
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
        states_vs_pending_only=round(medians["kyc_states"].median / medians["kyc_dead_letters"].median, 2),
        recent=recent,
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
    rows.append("")
    rows.append(
        f"kyc_states (2 states, 2 windows) vs kyc_dead_letters (pending and oldest), steady median:"
        f" {figures.states_vs_pending_only:.2f}x"
    )
    return "\n".join(rows) + "\n"


async def run(args: argparse.Namespace, server: LocalPostgres, backlogs_config_file: str) -> Figures:
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, args.tenants)
    await create_queues(admin_url, 1, args.tenants)
    await execute(admin_url, RECENT_SQL.format(recent=args.recent))
    await execute(admin_url, OUTBOX_SQL.format(rows=args.outbox_rows))
    await execute(admin_url, "VACUUM ANALYZE")
    await execute(admin_url, "CHECKPOINT")
    created = time.monotonic() - started
    print(f"{args.tenants:,} tenants and their queues in {created:.0f} s", flush=True)
    figures = await measure(
        url, backlogs_config_file, args.tenants, args.outbox_rows, args.runs, args.steady, args.recent, args.deadline
    )
    figures.create_seconds = round(created, 1)
    return figures


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--outbox-rows", type=int, default=100_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh exporters")
    parser.add_argument("--steady", type=int, default=5, help="refreshes after the first, per run")
    parser.add_argument(
        "--deadline", type=float, default=10.0, help="seconds per measurement (raise it on a busy machine)"
    )
    parser.add_argument("--recent", type=int, default=100, help="tenants whose rows arrived within 24h")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as directory:
        backlogs_config_file = str(Path(directory) / "backlogs.yml")
        Path(backlogs_config_file).write_text(BACKLOGS)
        server = start_postgres()
        try:
            figures = asyncio.run(run(args, server, backlogs_config_file))
        finally:
            server.remove()
    save_figures(args.out, "backlogs", figures)
    print(markdown(figures))
    return 0 if figures.correct else 1


if __name__ == "__main__":
    sys.exit(main())
