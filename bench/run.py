"""The scale benchmark: the exporter against the database's own floor, side by side, in one run.

For each tenant count (tenants are added cumulatively to one throwaway stock
PostgreSQL server):

- exporter: `runs` fresh exporters (exporter.service.build_exporter over
  exporter.loading.load, defaults); each does a first refresh (new connections:
  cold backends) then `steady` refreshes; per-signal durations come from the
  signal caches; statements and prepares per refresh from the Postgres client;
  the backend memory of its sessions from /proc/<backend pid>/status;
- floor: the best hand-written batched reading: 250 schemas per statement,
  named prepared statements reused, 2 connections each owning half the
  batches, parallel workers and JIT off, one implicit transaction per statement;
- naive: one statement per tenant and signal over a default asyncpg pool of 2
  (re-planned each time), skipped above --naive-max tenants, cut at --naive-cap s;
- the exporter process (python -m exporter serve) after its first refresh: RSS.

Then the cached-scrape HTTP figures (wrk -t2 -c16 --latency) for the exporter,
a constant-body ASGI app and prometheus_client's make_asgi_app serving the same
page, all under the exporter's uvicorn settings; and the idle-close check.

    .venv/bin/python -m bench.run            # full run (~15-25 min)
    .venv/bin/python -m bench.run --quick    # ~2 min
    .venv/bin/python -m bench.run --tenants 10,1000 --runs 3 --stretch

Writes bench/results/<date>.json and bench/results/latest.md. This module is the
runner; each measurement has its own: bench.refreshes (fresh exporters),
bench.floors (hand-written and naive readings), bench.lifecycle (the served
process, idle close), bench.cached_scrapes (wrk), bench.poolers; bench.machine
describes the machine, bench.figures holds the values and bench.report the tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import sys
import time
from collections.abc import Sequence
from dataclasses import asdict
from datetime import UTC, datetime
from pathlib import Path

from bench import poolers as pooler_bench
from bench.cached_scrapes import measure_http
from bench.figures import Report, Row
from bench.floors import measure_floor, measure_naive
from bench.lifecycle import check_idle_close, exporter_rss
from bench.machine import execute, loadavg, machine_state
from bench.refreshes import SIGNALS, measure_exporter
from bench.report import markdown
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import create_database, create_tenants

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-scale-exporter"  # noqa: S105 -- a throwaway server's role
DEFAULT_TENANTS = (10, 100, 1_000, 5_000, 10_000)
STRETCH = 50_000


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", help="comma-separated tenant counts (default 10,100,1000,5000,10000)")
    parser.add_argument("--stretch", action="store_true", help=f"add {STRETCH:,} tenants")
    parser.add_argument("--runs", type=int, default=5, help="fresh exporters (and floors) per tenant count")
    parser.add_argument("--stretch-runs", type=int, default=3, help=f"runs at {STRETCH:,} tenants")
    parser.add_argument("--steady", type=int, default=5, help="refreshes after the first, per run")
    parser.add_argument("--naive-max", type=int, default=10_000, help="no naive baseline above this many tenants")
    parser.add_argument("--naive-runs", type=int, default=2)
    parser.add_argument("--naive-cap", type=float, default=60.0, help="seconds a naive refresh may take")
    parser.add_argument("--http-seconds", type=int, default=10)
    parser.add_argument("--http-tenants", type=int, default=10_000, help="tenant count for the HTTP figures")
    parser.add_argument("--no-http", action="store_true")
    parser.add_argument(
        "--poolers-tenants", type=int, default=10_000, help="tenant count for the connection paths (poolers) section"
    )
    parser.add_argument("--no-poolers", action="store_true")
    parser.add_argument("--before", help="git ref of the exporter to compare with, connected directly (e.g. main)")
    parser.add_argument("--quick", action="store_true", help="10,100,1000 tenants, 3 runs, 3 s of wrk")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.quick:
        args.tenants = args.tenants or "10,100,1000"
        args.runs, args.steady, args.http_seconds, args.naive_runs = 3, 3, 3, 1
    counts = [int(n) for n in args.tenants.split(",")] if args.tenants else list(DEFAULT_TENANTS)
    if args.stretch and STRETCH not in counts:
        counts.append(STRETCH)
    args.counts = sorted(set(counts))
    return args


async def run(args: argparse.Namespace, server: LocalPostgres) -> Report:
    started = time.monotonic()
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    # Benchmark only: lets the floor's sessions read their own pg_backend_memory_contexts.
    await execute(admin_url, "GRANT pg_read_all_stats TO orpycamcp_exporter")
    report = Report(
        started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=await machine_state(admin_url),
        options={k: v for k, v in vars(args).items() if k not in ("out", "tenants", "quick")},
    )
    created = 0
    http_count = max((n for n in args.counts if n <= args.http_tenants), default=args.counts[0])
    for count in args.counts:
        t0 = time.monotonic()
        await create_tenants(admin_url, created + 1, count)
        await execute(admin_url, "CHECKPOINT")
        create_seconds = time.monotonic() - t0
        created = count
        print(f"[{time.monotonic() - started:6.0f}s] {count:,} tenants ({create_seconds:.0f} s to create)", flush=True)
        runs = args.stretch_runs if count >= STRETCH else args.runs
        exporter = await measure_exporter(url, admin_url, count, runs, args.steady)
        print(f"    exporter first {exporter.first.ms()} steady {exporter.steady.ms()} ms", flush=True)
        floor = await measure_floor(url, runs, args.steady)
        print(f"    floor first {floor.first.ms()} steady {floor.steady.ms()} ms", flush=True)
        naive = None
        if count <= args.naive_max:
            naive = await measure_naive(url, args.naive_runs, args.naive_cap)
            print(f"    naive {naive.refresh.ms()} ms", flush=True)
        rss = await asyncio.to_thread(exporter_rss, url)
        report.rows.append(Row(count, round(create_seconds, 1), exporter, floor, naive, rss))
        if count == http_count and not args.no_http:
            figures, series, rss_after = await asyncio.to_thread(measure_http, url, args.http_seconds)
            report.http, report.http_tenants, report.http_series = figures, count, series
            report.exporter_rss_after_http_mib = rss_after
            for h in figures:
                print(f"    http {h.app} {h.encoding}: {h.requests_per_second:,.0f} req/s", flush=True)
        if count == args.poolers_tenants and not args.no_poolers:
            report.poolers = await pooler_bench.measure_poolers(
                server.port,
                url,
                "bench",
                EXPORTER_PASSWORD,
                count,
                args.runs,
                args.steady,
                args.before,
                SIGNALS,
            )
            print("\n".join(pooler_bench.markdown(report.poolers)), flush=True)
        if count == args.counts[0]:
            report.idle = await check_idle_close(url, admin_url)
            print(f"    idle close: {report.idle}", flush=True)
    report.machine["loadavg_end"] = loadavg()
    report.seconds = time.monotonic() - started
    return report


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    server = start_postgres()  # stock settings: only durability is relaxed (fsync off ...)
    try:
        report = asyncio.run(run(args, server))
    finally:
        server.remove()
    args.out.mkdir(parents=True, exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    (args.out / f"{stamp}.json").write_text(json.dumps(asdict(report), indent=1, default=str) + "\n")
    (args.out / "latest.md").write_text(markdown(report))
    print(markdown(report))
    return 0


if __name__ == "__main__":
    sys.exit(main())
