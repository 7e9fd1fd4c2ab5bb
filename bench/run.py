"""The scale benchmark: the exporter against the database's own floor, side by side, in one run.

For each tenant count (tenants are added cumulatively to one throwaway stock
PostgreSQL server):

- exporter: `runs` fresh exporters (exporter.service.build_exporter over
  exporter.settings.load, defaults); each does a first refresh (new connections:
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

Writes bench/results/<date>.json and bench/results/latest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import gzip
import json
import os
import platform
import re
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from importlib.metadata import version
from pathlib import Path
from typing import Any

import asyncpg

from bench import roads as road_bench
from devkit.process import running_process
from devkit.servers import LocalPostgres, free_port, start_postgres
from devkit.tenants import create_database, create_tenants, expected_totals
from exporter.scrape import Exporter
from exporter.service import build_exporter
from exporter.settings import load
from exporter.signals import dlq, preservation
from exporter.sources.postgres import ACTIVE_TENANTS_SQL, Postgres
from registry.families import DLQ_PENDING, PRESERVATION_EXHAUSTED

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-scale-exporter"  # noqa: S105 -- a throwaway server's role
EXPORTER_APP = "orpycamcp-exporter"
FLOOR_APP = "bench-floor"
FLOOR_BATCH = 250
SIGNALS = "dlq,preservation,audit_chain"
DEFAULT_TENANTS = (10, 100, 1_000, 5_000, 10_000)
STRETCH = 50_000


@dataclass
class Spread:
    median: float
    low: float
    high: float
    n: int

    @classmethod
    def of(cls, values: Sequence[float]) -> Spread:
        if not values:
            return cls(float("nan"), float("nan"), float("nan"), 0)
        return cls(statistics.median(values), min(values), max(values), len(values))

    def ms(self) -> str:
        if self.n == 0:
            return "-"
        if self.n == 1 or self.low == self.high:
            return f"{self.median * 1000:,.0f}"
        return f"{self.median * 1000:,.0f} ({self.low * 1000:,.0f}-{self.high * 1000:,.0f})"


@dataclass
class Backend:
    pid: int
    rss_mib: float
    anon_mib: float
    contexts_mib: float | None = None


@dataclass
class ExporterFigures:
    first: Spread
    steady: Spread
    first_by_signal: dict[str, Spread]
    steady_by_signal: dict[str, Spread]
    failures: list[str]
    statements_first: int
    statements_steady: int
    prepares_first: int
    prepares_steady: int
    backends: list[Backend]
    correct: bool


@dataclass
class FloorFigures:
    first: Spread
    steady: Spread
    statements: int
    backends: list[Backend]


@dataclass
class NaiveFigures:
    refresh: Spread
    statements: int
    capped: bool


@dataclass
class Row:
    tenants: int
    create_seconds: float
    exporter: ExporterFigures
    floor: FloorFigures
    naive: NaiveFigures | None
    exporter_rss_mib: float | None


@dataclass
class HttpFigures:
    app: str
    encoding: str
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    body_bytes: int


@dataclass
class IdleCheck:
    ttl: float
    idle_close: float
    sessions_after_scrape: int
    sessions_after_idle: int
    waited: float


@dataclass
class Report:
    started: str
    machine: dict[str, Any]
    options: dict[str, Any]
    rows: list[Row] = field(default_factory=list)
    http: list[HttpFigures] = field(default_factory=list)
    http_tenants: int | None = None
    http_series: int | None = None
    idle: IdleCheck | None = None
    roads: road_bench.RoadsReport | None = None
    exporter_rss_after_http_mib: float | None = None
    seconds: float = 0.0


# -- helpers -----------------------------------------------------------------


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon... of a process, in MiB."""
    values: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                values[name] = int(rest.split()[0]) / 1024
    return values


async def session_backends(admin_url: str, application: str) -> list[Backend]:
    connection = await asyncpg.connect(admin_url)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
            application,
        )
    finally:
        await connection.close()
    backends = []
    for row in rows:
        status = proc_status(row["pid"])
        backends.append(Backend(row["pid"], round(status.get("VmRSS", 0), 1), round(status.get("RssAnon", 0), 1)))
    return backends


async def session_count(admin_url: str, application: str) -> int:
    return len(await session_backends(admin_url, application))


def expected_series(tenants: int, first: int = 1) -> tuple[int, int]:
    """Pending dead letters and exhausted artifacts of tenants first..tenants."""
    totals = expected_totals(first, tenants)
    return sum(totals.pending.values()), sum(totals.exhausted.values())


# -- exporter ------------------------------------------------------------------


async def measure_exporter(
    url: str,
    admin_url: str,
    tenants: int,
    runs: int,
    steady: int,
    first: int = 1,
    deadline: float | None = None,
) -> ExporterFigures:
    """`runs` fresh exporters over tenants first..tenants (default settings, or `deadline`)."""
    firsts: list[float] = []
    steadies: list[float] = []
    first_by: dict[str, list[float]] = {}
    steady_by: dict[str, list[float]] = {}
    failures: list[str] = []
    statements_first = statements_steady = prepares_first = prepares_steady = 0
    backends: list[Backend] = []
    correct: bool | None = None  # checked on the first complete refresh
    want_pending, want_exhausted = expected_series(tenants, first)
    options: dict[str, object] = {"database_url": url, "signals": SIGNALS}
    if deadline is not None:
        options.update(deadline=deadline, ttl=2 * deadline)
    for run in range(runs):
        exporter = build_exporter(load(options, {}))
        postgres = exporter.sources.postgres
        assert isinstance(postgres, Postgres)
        for cache in exporter.caches.values():
            cache.ttl = 0  # every scrape refreshes every signal
        try:
            for refresh in range(steady + 1):
                statements, prepares = postgres.statements, postgres.prepares
                started = time.monotonic()
                await exporter.scrape()
                wall = time.monotonic() - started
                (firsts if refresh == 0 else steadies).append(wall)
                for name, cache in exporter.caches.items():
                    outcome = cache.last
                    assert outcome is not None
                    (first_by if refresh == 0 else steady_by).setdefault(name, []).append(outcome.duration)
                    if outcome.failure is not None:
                        failures.append(f"run {run} refresh {refresh} {name}: {outcome.failure.reason}")
                if refresh == 0:
                    statements_first = postgres.statements - statements
                    prepares_first = postgres.prepares - prepares
                else:
                    statements_steady = postgres.statements - statements
                    prepares_steady = postgres.prepares - prepares
                if correct is None and all(cache.last and cache.last.measured for cache in exporter.caches.values()):
                    correct = check_counts(exporter, want_pending, want_exhausted)
            if run == runs - 1:
                backends = await session_backends(admin_url, EXPORTER_APP)
        finally:
            await exporter.close()
    return ExporterFigures(
        first=Spread.of(firsts),
        steady=Spread.of(steadies),
        first_by_signal={name: Spread.of(values) for name, values in first_by.items()},
        steady_by_signal={name: Spread.of(values) for name, values in steady_by.items()},
        failures=failures,
        statements_first=statements_first,
        statements_steady=statements_steady,
        prepares_first=prepares_first,
        prepares_steady=prepares_steady,
        backends=backends,
        correct=bool(correct),
    )


def check_counts(exporter: Exporter, want_pending: int, want_exhausted: int) -> bool:
    def total(signal: str, family: str) -> int | None:
        outcome = exporter.caches[signal].last
        if outcome is None or outcome.samples is None:
            return None
        return int(sum(sample.value for sample in outcome.samples if sample.family == family))

    return total("dlq", DLQ_PENDING.name) == want_pending and (
        total("preservation", PRESERVATION_EXHAUSTED.name) == want_exhausted
    )


# -- floor ---------------------------------------------------------------------


async def floor_lane(connection: asyncpg.Connection, prepared: dict[str, Any], batches: list[list[str]]) -> int:
    """One connection's half: both signals' statements over its batches, prepared once, named."""
    done = 0
    for batch in batches:
        for sql in (dlq.batch_sql(batch), preservation.batch_sql(batch)):
            statement = prepared.get(sql)
            if statement is None:
                statement = prepared[sql] = await connection.prepare(sql, name=f"floor_{len(prepared)}")
            await statement.fetch()
            done += 1
    return done


async def measure_floor(url: str, runs: int, steady: int) -> FloorFigures:
    """Hand-written best batched reading, refreshed like the exporter."""
    firsts: list[float] = []
    steadies: list[float] = []
    statements = 0
    backends: list[Backend] = []
    settings = {
        "application_name": FLOOR_APP,
        "default_transaction_read_only": "on",
        "max_parallel_workers_per_gather": "0",
        "jit": "off",
    }
    for run in range(runs):
        connected = time.monotonic()  # a fresh floor connects too, like a fresh exporter
        connections = [await asyncpg.connect(url, server_settings=settings) for _ in range(2)]
        prepared: list[dict[str, Any]] = [{}, {}]
        try:
            for refresh in range(steady + 1):
                started = connected if refresh == 0 else time.monotonic()
                count = 1
                rows = await connections[0].fetch(ACTIVE_TENANTS_SQL)
                schemas = ['"tenant_' + row["slug"].replace('"', '""') + '"' for row in rows]
                slices = [schemas[i : i + FLOOR_BATCH] for i in range(0, len(schemas), FLOOR_BATCH)]
                half = (len(slices) + 1) // 2

                done = await asyncio.gather(
                    floor_lane(connections[0], prepared[0], slices[:half]),
                    floor_lane(connections[1], prepared[1], slices[half:]),
                )
                count += sum(done)
                (firsts if refresh == 0 else steadies).append(time.monotonic() - started)
                statements = count
            if run == runs - 1:
                for connection in connections:
                    pid = connection.get_server_pid()
                    status = proc_status(pid)
                    contexts = None
                    with contextlib.suppress(asyncpg.InsufficientPrivilegeError):
                        contexts = await connection.fetchval("SELECT sum(total_bytes) FROM pg_backend_memory_contexts")
                    backends.append(
                        Backend(
                            pid,
                            round(status.get("VmRSS", 0), 1),
                            round(status.get("RssAnon", 0), 1),
                            None if contexts is None else round(int(contexts) / 2**20, 1),
                        )
                    )
        finally:
            for connection in connections:
                await connection.close()
    return FloorFigures(Spread.of(firsts), Spread.of(steadies), statements, backends)


# -- naive ---------------------------------------------------------------------

NAIVE_DLQ = (
    "SELECT origin_group, count(*) AS events, min(created_at) AS oldest"
    " FROM {schema}.evento_dead_letter WHERE status = 'pending' GROUP BY origin_group"
)
NAIVE_PRESERVATION = (
    "SELECT artifact, phase, count(*) AS artifacts FROM {schema}.preservation_retry"
    " WHERE status = 'exhausted' GROUP BY artifact, phase"
)


async def naive_worker(pool: asyncpg.Pool, queue: list[str]) -> None:
    async with pool.acquire() as connection:
        while queue:
            await connection.fetch(queue.pop())


async def measure_naive(url: str, runs: int, cap: float) -> NaiveFigures:
    """One statement per tenant and signal, as a straightforward exporter would."""
    times: list[float] = []
    statements = 0
    capped = False
    pool = await asyncpg.create_pool(url, min_size=0, max_size=2)
    try:
        for _ in range(runs):
            started = time.monotonic()
            async with pool.acquire() as connection:
                rows = await connection.fetch(ACTIVE_TENANTS_SQL)
            queue = [
                template.format(schema='"tenant_' + row["slug"] + '"')
                for row in rows
                for template in (NAIVE_DLQ, NAIVE_PRESERVATION)
            ]
            statements = len(queue) + 1
            queue.reverse()

            try:
                async with asyncio.timeout(cap):
                    await asyncio.gather(naive_worker(pool, queue), naive_worker(pool, queue))
            except TimeoutError:
                capped = True
                times.append(cap)
                break
            times.append(time.monotonic() - started)
    finally:
        pool.terminate()
    return NaiveFigures(Spread.of(times), statements, capped)


# -- exporter process ----------------------------------------------------------


@contextlib.contextmanager
def serve(command: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    with (
        tempfile.TemporaryDirectory() as folder,
        running_process(command, port, Path(folder) / "serve.log", cwd=ROOT) as running,
    ):
        yield running.process


def exporter_command(url: str, port: int, ttl: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        "--database-url",
        url,
        "--signals",
        SIGNALS,
        "--web.listen-address",
        f"127.0.0.1:{port}",
        "--ttl",
        str(ttl),
        "--log-level",
        "warning",
    ]


def get(port: int, gzip_ok: bool = False) -> bytes:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if gzip_ok:
        request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 -- loopback
        body: bytes = response.read()
    return body


def exporter_rss(url: str) -> float:
    """RSS of the real exporter process after its first refresh."""
    port = free_port()
    with serve(exporter_command(url, port, 60), port) as process:
        get(port)
        return round(proc_status(process.pid).get("VmRSS", 0), 1)


# -- HTTP ----------------------------------------------------------------------


def wrk(port: int, seconds: int, gzip_ok: bool) -> tuple[float, float, float]:
    command = ["wrk", "-t2", "-c16", f"-d{seconds}s", "--latency"]
    if gzip_ok:
        command += ["-H", "Accept-Encoding: gzip"]
    out = subprocess.run([*command, f"http://127.0.0.1:{port}/metrics"], capture_output=True, text=True, check=True)
    text = out.stdout
    rate = float(re.search(r"Requests/sec:\s+([\d.]+)", text).group(1))  # type: ignore[union-attr]

    def latency(percent: str) -> float:
        match = re.search(rf"^\s+{percent}%\s+([\d.]+)(us|ms|s)\s*$", text, re.MULTILINE)
        assert match is not None, text
        scale = {"us": 0.001, "ms": 1.0, "s": 1000.0}[match.group(2)]
        return float(match.group(1)) * scale

    if "Non-2xx" in text or "Socket errors" in text:
        print(f"wrk reported errors:\n{text}", file=sys.stderr)
    return rate, latency("50"), latency("99")


def measure_http(url: str, seconds: int) -> tuple[list[HttpFigures], int, float]:
    """Cached /metrics under wrk for the exporter and the two reference apps."""
    figures: list[HttpFigures] = []
    port = free_port()
    with serve(exporter_command(url, port, 600), port) as process:
        page = get(port)  # the refresh; every request below is served from the cache
        for gzip_ok in (False, True):
            rate, p50, p99 = wrk(port, seconds, gzip_ok)
            size = len(gzip.compress(page, mtime=0)) if gzip_ok else len(page)
            figures.append(HttpFigures("exporter", "gzip" if gzip_ok else "identity", rate, p50, p99, size))
        rss = round(proc_status(process.pid).get("VmRSS", 0), 1)
    series = sum(1 for line in page.decode().splitlines() if line and not line.startswith("#"))
    with tempfile.NamedTemporaryFile(suffix=".prom") as page_file:
        page_file.write(page)
        page_file.flush()
        for app in ("constant", "prometheus_client"):
            port = free_port()
            command = [sys.executable, "-m", "bench.http_apps", app, str(port), page_file.name]
            with serve(command, port):
                for gzip_ok in (False, True):
                    rate, p50, p99 = wrk(port, seconds, gzip_ok)
                    size = len(get(port, gzip_ok))
                    figures.append(HttpFigures(app, "gzip" if gzip_ok else "identity", rate, p50, p99, size))
    return figures, series, rss


# -- idle close ----------------------------------------------------------------


async def check_idle_close(url: str, admin_url: str) -> IdleCheck:
    ttl = 2.0
    exporter = build_exporter(load({"database_url": url, "signals": SIGNALS, "ttl": ttl, "deadline": 1.5}, {}))
    try:
        await exporter.scrape()
        after_scrape = await session_count(admin_url, EXPORTER_APP)
        idle = 3 * ttl
        started = time.monotonic()
        await asyncio.sleep(idle + 1.0)
        after_idle = await session_count(admin_url, EXPORTER_APP)
        return IdleCheck(ttl, idle, after_scrape, after_idle, round(time.monotonic() - started, 1))
    finally:
        await exporter.close()


# -- machine -------------------------------------------------------------------


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def loadavg() -> str:
    return " ".join(read_text("/proc/loadavg").split()[:3])


def wrk_version() -> str:
    """wrk's banner; the scenarios without HTTP figures run without it."""
    if shutil.which("wrk") is None:
        return "wrk not installed"
    return subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]


def host_state() -> dict[str, Any]:
    cpu = "unknown"
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    meminfo = {}
    for line in read_text("/proc/meminfo").splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable"):
            meminfo[name] = f"{int(rest.split()[0]) / 2**20:.1f} GiB"
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "loadavg_start": loadavg(),
        "memory": meminfo,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "asyncpg": version("asyncpg"),
        "uvicorn": version("uvicorn"),
        "prometheus_client": version("prometheus_client"),
        "wrk": wrk_version(),
    }


async def machine_state(admin_url: str) -> dict[str, Any]:
    state = await asyncio.to_thread(host_state)
    connection = await asyncpg.connect(admin_url)
    try:
        pg_version = await connection.fetchval("SHOW server_version")
        locks = await connection.fetchval("SHOW max_locks_per_transaction")
        shared_buffers = await connection.fetchval("SHOW shared_buffers")
        max_connections = await connection.fetchval("SHOW max_connections")
    finally:
        await connection.close()
    state["postgresql"] = pg_version
    state["postgresql_settings"] = {
        "max_locks_per_transaction": locks,
        "shared_buffers": shared_buffers,
        "max_connections": max_connections,
    }
    return state


# -- report --------------------------------------------------------------------


def ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x" if b and b == b and a == a else "-"


def markdown(report: Report) -> str:
    m = report.machine
    lines = [
        f"# Scale benchmark, {report.started}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs, {m['memory'].get('MemTotal')} RAM"
        f" ({m['memory'].get('MemAvailable')} available at start), load average {m['loadavg_start']} at start,"
        f" {m.get('loadavg_end', '?')} at end; kernel {m['kernel']}.",
        f"PostgreSQL {m['postgresql']} with stock settings ({m['postgresql_settings']});"
        f" Python {m['python']}, asyncpg {m['asyncpg']}, uvicorn {m['uvicorn']},"
        f" prometheus_client {m['prometheus_client']}, {m['wrk']}.",
        f"Options: {report.options}. Total {report.seconds / 60:.1f} min.",
        "",
        "Times in ms, median (min-max) over the runs. *first*: the first refresh of a fresh exporter"
        " (new connections, cold backends); *steady*: the refreshes after it. A refresh = every PostgreSQL"
        " signal (dlq, preservation, audit_chain) measured at once.",
        "",
        "## Refresh time vs tenants",
        "",
        "| tenants | exporter first | exporter steady | floor first | floor steady | steady vs floor"
        " | naive (1 query/tenant) | counts exact |",
        "|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in report.rows:
        naive = "skipped"
        if row.naive is not None:
            naive = row.naive.refresh.ms() + (" (cut at cap)" if row.naive.capped else "")
        failures = f" ({len(row.exporter.failures)} failures)" if row.exporter.failures else ""
        lines.append(
            f"| {row.tenants:,} | {row.exporter.first.ms()} | {row.exporter.steady.ms()}{failures}"
            f" | {row.floor.first.ms()} | {row.floor.steady.ms()}"
            f" | {ratio(row.exporter.steady.median, row.floor.steady.median)}"
            f" | {naive} | {'yes' if row.exporter.correct else 'NO (or never measured)'} |"
        )
    lines += [
        "",
        "## Per signal (exporter), ms",
        "",
        "| tenants | dlq first | dlq steady | preservation first | preservation steady"
        " | audit_chain first | audit_chain steady |",
        "|---:|---:|---:|---:|---:|---:|---:|",
    ]
    for row in report.rows:
        cells = []
        for name in ("dlq", "preservation", "audit_chain"):
            cells.append(row.exporter.first_by_signal[name].ms() if name in row.exporter.first_by_signal else "-")
            cells.append(row.exporter.steady_by_signal[name].ms() if name in row.exporter.steady_by_signal else "-")
        lines.append(f"| {row.tenants:,} | " + " | ".join(cells) + " |")
    lines += [
        "",
        "## Database load and memory",
        "",
        "Statements per refresh (prepares: statements planned anew). Backend memory: the sessions' server"
        " processes after the steady refreshes, from /proc/<pid>/status: RSS (includes the shared buffers"
        " they touched) and RssAnon (private: catalog caches, plans); for the floor also"
        " pg_backend_memory_contexts. Exporter RSS: `python -m exporter serve` after its first refresh.",
        "",
        "| tenants | exporter statements first / steady | prepares first / steady | floor statements"
        " | exporter backends RSS / anon MiB | floor backends RSS / anon / contexts MiB | exporter RSS MiB"
        " | tenant creation s |",
        "|---:|---:|---:|---:|---|---|---:|---:|",
    ]
    for row in report.rows:
        exporter_backends = ", ".join(f"{b.rss_mib:.0f} / {b.anon_mib:.0f}" for b in row.exporter.backends) or "-"
        floor_backends = ", ".join(
            f"{b.rss_mib:.0f} / {b.anon_mib:.0f} / {'-' if b.contexts_mib is None else f'{b.contexts_mib:.0f}'}"
            for b in row.floor.backends
        )
        lines.append(
            f"| {row.tenants:,} | {row.exporter.statements_first} / {row.exporter.statements_steady}"
            f" | {row.exporter.prepares_first} / {row.exporter.prepares_steady} | {row.floor.statements}"
            f" | {exporter_backends} | {floor_backends} | {row.exporter_rss_mib or '-'} | {row.create_seconds:.0f} |"
        )
    failed = [(row.tenants, failure) for row in report.rows for failure in row.exporter.failures]
    if failed:
        lines += ["", "Exporter failures: " + "; ".join(f"{n:,}: {f}" for n, f in failed[:20])]
    if report.http:
        lines += [
            "",
            f"## Cached scrapes ({report.http_tenants:,} tenants, {report.http_series} series)",
            "",
            f"`wrk -t2 -c16 -d{report.options['http_seconds']}s --latency` against /metrics, each app under the"
            " exporter's uvicorn settings; the exporter serves its cached page (rendered and gzipped once per"
            " refresh). Exporter RSS after the HTTP runs:"
            f" {report.exporter_rss_after_http_mib} MiB.",
            "",
            "| app | encoding | body bytes | requests/s | vs constant | p50 ms | p99 ms |",
            "|---|---|---:|---:|---:|---:|---:|",
        ]
        floors = {h.encoding: h.requests_per_second for h in report.http if h.app == "constant"}
        for h in report.http:
            lines.append(
                f"| {h.app} | {h.encoding} | {h.body_bytes:,} | {h.requests_per_second:,.0f}"
                f" | {ratio(h.requests_per_second, floors.get(h.encoding, 0))} | {h.p50_ms:.2f} | {h.p99_ms:.2f} |"
            )
    if report.roads is not None:
        lines += road_bench.markdown(report.roads)
    if report.idle is not None:
        i = report.idle
        lines += [
            "",
            "## Idle close",
            "",
            f"TTL {i.ttl:g} s, idle close {i.idle_close:g} s (3 x TTL): {i.sessions_after_scrape} exporter sessions"
            f" after a scrape, {i.sessions_after_idle} after {i.waited:g} s without scrapes.",
        ]
    return "\n".join(lines) + "\n"


# -- main ----------------------------------------------------------------------


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
    parser.add_argument("--roads-tenants", type=int, default=10_000, help="tenant count for the roads section")
    parser.add_argument("--no-roads", action="store_true")
    parser.add_argument("--before", help="git ref of the exporter to compare with on the direct road (e.g. main)")
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
        if count == args.roads_tenants and not args.no_roads:
            wanted = expected_series(count)
            report.roads = await road_bench.measure_roads(
                server.port,
                url,
                "bench",
                EXPORTER_PASSWORD,
                count,
                args.runs,
                args.steady,
                args.before,
                SIGNALS,
                lambda exporter, wanted=wanted: check_counts(exporter, *wanted),
                loadavg,
            )
            print("\n".join(road_bench.markdown(report.roads)), flush=True)
        if count == args.counts[0]:
            report.idle = await check_idle_close(url, admin_url)
            print(f"    idle close: {report.idle}", flush=True)
    report.machine["loadavg_end"] = loadavg()
    report.seconds = time.monotonic() - started
    return report


async def execute(admin_url: str, sql: str) -> None:
    connection = await asyncpg.connect(admin_url)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()


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
