"""Load: the exporter process over many tenants, a short TTL, and 200 concurrent
keep-alive clients scraping /metrics as fast as they can.

Records the errors (must be zero), requests/s, p50/p99 latency, and counts the
measurements of every signal per TTL window two ways: the changes of
orpycamcp_signal_last_success_timestamp_seconds seen by a monitor client, and
the calls of the signal's statements in pg_stat_statements (the server is
started with shared_preload_libraries=pg_stat_statements). There must be exactly
one measurement per signal per TTL window: two successive measurements at least
one TTL apart, and never a window without one while clients keep scraping.

    .venv/bin/python -m bench.load                      # 1,000 tenants, 200 clients, 60 s, wrk
    .venv/bin/python -m bench.load --client python --clients 50 --duration 8 --tenants 200

Results go to bench/results/load-<timestamp>.json; a markdown summary is printed.
The helpers here (servers, tenants, exporter process, process statistics) are
shared with bench/soak.py and tests/faults/test_load.py.
"""

from __future__ import annotations

import argparse
import asyncio
import itertools
import json
import math
import os
import shutil
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path

import asyncpg
import httpx
from prometheus_client.parser import text_string_to_metric_families

from devkit.process import exporter_process
from devkit.servers import LocalPostgres, LocalRedis, start_postgres, start_redis
from devkit.streams import create_stream_groups_at
from devkit.tenants import create_database
from exporter.tools.demo import EXPORTER_ROLE
from registry.values import ORIGIN_GROUPS, SIGNALS

ROOT = Path(__file__).resolve().parent.parent
RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-exporter-7c1"  # noqa: S105 -- a throwaway server's role
SCRAPE_TIMEOUT_HEADER = "X-Prometheus-Scrape-Timeout-Seconds"
TENANTS_PER_STATEMENT = 250

# The statements of each database signal, as pg_stat_statements shows them.
STATEMENT_MARKERS = {
    "dlq": "evento_dead_letter",
    "preservation": "preservation_retry",
    "audit_chain": "audit_chain_runs",
}


# --- Servers and data ---------------------------------------------------------------------------------------------


def slug(number: int) -> str:
    return f"t{number:06d}"


async def create_bench_database(server: LocalPostgres, name: str, statements: bool = False) -> str:
    """A fresh database with the contract, the exporter role and its password; its admin URL."""
    url = await create_database(server, name, EXPORTER_PASSWORD)
    if statements:
        connection = await asyncpg.connect(url)
        try:
            await connection.execute("CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        finally:
            await connection.close()
    return url


async def create_tenants(admin_url: str, count: int) -> None:
    """Tenants t000001..: one pending dead letter (origin_group by number) and one
    exhausted retry each, created TENANTS_PER_STATEMENT per DO block."""
    groups = ", ".join(f"'{group}'" for group in ORIGIN_GROUPS)
    connection = await asyncpg.connect(admin_url)
    try:
        for first in range(1, count + 1, TENANTS_PER_STATEMENT):
            last = min(first + TENANTS_PER_STATEMENT - 1, count)
            await connection.execute(
                f"""
                DO $block$
                DECLARE k int; s text; g text;
                BEGIN
                    FOR k IN {first}..{last} LOOP
                        s := 't' || lpad(k::text, 6, '0');
                        g := (ARRAY[{groups}])[k % 4 + 1];
                        INSERT INTO public.tenants (slug) VALUES (s);
                        PERFORM public.orpycamcp_create_tenant_schema(s);
                        PERFORM public.orpycamcp_grant_tenant(s);
                        EXECUTE format('INSERT INTO %I.evento_dead_letter'
                                       ' (event_id, tenant_slug, origin_group, status, created_at)'
                                       ' VALUES (%L, %L, %L, %L, now())',
                                       'tenant_' || s, 'e' || k, s, g, 'pending');
                        EXECUTE format('INSERT INTO %I.preservation_retry (artifact_id, artifact, phase, status)'
                                       ' VALUES (%L, %L, %L, %L)',
                                       'tenant_' || s, 'a' || k, 'document', 'fixity', 'exhausted');
                    END LOOP;
                END
                $block$;
                """
            )
        await connection.execute(
            "INSERT INTO public.audit_chain_runs (started_at, finished_at, scope, breaks, declared_breaks,"
            " verification_ok) VALUES (now(), now(), 'complete', 0, 0, true)"
        )
    finally:
        await connection.close()


def exporter_url(server: LocalPostgres, database: str) -> str:
    return server.url(user=EXPORTER_ROLE, password=EXPORTER_PASSWORD, database=database)


async def exporter_sessions(admin_url: str, database: str) -> int:
    connection = await asyncpg.connect(admin_url)
    try:
        count: int = await connection.fetchval(
            "SELECT count(*) FROM pg_stat_activity WHERE usename = $1 AND datname = $2", EXPORTER_ROLE, database
        )
        return count
    finally:
        await connection.close()


async def statement_calls(admin_url: str) -> dict[str, list[int]]:
    """Calls of each distinct statement of each database signal run by the exporter role
    (pg_stat_statements). A measurement runs each of its statements once (dlq and
    preservation: one per batch of tenants), so every entry counts the measurements."""
    connection = await asyncpg.connect(admin_url)
    try:
        calls: dict[str, list[int]] = {}
        for signal, marker in STATEMENT_MARKERS.items():
            rows = await connection.fetch(
                "SELECT s.calls FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid"
                " WHERE r.rolname = $1 AND s.query LIKE '%' || $2 || '%' ORDER BY s.calls",
                EXPORTER_ROLE,
                marker,
            )
            calls[signal] = [row["calls"] for row in rows]
        return calls
    finally:
        await connection.close()


async def reset_statements(admin_url: str) -> None:
    connection = await asyncpg.connect(admin_url)
    try:
        await connection.execute("SELECT pg_stat_statements_reset()")
    finally:
        await connection.close()


# --- The exporter process -----------------------------------------------------------------------------------------


def rss_bytes(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) * 1024
    raise RuntimeError(f"no VmRSS for {pid}")


def open_fds(pid: int) -> int:
    return len(os.listdir(f"/proc/{pid}/fd"))


# --- Reading pages ------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class PageState:
    measured: dict[str, float]
    last_success: dict[str, float]
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float]


def page_state(raw: bytes) -> PageState:
    measured: dict[str, float] = {}
    last_success: dict[str, float] = {}
    values: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {}
    for family in text_string_to_metric_families(raw.decode("utf-8")):
        for sample in family.samples:
            values[(sample.name, tuple(sorted(sample.labels.items())))] = sample.value
            if sample.name == "orpycamcp_signal_measured":
                measured[sample.labels["signal"]] = sample.value
            elif sample.name == "orpycamcp_signal_last_success_timestamp_seconds":
                last_success[sample.labels["signal"]] = sample.value
    return PageState(measured, last_success, values)


@dataclass
class Monitor:
    """Polls /metrics and records every distinct last-success time of every signal."""

    url: str
    interval: float = 0.05
    successes: dict[str, list[float]] = field(default_factory=lambda: {s: [] for s in SIGNALS})
    unmeasured_pages: dict[str, int] = field(default_factory=lambda: {s: 0 for s in SIGNALS})
    polls: int = 0
    errors: int = 0
    last: PageState | None = None

    async def run(self, until: float) -> None:
        async with httpx.AsyncClient(timeout=30, headers={SCRAPE_TIMEOUT_HEADER: "10"}) as client:
            while time.monotonic() < until:
                try:
                    response = await client.get(self.url + "/metrics")
                    if response.status_code != 200:
                        self.errors += 1
                    else:
                        self.observe(page_state(response.content))
                except httpx.HTTPError:
                    self.errors += 1
                await asyncio.sleep(self.interval)

    def observe(self, state: PageState) -> None:
        self.polls += 1
        self.last = state
        for signal, value in state.measured.items():
            if value != 1:
                self.unmeasured_pages[signal] += 1
        for signal, stamp in state.last_success.items():
            seen = self.successes.setdefault(signal, [])
            if not seen or seen[-1] != stamp:
                seen.append(stamp)


@dataclass
class WindowReport:
    """Measurements of one signal during the run, against the TTL windows."""

    signal: str
    measurements: int
    windows: float
    min_gap: float | None
    max_gap: float | None
    statement_calls: list[int] | None = None  # distinct call counts of its statements (pg_stat_statements)
    expected_statement_calls: list[int] | None = None  # [measurements]: each statement once per measurement

    def one_per_window(self, ttl: float, slack: float) -> bool:
        """Never two measurements within one TTL, never a window without one, and the
        database saw exactly the statements of the measurements counted."""
        if self.measurements < 2 or self.min_gap is None or self.max_gap is None:
            return False
        return (
            self.min_gap >= ttl - 0.01
            and self.max_gap <= ttl + slack
            and self.statement_calls == self.expected_statement_calls
        )


def window_reports(monitor: Monitor, elapsed: float, ttl: float) -> dict[str, WindowReport]:
    reports: dict[str, WindowReport] = {}
    for signal, stamps in monitor.successes.items():
        # The first stamp may predate the run (the warm-up measurement): gaps count from it.
        gaps = [b - a for a, b in itertools.pairwise(stamps)]
        reports[signal] = WindowReport(
            signal=signal,
            measurements=max(len(stamps) - 1, 0),
            windows=round(elapsed / ttl, 2),
            min_gap=round(min(gaps), 3) if gaps else None,
            max_gap=round(max(gaps), 3) if gaps else None,
        )
    return reports


# --- Clients ------------------------------------------------------------------------------------------------------


@dataclass
class ClientStats:
    driver: str
    clients: int
    duration: float
    requests: int
    errors: int
    requests_per_second: float
    p50_ms: float
    p99_ms: float
    max_ms: float
    error_kinds: dict[str, int] = field(default_factory=dict)


def percentile(sorted_values: Sequence[float], fraction: float) -> float:
    if not sorted_values:
        return math.nan
    index = min(len(sorted_values) - 1, max(0, math.ceil(fraction * len(sorted_values)) - 1))
    return sorted_values[index]


async def python_clients(url: str, clients: int, duration: float, scrape_timeout: float = 10) -> ClientStats:
    """`clients` keep-alive connections, each scraping /metrics back to back for `duration` seconds."""
    latencies: list[float] = []
    kinds: dict[str, int] = {}
    limits = httpx.Limits(max_connections=clients, max_keepalive_connections=clients)
    headers = {SCRAPE_TIMEOUT_HEADER: f"{scrape_timeout:g}", "Accept-Encoding": "gzip"}
    started = time.monotonic()
    until = started + duration
    async with httpx.AsyncClient(limits=limits, timeout=scrape_timeout + 5, headers=headers) as client:

        async def one_client() -> None:
            while time.monotonic() < until:
                sent = time.monotonic()
                try:
                    response = await client.get(url + "/metrics")
                    if response.status_code != 200 or not response.content.startswith(b"# HELP"):
                        kinds[f"status {response.status_code}"] = kinds.get(f"status {response.status_code}", 0) + 1
                        continue
                except httpx.HTTPError as exc:
                    kinds[type(exc).__name__] = kinds.get(type(exc).__name__, 0) + 1
                    continue
                latencies.append(time.monotonic() - sent)

        await asyncio.gather(*(one_client() for _ in range(clients)))
    elapsed = time.monotonic() - started
    latencies.sort()
    errors = sum(kinds.values())
    return ClientStats(
        driver="python-httpx",
        clients=clients,
        duration=round(elapsed, 2),
        requests=len(latencies) + errors,
        errors=errors,
        requests_per_second=round((len(latencies) + errors) / elapsed, 1),
        p50_ms=round(percentile(latencies, 0.50) * 1000, 2),
        p99_ms=round(percentile(latencies, 0.99) * 1000, 2),
        max_ms=round(latencies[-1] * 1000, 2) if latencies else math.nan,
        error_kinds=kinds,
    )


WRK_SCRIPT = """
wrk.method = "GET"
wrk.headers["X-Prometheus-Scrape-Timeout-Seconds"] = "10"
wrk.headers["Accept-Encoding"] = "gzip"
done = function(summary, latency, requests)
  local e = summary.errors
  io.write(string.format(
    'WRKJSON {"requests":%d,"duration_us":%d,"connect":%d,"read":%d,"write":%d,"status":%d,"timeout":%d,' ..
    '"p50_us":%d,"p99_us":%d,"max_us":%d}\\n',
    summary.requests, summary.duration, e.connect, e.read, e.write, e.status, e.timeout,
    latency:percentile(50), latency:percentile(99), latency.max))
end
"""


async def wrk_clients(url: str, clients: int, duration: float, threads: int = 2) -> ClientStats:
    """wrk with `clients` keep-alive connections; its Lua `done` hook reports the figures as JSON."""
    wrk = shutil.which("wrk")
    if wrk is None:
        raise RuntimeError("wrk is not installed (apt-get install wrk), or use --client python")
    with tempfile.NamedTemporaryFile("w", suffix=".lua", delete=False) as script:
        script.write(WRK_SCRIPT)
    try:
        process = await asyncio.create_subprocess_exec(
            wrk,
            f"-t{threads}",
            f"-c{clients}",
            f"-d{max(1, round(duration))}s",
            "--timeout",
            "15s",
            "-s",
            script.name,
            url + "/metrics",
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.STDOUT,
        )
        output, _ = await process.communicate()
    finally:
        os.unlink(script.name)
    text = output.decode(errors="replace")
    line = next((line for line in text.splitlines() if line.startswith("WRKJSON ")), None)
    if line is None:
        raise RuntimeError(f"wrk gave no summary: {text}")
    figures = json.loads(line.removeprefix("WRKJSON "))
    kinds = {key: figures[key] for key in ("connect", "read", "write", "status", "timeout") if figures[key]}
    elapsed = figures["duration_us"] / 1e6
    return ClientStats(
        driver="wrk",
        clients=clients,
        duration=round(elapsed, 2),
        requests=figures["requests"],
        errors=sum(kinds.values()),
        requests_per_second=round(figures["requests"] / elapsed, 1),
        p50_ms=round(figures["p50_us"] / 1000, 2),
        p99_ms=round(figures["p99_us"] / 1000, 2),
        max_ms=round(figures["max_us"] / 1000, 2),
        error_kinds=kinds,
    )


# --- One run ------------------------------------------------------------------------------------------------------


@dataclass
class LoadResult:
    tenants: int
    ttl: float
    deadline: float
    clients: ClientStats
    windows: dict[str, WindowReport]
    monitor_polls: int
    monitor_errors: int
    unmeasured_pages: dict[str, int]
    values_correct: bool
    exporter_rss_mb: float
    exporter_fds: int
    database_sessions: int
    max_connections: int
    exactly_one_per_window: bool

    @property
    def ok(self) -> bool:
        return (
            self.clients.errors == 0
            and self.monitor_errors == 0
            and self.exactly_one_per_window
            and self.values_correct
            and all(n == 0 for n in self.unmeasured_pages.values())
            and self.database_sessions <= self.max_connections
        )


def expected_values(tenants: int) -> dict[tuple[str, tuple[tuple[str, str], ...]], float]:
    pending = {group: 0 for group in ORIGIN_GROUPS}
    for k in range(1, tenants + 1):
        pending[ORIGIN_GROUPS[k % 4]] += 1
    expected: dict[tuple[str, tuple[tuple[str, str], ...]], float] = {
        ("orpycamcp_dlq_pending_events", (("origin_group", group),)): float(count) for group, count in pending.items()
    }
    expected[("orpycamcp_preservation_exhausted_artifacts", (("artifact", "document"), ("phase", "fixity")))] = float(
        tenants
    )
    return expected


async def run_load(
    postgres: LocalPostgres,
    redis_server: LocalRedis,
    log_dir: Path,
    tenants: int,
    clients: int,
    duration: float,
    ttl: float,
    deadline: float,
    driver: str,
    database: str = "load",
) -> LoadResult:
    """Builds the data, starts the exporter and drives the clients; servers are the caller's."""
    admin_url = await create_bench_database(postgres, database, statements=True)
    await create_tenants(admin_url, tenants)
    await create_stream_groups_at(redis_server.url)
    args = [
        "--database.url",
        exporter_url(postgres, database),
        "--redis.url",
        redis_server.url,
        "--ttl",
        f"{ttl:g}",
        "--deadline",
        f"{deadline:g}",
        "--log.level",
        "warning",
    ]
    with exporter_process(args, log_dir) as exporter:
        # Warm up: one measurement of each signal, then count from a clean slate.
        async with httpx.AsyncClient(timeout=30, headers={SCRAPE_TIMEOUT_HEADER: "20"}) as client:
            warm = page_state((await client.get(exporter.url + "/metrics")).content)
        if any(value != 1 for value in warm.measured.values()):
            raise RuntimeError(f"the warm-up scrape is not measured: {warm.measured}\n{exporter.log()}")
        await reset_statements(admin_url)
        monitor = Monitor(exporter.url)
        monitor.observe(warm)
        started = time.monotonic()
        drive = (
            wrk_clients(exporter.url, clients, duration)
            if driver == "wrk"
            else python_clients(exporter.url, clients, duration)
        )
        stats, _ = await asyncio.gather(drive, monitor.run(started + duration))
        elapsed = time.monotonic() - started
        # One last poll joins (and waits for) any measurement still in flight, so every
        # measurement whose statements pg_stat_statements counts below has been seen.
        async with httpx.AsyncClient(timeout=30, headers={SCRAPE_TIMEOUT_HEADER: "20"}) as client:
            monitor.observe(page_state((await client.get(exporter.url + "/metrics")).content))
        calls = await statement_calls(admin_url)
        sessions = await exporter_sessions(admin_url, database)
        rss = rss_bytes(exporter.process.pid)
        fds = open_fds(exporter.process.pid)
    windows = window_reports(monitor, elapsed, ttl)
    for signal, entries in calls.items():
        # Every statement of the signal ran once per measurement: all entries count the same.
        windows[signal].statement_calls = sorted(set(entries))
        windows[signal].expected_statement_calls = [windows[signal].measurements]
    slack = deadline + 1.0  # a measurement ends at most a deadline after its window opened
    exact = all(report.one_per_window(ttl, slack) for report in windows.values())
    final = monitor.last
    correct = final is not None and all(
        final.values.get(key) == value for key, value in expected_values(tenants).items()
    )
    return LoadResult(
        tenants=tenants,
        ttl=ttl,
        deadline=deadline,
        clients=stats,
        windows=windows,
        monitor_polls=monitor.polls,
        monitor_errors=monitor.errors,
        unmeasured_pages=monitor.unmeasured_pages,
        values_correct=correct,
        exporter_rss_mb=round(rss / 2**20, 1),
        exporter_fds=fds,
        database_sessions=sessions,
        max_connections=2,
        exactly_one_per_window=exact,
    )


def markdown(result: LoadResult) -> str:
    c = result.clients
    lines = [
        f"### Load: {result.tenants} tenants, {c.clients} clients ({c.driver}), {c.duration:g} s, TTL {result.ttl:g} s",
        "",
        "| requests | errors | requests/s | p50 | p99 | max |",
        "|---|---|---|---|---|---|",
        f"| {c.requests} | {c.errors} {c.error_kinds or ''} | {c.requests_per_second:g} | {c.p50_ms:g} ms"
        f" | {c.p99_ms:g} ms | {c.max_ms:g} ms |",
        "",
        "| signal | measurements | TTL windows | min gap | max gap | calls of each statement |",
        "|---|---|---|---|---|---|",
    ]
    for report in result.windows.values():
        lines.append(
            f"| {report.signal} | {report.measurements} | {report.windows:g} | {report.min_gap} s | {report.max_gap} s"
            f" | {'–' if report.statement_calls is None else report.statement_calls}"
            f"{'' if report.expected_statement_calls is None else f' (expected {report.expected_statement_calls})'} |"
        )
    lines += [
        "",
        f"exactly one measurement per signal per TTL window: **{result.exactly_one_per_window}**;"
        f" values correct: **{result.values_correct}**; unmeasured pages: {result.unmeasured_pages};"
        f" exporter RSS {result.exporter_rss_mb} MB, {result.exporter_fds} fds,"
        f" {result.database_sessions} database sessions (at most {result.max_connections})",
    ]
    return "\n".join(lines)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=1000)
    parser.add_argument("--clients", type=int, default=200)
    parser.add_argument("--duration", type=float, default=60)
    parser.add_argument("--ttl", type=float, default=2)
    parser.add_argument("--deadline", type=float, default=1.5)
    parser.add_argument("--client", choices=("wrk", "python"), default="wrk")
    args = parser.parse_args()
    postgres = start_postgres({"shared_preload_libraries": "pg_stat_statements"})
    redis_server = start_redis()
    try:
        result = asyncio.run(
            run_load(
                postgres,
                redis_server,
                postgres.base,
                args.tenants,
                args.clients,
                args.duration,
                args.ttl,
                args.deadline,
                args.client,
            )
        )
    finally:
        redis_server.remove()
        postgres.remove()
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"load-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(asdict(result) | {"ok": result.ok}, indent=2) + "\n")
    print(markdown(result))
    print(f"\nresults: {path.relative_to(ROOT)}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
