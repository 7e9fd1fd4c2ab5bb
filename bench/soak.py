"""Soak: the exporter process scraped every 100 ms for 10 minutes, with a fault
injected every minute (PostgreSQL stopped then started, PostgreSQL killed then
started, Redis paused then resumed, a tenant table locked ACCESS EXCLUSIVE).

Reports the exporter's RSS growth (must stay under 5 MB), its open file
descriptors and the exporter role's database sessions before and after, the
scrapes that failed (must be none: /metrics answers whatever the fault), the
slowest scrape against the scrape timeout, and for every fault whether the
affected signals came back within one TTL once it cleared.

    .venv/bin/python -m bench.soak                        # 10 minutes
    .venv/bin/python -m bench.soak --duration 120 --fault-every 30

Results go to bench/results/soak-<timestamp>.json; a markdown summary is printed.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

import asyncpg
import httpx

from bench.load import (
    RESULTS,
    ROOT,
    SCRAPE_TIMEOUT_HEADER,
    create_bench_database,
    create_tenants,
    exporter_sessions,
    exporter_url,
    open_fds,
    page_state,
    rss_bytes,
)
from devkit.process import exporter_process
from devkit.servers import LocalPostgres, LocalRedis, start_postgres, start_redis
from devkit.streams import create_stream_groups_at
from registry.values import SIGNALS

POSTGRES_SIGNALS = ("dlq", "preservation", "audit_chain")
FAULTS = ("postgres_stop", "redis_pause", "table_lock", "postgres_kill")
RSS_GROWTH_LIMIT = 5 * 2**20


@dataclass
class FaultRecord:
    fault: str
    started_at: float  # seconds since the soak started
    cleared_at: float
    affected: tuple[str, ...]
    seen_unmeasured: bool = False  # one of the affected signals was reported unmeasured
    unmeasured: list[str] = field(default_factory=list)  # every signal reported unmeasured meanwhile
    recovered_after: float | None = None  # seconds from clearing to every signal measured again


@dataclass
class Snapshot:
    at: float
    rss_mb: float
    fds: int
    sessions: int | None


@dataclass
class SoakResult:
    duration: float
    interval: float
    ttl: float
    deadline: float
    scrape_timeout: float
    tenants: int
    scrapes: int = 0
    errors: int = 0
    error_kinds: dict[str, int] = field(default_factory=dict)
    slowest_scrape_ms: float = 0.0
    unmeasured_pages: dict[str, int] = field(default_factory=lambda: {s: 0 for s in SIGNALS})
    faults: list[FaultRecord] = field(default_factory=list)
    snapshots: list[Snapshot] = field(default_factory=list)
    before: Snapshot | None = None
    after: Snapshot | None = None
    tracebacks: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)  # distinct warning lines of the exporter's log

    @property
    def rss_growth_mb(self) -> float:
        if self.before is None or self.after is None:
            return float("nan")
        return round(self.after.rss_mb - self.before.rss_mb, 2)

    @property
    def ok(self) -> bool:
        return (
            self.errors == 0
            and self.slowest_scrape_ms < self.scrape_timeout * 1000
            and self.rss_growth_mb * 2**20 < RSS_GROWTH_LIMIT
            and all(f.seen_unmeasured and f.recovered_after is not None for f in self.faults)
            and self.after is not None
            and self.after.sessions is not None
            and self.after.sessions <= 2
        )


class Soak:
    def __init__(
        self, postgres: LocalPostgres, redis_server: LocalRedis, admin_url: str, database: str, result: SoakResult
    ) -> None:
        self.postgres = postgres
        self.redis = redis_server
        self.admin_url = admin_url
        self.database = database
        self.result = result
        self.started = time.monotonic()
        self.open_fault: FaultRecord | None = None
        self.recovering: list[FaultRecord] = []

    def now(self) -> float:
        return round(time.monotonic() - self.started, 2)

    async def snapshot(self, pid: int) -> Snapshot:
        try:
            sessions: int | None = await exporter_sessions(self.admin_url, self.database)
        except (OSError, asyncpg.PostgresError):
            sessions = None
        return Snapshot(self.now(), round(rss_bytes(pid) / 2**20, 2), open_fds(pid), sessions)

    async def scrape_loop(self, url: str, until: float) -> None:
        r = self.result
        headers = {SCRAPE_TIMEOUT_HEADER: f"{r.scrape_timeout:g}"}
        async with httpx.AsyncClient(timeout=r.scrape_timeout + 5, headers=headers) as client:
            next_at = time.monotonic()
            while time.monotonic() < until:
                sent = time.monotonic()
                try:
                    response = await client.get(url + "/metrics")
                    if response.status_code != 200:
                        raise RuntimeError(f"status {response.status_code}")
                    state = page_state(response.content)
                except (httpx.HTTPError, RuntimeError, ValueError) as exc:
                    kind = type(exc).__name__ if not isinstance(exc, RuntimeError) else str(exc)
                    r.error_kinds[kind] = r.error_kinds.get(kind, 0) + 1
                    r.errors += 1
                    state = None
                elapsed_ms = (time.monotonic() - sent) * 1000
                r.scrapes += 1
                r.slowest_scrape_ms = round(max(r.slowest_scrape_ms, elapsed_ms), 1)
                if state is not None:
                    self.observe(state.measured)
                next_at += r.interval
                await asyncio.sleep(max(0.0, next_at - time.monotonic()))

    def observe(self, measured: dict[str, float]) -> None:
        for name, value in measured.items():
            if value != 1:
                self.result.unmeasured_pages[name] += 1
        current = [f for f in (self.open_fault, *self.recovering) if f is not None]
        for fault in current:
            fault.unmeasured = sorted(set(fault.unmeasured) | {s for s, v in measured.items() if v != 1})
        if self.open_fault is not None and any(measured.get(s) == 0 for s in self.open_fault.affected):
            self.open_fault.seen_unmeasured = True
        for fault in list(self.recovering):
            if any(measured.get(s) == 0 for s in fault.affected):
                fault.seen_unmeasured = True
            elif all(value == 1 for value in measured.values()):
                fault.recovered_after = round(self.now() - fault.cleared_at, 2)
                self.recovering.remove(fault)

    async def inject(self, fault: str, length: float) -> None:
        affected = ("streams",) if fault == "redis_pause" else ("dlq",) if fault == "table_lock" else POSTGRES_SIGNALS
        record = FaultRecord(fault, self.now(), 0.0, affected)
        self.open_fault = record
        if fault in ("postgres_stop", "postgres_kill"):
            mode = signal.SIGINT if fault == "postgres_stop" else signal.SIGKILL
            await asyncio.to_thread(self.postgres.stop, mode)
            await asyncio.sleep(length)
            await asyncio.to_thread(self.postgres.start)
        elif fault == "redis_pause":
            self.redis.pause()
            await asyncio.sleep(length)
            self.redis.resume()
        else:
            locker = await asyncpg.connect(self.admin_url)
            try:
                await locker.execute('BEGIN; LOCK TABLE "tenant_t000001".evento_dead_letter IN ACCESS EXCLUSIVE MODE')
                await asyncio.sleep(length)
                await locker.execute("ROLLBACK")
            finally:
                await locker.close()
        record.cleared_at = self.now()
        self.open_fault = None
        self.recovering.append(record)
        self.result.faults.append(record)

    async def run(
        self, url: str, pid: int, duration: float, fault_every: float, fault_length: float, faults: list[str]
    ) -> None:
        until = self.started + duration
        scraping = asyncio.create_task(self.scrape_loop(url, until))
        await asyncio.sleep(min(30.0, fault_every / 2))
        self.result.before = await self.snapshot(pid)
        number = 0
        while True:
            next_fault = self.started + fault_every * (number + 1)
            # The last fault must clear with time left to recover and settle before the end.
            if next_fault + fault_length + 3 * self.result.ttl + 5 > until:
                break
            while time.monotonic() < next_fault:
                await asyncio.sleep(min(10.0, next_fault - time.monotonic()))
                self.result.snapshots.append(await self.snapshot(pid))
            await self.inject(faults[number % len(faults)], fault_length)
            number += 1
        await scraping
        self.result.after = await self.snapshot(pid)


def markdown(result: SoakResult) -> str:
    before, after = result.before, result.after
    lines = [
        f"### Soak: {result.duration:g} s, a scrape every {result.interval * 1000:g} ms, {result.tenants} tenants,"
        f" TTL {result.ttl:g} s, deadline {result.deadline:g} s",
        "",
        "| scrapes | errors | slowest scrape | RSS before → after (growth) | fds before → after"
        " | sessions before → after |",
        "|---|---|---|---|---|---|",
        f"| {result.scrapes} | {result.errors} {result.error_kinds or ''} | {result.slowest_scrape_ms:g} ms"
        f" (timeout {result.scrape_timeout:g} s)"
        f" | {before.rss_mb if before else '?'} → {after.rss_mb if after else '?'} MB"
        f" ({result.rss_growth_mb:+g} MB) | {before.fds if before else '?'} → {after.fds if after else '?'}"
        f" | {before.sessions if before else '?'} → {after.sessions if after else '?'} |",
        "",
        "| at | fault | affected | seen unmeasured | signals unmeasured meanwhile | measured again after clearing |",
        "|---|---|---|---|---|---|",
    ]
    for fault in result.faults:
        recovered = "never" if fault.recovered_after is None else f"{fault.recovered_after:g} s"
        lines.append(
            f"| {fault.started_at:g}–{fault.cleared_at:g} s | {fault.fault} | {', '.join(fault.affected)}"
            f" | {fault.seen_unmeasured} | {', '.join(fault.unmeasured) or '–'} | {recovered} |"
        )
    lines += ["", f"RSS samples (MB): {[s.rss_mb for s in result.snapshots]}", f"ok: **{result.ok}**"]
    return "\n".join(lines)


async def soak(args: argparse.Namespace, postgres: LocalPostgres, redis_server: LocalRedis) -> SoakResult:
    database = "soak"
    admin_url = await create_bench_database(postgres, database)
    await create_tenants(admin_url, args.tenants)
    await create_stream_groups_at(redis_server.url)
    result = SoakResult(
        duration=args.duration,
        interval=args.interval,
        ttl=args.ttl,
        deadline=args.deadline,
        scrape_timeout=args.scrape_timeout,
        tenants=args.tenants,
    )
    exporter_args = [
        "--database.url",
        exporter_url(postgres, database),
        "--redis.url",
        redis_server.url,
        "--ttl",
        f"{args.ttl:g}",
        "--deadline",
        f"{args.deadline:g}",
        "--log.level",
        "warning",
    ]
    with exporter_process(exporter_args, postgres.base) as exporter:
        runner = Soak(postgres, redis_server, admin_url, database, result)
        await runner.run(
            exporter.url,
            exporter.process.pid,
            args.duration,
            args.fault_every,
            args.fault_length,
            args.faults.split(","),
        )
        log = exporter.log()
    if "Traceback" in log:
        result.error_kinds["traceback in the exporter log"] = log.count("Traceback")
        result.errors += 1
        # Kept for the report: the server's directory (and the log in it) goes with the server.
        result.tracebacks = [log[max(0, i - 300) : i + 3000] for i in _find_all(log, "Traceback")][:3]
    result.warnings = sorted({line.split(" ", 3)[-1][:200] for line in log.splitlines() if " WARNING " in line})[:20]
    return result


def _find_all(text: str, needle: str) -> list[int]:
    found, start = [], text.find(needle)
    while start != -1:
        found.append(start)
        start = text.find(needle, start + 1)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--duration", type=float, default=600)
    parser.add_argument("--interval", type=float, default=0.1)
    parser.add_argument("--fault-every", type=float, default=60)
    parser.add_argument("--fault-length", type=float, default=10)
    parser.add_argument("--tenants", type=int, default=200)
    parser.add_argument("--ttl", type=float, default=2)
    parser.add_argument("--deadline", type=float, default=1.5)
    parser.add_argument("--scrape-timeout", type=float, default=3)
    parser.add_argument("--faults", default=",".join(FAULTS), help="faults injected in turn")
    args = parser.parse_args()
    postgres = start_postgres()
    redis_server = start_redis()
    try:
        result = asyncio.run(soak(args, postgres, redis_server))
    finally:
        redis_server.remove()
        postgres.remove()
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"soak-{time.strftime('%Y%m%d-%H%M%S')}.json"
    payload = asdict(result) | {"rss_growth_mb": result.rss_growth_mb, "ok": result.ok}
    path.write_text(json.dumps(payload, indent=2) + "\n")
    print(markdown(result))
    print(f"\nresults: {Path(path).relative_to(ROOT)}")
    return 0 if result.ok else 1


if __name__ == "__main__":
    sys.exit(main())
