"""One broken tenant against a healthy platform: what it costs the signals that still measure.

A throwaway stock PostgreSQL server with `--tenants` tenants (devkit.tenants).
Each round runs two fresh exporters, one after the other, each in a process of
its own: the code of `--before` (a git ref, e.g. main) and the code of this
tree. Each does a first refresh (cold, not counted) and warm-up refreshes until one
measures every signal (not counted either), `--healthy` refreshes,
then one tenant's `evento_dead_letter` is renamed (dlq unmeasured) and it does
`--broken` refreshes; the table is renamed back before the next exporter.
The cache TTL is 0: every scrape refreshes dlq, preservation and audit_chain.

Per refresh: the durations of the signals (from the signal caches), the
exporter's backend PIDs (pg_stat_activity, by application_name) and the
statements its backends report prepared during that refresh
(pg_prepared_statements.prepare_time, read on each backend by the backend).

    .venv/bin/python -m bench.broken_tenant --tenants 10000 --rounds 2
    .venv/bin/python -m bench.broken_tenant --tenants 1000 --rounds 1   # ~1 min

Writes bench/results/broken-tenant-<date>.json and .md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import subprocess
import sys
import time
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.machine import loadavg
from bench.poolers import code_at
from bench.refreshes import EXPORTER_APP
from bench.run import EXPORTER_PASSWORD, RESULTS
from devkit.servers import start_postgres
from devkit.tenants import create_database, create_tenants, slug

ROOT = Path(__file__).resolve().parent.parent
SIGNALS = ("dlq", "preservation", "audit_chain")
HEALTHY_SIGNALS = ("preservation", "audit_chain")

# Runs inside the exporter's own process, on the code of PYTHONPATH; prints one JSON line.
ROUND_SCRIPT = """
import asyncio, json, sys, time
import asyncpg
from exporter.service import build_exporter
from exporter.loading import load

URL, ADMIN, SCHEMA, HEALTHY, BROKEN, APP = sys.argv[1:7]

async def backends(admin):
    rows = await admin.fetch("SELECT pid FROM pg_stat_activity WHERE application_name = $1"
                             " AND datname = current_database() ORDER BY pid", APP)
    return [row["pid"] for row in rows]

async def prepared_since(postgres, since):
    count = 0
    for lane in postgres._lanes:
        async with lane.lock:
            if lane.connection is not None and not lane.connection.is_closed():
                count += await lane.connection.fetchval(
                    "SELECT count(*) FROM pg_prepared_statements WHERE prepare_time >= to_timestamp($1)", since)
    return count

async def refresh(exporter, admin, phase):
    postgres = exporter.sources.postgres
    since = time.time()
    prepares = postgres.prepares
    started = time.monotonic()
    await exporter.scrape()
    wall = time.monotonic() - started
    return {
        "phase": phase,
        "wall": wall,
        "durations": {n: c.last.duration for n, c in exporter.caches.items()},
        "measured": {n: c.last.measured for n, c in exporter.caches.items()},
        "failures": {n: str(c.last.failure.reason) for n, c in exporter.caches.items() if c.last.failure},
        "backends": await backends(admin),
        "prepared_on_server": await prepared_since(postgres, since),
        "prepares_counted": postgres.prepares - prepares,
    }

async def main():
    admin = await asyncpg.connect(ADMIN)
    exporter = build_exporter(load({"database_url": URL, "signals": "dlq,preservation,audit_chain"}, {}))
    for cache in exporter.caches.values():
        cache.ttl = 0
    refreshes = []
    try:
        refreshes.append(await refresh(exporter, admin, "first"))
        # Warm: until one refresh measures every signal (a cold one can pass the deadline).
        for _ in range(4):
            if all(refreshes[-1]["measured"].values()):
                break
            refreshes.append(await refresh(exporter, admin, "warm-up"))
        for _ in range(int(HEALTHY)):
            refreshes.append(await refresh(exporter, admin, "healthy"))
        await admin.execute(f"ALTER TABLE {SCHEMA}.evento_dead_letter RENAME TO evento_dead_letter_away")
        try:
            for _ in range(int(BROKEN)):
                refreshes.append(await refresh(exporter, admin, "broken"))
        finally:
            await admin.execute(f"ALTER TABLE {SCHEMA}.evento_dead_letter_away RENAME TO evento_dead_letter")
    finally:
        await exporter.close()
        await admin.close()
    print(json.dumps(refreshes))

asyncio.run(main())
"""


def one_round(code: Path, url: str, admin_url: str, schema: str, healthy: int, broken: int) -> list[dict[str, Any]]:
    done = subprocess.run(
        [sys.executable, "-c", ROUND_SCRIPT, url, admin_url, schema, str(healthy), str(broken), EXPORTER_APP],
        capture_output=True,
        text=True,
        check=False,
        env={**os.environ, "PYTHONPATH": f"{code}{os.pathsep}{ROOT}"},
        cwd=code,
    )
    if done.returncode != 0:
        raise SystemExit(f"the round on {code} failed:\n{done.stderr}")
    result: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return result


def median_of(refreshes: list[dict[str, Any]], phase: str, signal: str) -> float:
    return float(statistics.median(r["durations"][signal] for r in refreshes if r["phase"] == phase))


def markdown(report: dict[str, Any]) -> list[str]:
    lines = [
        f"# One broken tenant, {report['tenants']:,} tenants ({report['date']})",
        "",
        f"{report['rounds']} rounds, each: the code of `{report['before']}` then this tree, alternating;"
        f" per exporter a cold first refresh and warm-up refreshes until every signal is measured"
        f" (not counted), {report['healthy']} healthy refreshes, then"
        f" one tenant's `evento_dead_letter` renamed and {report['broken']} refreshes (TTL 0)."
        f" Load average {report['loadavg_start']} before, {report['loadavg_end']} after; {report['seconds']:.0f} s.",
        "",
        "| code | signal | healthy median | one tenant broken, median | ratio |",
        "|---|---|---:|---:|---:|",
    ]
    for variant in ("before", "after"):
        refreshes = [r for one in report["runs"][variant] for r in one]
        for signal in HEALTHY_SIGNALS:
            healthy = median_of(refreshes, "healthy", signal)
            broken = median_of(refreshes, "broken", signal)
            lines.append(
                f"| {report['labels'][variant]} | {signal} | {healthy * 1000:,.0f} ms | {broken * 1000:,.0f} ms"
                f" | {broken / healthy:.2f}x |"
            )
    lines += [
        "",
        "Backend PIDs and statements prepared per refresh (first round; prepared = what the backends report"
        " prepared during the refresh in pg_prepared_statements / what the exporter counted):",
        "",
        "| code | refresh | dlq | backend PIDs | prepared (server / counted) | preservation | audit_chain |",
        "|---|---|---|---|---:|---:|---:|",
    ]
    for variant in ("before", "after"):
        for index, r in enumerate(report["runs"][variant][0]):
            dlq = "measured" if r["measured"]["dlq"] else r["failures"].get("dlq", "unmeasured")
            lines.append(
                f"| {report['labels'][variant]} | {index} {r['phase']} | {dlq} | {','.join(map(str, r['backends']))}"
                f" | {r['prepared_on_server']} / {r['prepares_counted']}"
                f" | {r['durations']['preservation'] * 1000:,.0f} ms | {r['durations']['audit_chain'] * 1000:,.0f} ms |"
            )
    return lines


async def prepare(tenants: int) -> tuple[Any, str, str, str]:
    server = start_postgres()
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, tenants)
    print(f"{tenants:,} tenants created in {time.monotonic() - started:.0f} s", flush=True)
    return server, admin_url, url, f"tenant_{slug(tenants // 2)}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--rounds", type=int, default=2)
    parser.add_argument("--healthy", type=int, default=3)
    parser.add_argument("--broken", type=int, default=5)
    parser.add_argument("--before", default="main", help="git ref of the code to compare with")
    args = parser.parse_args()
    began = time.monotonic()
    report: dict[str, Any] = {
        "date": datetime.now(UTC).strftime("%Y-%m-%dT%H-%M"),
        "tenants": args.tenants,
        "rounds": args.rounds,
        "healthy": args.healthy,
        "broken": args.broken,
        "before": args.before,
        "labels": {"before": f"before ({args.before})", "after": "after"},
        "loadavg_start": loadavg(),
        "runs": {"before": [], "after": []},
    }
    server, admin_url, url, schema = asyncio.run(prepare(args.tenants))
    try:
        with code_at(args.before) as before_code:
            for number in range(1, args.rounds + 1):
                for variant, code in (("before", before_code), ("after", ROOT)):
                    refreshes = one_round(code, url, admin_url, schema, args.healthy, args.broken)
                    report["runs"][variant].append(refreshes)
                    broken = [r["durations"]["preservation"] for r in refreshes if r["phase"] == "broken"]
                    print(f"round {number} {variant}: preservation while broken {[round(b, 2) for b in broken]}")
    finally:
        server.remove()
    report["loadavg_end"] = loadavg()
    report["seconds"] = time.monotonic() - began
    RESULTS.mkdir(exist_ok=True)
    stem = RESULTS / f"broken-tenant-{report['date']}"
    stem.with_suffix(".json").write_text(json.dumps(report, indent=1) + "\n")
    stem.with_suffix(".md").write_text("\n".join(markdown(report)) + "\n")
    print("\n".join(markdown(report)))


if __name__ == "__main__":
    main()
