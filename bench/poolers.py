"""The connection paths to the database (the exporter directly, or a pooler in between), side by side
at one tenant count (10,000 by default): the exporter directly, through a
PgBouncer in session pooling and through one in transaction pooling (Debian's
1.18), in each pool mode that fits the path;
the exporter as it was before per-transaction settings (`--before REF`: that
commit's code, run from a `git archive` of it, directly: it cannot pass a
PgBouncer); and hand-written floors for the three transaction shapes.

The paths are interleaved (one fresh exporter per path per round, `runs`
rounds), so a shared machine's load spreads over all of them alike; ratios
are against the direct path in session mode measured in the same rounds.

    .venv/bin/python -m bench.run --tenants 10000 --poolers-tenants 10000 --before main
"""

from __future__ import annotations

import asyncio
import json
import os
import statistics
import subprocess
import sys
import tarfile
import tempfile
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import asyncpg

from bench.figures import PoolerFigures, PoolersReport
from bench.floors import TENANTS, floor_statements
from bench.machine import loadavg
from bench.refreshes import CountsCheck, counts_check, fresh_exporter, refresh
from devkit.pgbouncer import start_pgbouncer
from exporter.sources.postgres.transaction import transaction_opening
from exporter.timeouts import Timeouts

ROOT = Path(__file__).resolve().parent.parent
FLOOR_BATCH = 250
EXPORTER_ROLE = "orpycamcp_exporter"


async def exporter_round(url: str, pool_mode: str, steady: int, signals: str, check: CountsCheck) -> PoolerFigures:
    """One fresh exporter: its first refresh, then `steady` more; counts checked on the first complete one."""
    async with fresh_exporter({"database_url": url, "signals": signals, "database_pool_mode": pool_mode}) as exporter:
        done = await refresh(exporter, steady, check)
    return PoolerFigures(
        "",
        pool_mode,
        first=[done.first.wall],
        steady=[one.wall for one in done.steady],
        failures=done.failures(),
        statements_steady=done.steady[-1].statements if done.steady else 0,
        prepares_steady=done.steady[-1].prepares if done.steady else 0,
        correct=done.correct,
    )


BEFORE_SCRIPT = """
import asyncio, json, sys, time
from exporter.service import build_exporter
from exporter.loading import load

async def main(url, signals, steady):
    exporter = build_exporter(load({"database_url": url, "signals": signals}, {}))
    for cache in exporter.caches.values():
        cache.ttl = 0
    times, failures = [], []
    try:
        for refresh in range(steady + 1):
            started = time.monotonic()
            await exporter.scrape()
            times.append(time.monotonic() - started)
            failures += [f"refresh {refresh} {n}: {c.last.failure.reason}"
                         for n, c in exporter.caches.items() if c.last is not None and c.last.failure is not None]
    finally:
        await exporter.close()
    print(json.dumps({"times": times, "failures": failures}))

asyncio.run(main(sys.argv[1], sys.argv[2], int(sys.argv[3])))
"""


@contextmanager
def code_at(ref: str) -> Iterator[Path]:
    """The exporter and registry packages as they were at `ref`, in a temporary directory."""
    with tempfile.TemporaryDirectory(prefix="orpycamcp-before-") as folder:
        archive = Path(folder) / "code.tar"
        subprocess.run(
            ["git", "archive", "--format=tar", "-o", str(archive), ref, "exporter", "registry"],
            cwd=ROOT,
            check=True,
        )
        with tarfile.open(archive) as tar:
            tar.extractall(folder, filter="data")
        yield Path(folder)


def before_round(code: Path, url: str, steady: int, signals: str) -> PoolerFigures:
    env = {**os.environ, "PYTHONPATH": str(code)}
    done = subprocess.run(
        [sys.executable, "-c", BEFORE_SCRIPT, url, signals, str(steady)],
        capture_output=True,
        text=True,
        check=True,
        env=env,
        cwd=code,
    )
    result = json.loads(done.stdout)
    return PoolerFigures(
        "", "session", first=result["times"][:1], steady=result["times"][1:], failures=result["failures"]
    )


# -- floors: the same batches, hand-written, in each transaction shape -------------------------------------------

FLOOR_SHAPES = {
    "implicit": "one implicit transaction per statement, settings at connect, prepared once (the old shape)",
    "transaction, prepared": "BEGIN READ ONLY + SET LOCAL (one message), the prepared statement, COMMIT",
    "transaction, unprepared": "BEGIN READ ONLY + SET LOCAL (one message), an unnamed statement, COMMIT",
}


async def floor_lane(
    connection: asyncpg.Connection, shape: str, prepared: dict[str, Any], sqls: list[str], opening: str
) -> None:
    for sql in sqls:
        if shape != "implicit":
            await connection.execute(opening)
        if shape == "transaction, unprepared":
            await connection.fetch(sql)
        else:
            statement = prepared.get(sql)
            if statement is None:
                statement = prepared[sql] = await connection.prepare(sql, name=f"floor_{len(prepared)}")
            await statement.fetch()
        if shape != "implicit":
            await connection.execute("COMMIT")


async def floor_steady(url: str, shape: str, steady: int, deadline: float) -> list[float]:
    """Steady refreshes (after one warm-up) of the floor in `shape`, on 2 fresh connections."""
    settings = {"application_name": "bench-floor"}
    if shape == "implicit":
        settings |= {"default_transaction_read_only": "on", "max_parallel_workers_per_gather": "0", "jit": "off"}
    connections = [await asyncpg.connect(url, server_settings=settings, statement_cache_size=0) for _ in range(2)]
    opening = transaction_opening(Timeouts(deadline=deadline))
    prepared: list[dict[str, Any]] = [{}, {}]
    times: list[float] = []
    try:
        for refresh in range(steady + 1):
            started = time.monotonic()
            rows = await connections[0].fetch(TENANTS.sql, *TENANTS.args)
            schemas = ['"tenant_' + row["slug"].replace('"', '""') + '"' for row in rows]
            slices = [schemas[i : i + FLOOR_BATCH] for i in range(0, len(schemas), FLOOR_BATCH)]
            half = (len(slices) + 1) // 2
            lanes = [
                [sql for batch in part for sql in floor_statements(batch)] for part in (slices[:half], slices[half:])
            ]
            await asyncio.gather(*(floor_lane(connections[i], shape, prepared[i], lanes[i], opening) for i in range(2)))
            if refresh > 0:
                times.append(time.monotonic() - started)
    finally:
        for connection in connections:
            await connection.close()
    return times


# -- the connection paths ----------------------------------------------------------------------------------------------


async def measure_poolers(
    server_port: int,
    url: str,
    database: str,
    exporter_password: str,
    tenants: int,
    runs: int,
    steady: int,
    before: str | None,
    signals: str,
) -> PoolersReport:
    started = time.monotonic()
    check = counts_check(tenants)
    report = PoolersReport(tenants, runs, steady, before, loadavg())
    users = {EXPORTER_ROLE: exporter_password}
    session_bouncer = await asyncio.to_thread(start_pgbouncer, server_port, "session", users)
    transaction_bouncer = await asyncio.to_thread(start_pgbouncer, server_port, "transaction", users)
    paths = [
        ("direct", "session", url),
        ("direct", "transaction", url),
        ("PgBouncer 1.18, session pooling", "session", session_bouncer.url(EXPORTER_ROLE, exporter_password, database)),
        (
            "PgBouncer 1.18, transaction pooling",
            "transaction",
            transaction_bouncer.url(EXPORTER_ROLE, exporter_password, database),
        ),
    ]
    figures = {(path, mode): PoolerFigures(path, mode) for path, mode, _ in paths}
    before_figures = PoolerFigures(f"direct, before ({before})", "session") if before else None
    try:
        with code_or_none(before) as code:
            for round_number in range(runs):
                for path, mode, path_url in paths:
                    one = await exporter_round(path_url, mode, steady, signals, check)
                    merge(figures[(path, mode)], one)
                    print(
                        f"    round {round_number} {path} / {mode}: first {one.first[0] * 1000:,.0f} ms,"
                        f" steady {statistics.median(one.steady) * 1000:,.0f} ms",
                        flush=True,
                    )
                if before_figures is not None and code is not None:
                    one = await asyncio.to_thread(before_round, code, url, steady, signals)
                    merge(before_figures, one)
                    print(f"    round {round_number} before: steady {statistics.median(one.steady) * 1000:,.0f} ms")
        for shape in FLOOR_SHAPES:
            report.floors[shape] = []
        for _ in range(runs):
            for shape in FLOOR_SHAPES:
                report.floors[shape] += await floor_steady(url, shape, steady, 10.0)
    finally:
        await asyncio.to_thread(session_bouncer.remove)
        await asyncio.to_thread(transaction_bouncer.remove)
    report.paths = ([before_figures] if before_figures else []) + list(figures.values())
    report.loadavg_end = loadavg()
    report.seconds = time.monotonic() - started
    return report


@contextmanager
def code_or_none(ref: str | None) -> Iterator[Path | None]:
    if ref is None:
        yield None
        return
    with code_at(ref) as code:
        yield code


def merge(into: PoolerFigures, one: PoolerFigures) -> None:
    into.first += one.first
    into.steady += one.steady
    into.failures += one.failures
    into.statements_steady = one.statements_steady or into.statements_steady
    into.prepares_steady = one.prepares_steady
    if one.correct is not None:
        into.correct = one.correct if into.correct is None else into.correct and one.correct


def ms(values: list[float]) -> str:
    if not values:
        return "-"
    return f"{statistics.median(values) * 1000:,.0f} ({min(values) * 1000:,.0f}-{max(values) * 1000:,.0f})"


def ratio(values: list[float], baseline: list[float]) -> str:
    if not values or not baseline:
        return "-"
    return f"{statistics.median(values) / statistics.median(baseline):.2f}x"


def markdown(report: PoolersReport) -> list[str]:
    baseline = next((r.steady for r in report.paths if r.path == "direct" and r.pool_mode == "session"), [])
    floor = report.floors.get("implicit", [])
    lines = [
        "",
        f"## Connection paths to the database ({report.tenants:,} tenants)",
        "",
        f"{report.runs} rounds, each a fresh exporter per path (first refresh, then {report.steady} steady ones),"
        " the paths interleaved; PgBouncer 1.18 (Debian's) with default_pool_size 4, in front of the same"
        f" server. Load average {report.loadavg_start} before, {report.loadavg_end} after"
        f" ({report.seconds / 60:.1f} min). Times in ms, median (min-max); ratios of steady medians.",
        "",
        "| connection path | pool mode | first | steady | steady vs direct session | steady vs floor (implicit)"
        " | statements / prepares per steady refresh | counts exact |",
        "|---|---|---:|---:|---:|---:|---:|---|",
    ]
    for path in report.paths:
        failures = f" ({len(path.failures)} failures)" if path.failures else ""
        exact = "-" if path.correct is None else ("yes" if path.correct else "NO")
        counts = f"{path.statements_steady} / {path.prepares_steady}" if path.statements_steady else "-"
        lines.append(
            f"| {path.path} | {path.pool_mode} | {ms(path.first)} | {ms(path.steady)}{failures}"
            f" | {ratio(path.steady, baseline)} | {ratio(path.steady, floor)} | {counts} | {exact} |"
        )
    lines += [
        "",
        "Floors (hand-written, the same batches, 2 connections, direct), steady refreshes:",
        "",
        "| transaction shape | steady | vs implicit |",
        "|---|---:|---:|",
    ]
    for shape, description in FLOOR_SHAPES.items():
        lines.append(f"| {description} | {ms(report.floors[shape])} | {ratio(report.floors[shape], floor)} |")
    failed = [f"{path.path} / {path.pool_mode}: {failure}" for path in report.paths for failure in path.failures]
    if failed:
        lines += ["", "Failures: " + "; ".join(failed[:20])]
    return lines
