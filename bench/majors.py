"""The exporter on every supported PostgreSQL major (13 to 18, devkit.postgres_majors)
against the hand-written floor, in the same run.

Per major and tenant count: a throwaway stock server of that major (only
`fsync = off`), `--tenants` tenants of devkit.tenants (20 dead letters and 20
preservation retries each) with the example's KYC dead-letter queue
(deploy/backlogs.example.yml: states and a 1h arrivals window, 20 rows each).
Then `--rounds` rounds alternating (the order turns each round):

- **exporter**: a fresh exporter (dlq, preservation, audit_chain and the
  declared `kyc_dead_letters`, default settings, TTL 0) refreshed `--refreshes`
  times on its new connections;
- **floor**: the best hand-written reading of the same tables: one `UNION ALL`
  statement per 250 schemas and signal (the KYC pending value written in the
  SQL), named prepared statements, two connections with the session settings
  set at connect, refreshed as often;
- with `--before`, **before**: the exporter as it was before generic plans
  (its transactions without `plan_cache_mode`), for the comparison;
- with `--framed`, **framed floor**: the floor with each statement in the
  exporter's transaction framing (`BEGIN READ ONLY; SET LOCAL ...` as one
  message, the statement, `COMMIT`), which tells the framing's share of the
  difference from the rest.

With `--no-backlog`, the exporter reads dlq, preservation and audit_chain only,
and the floors the first two.

Printed per major: the steady refresh (refreshes 7 on, medians over every
round) and its ratio to the floor's; refreshes 1 to 6 of a new connection
(medians per position; the first is cold) and the worst of 2-6 against the
steady one; the backends' private memory (RssAnon) after the last round. Then,
on the same server restarted with pg_stat_statements: how many times each kind
of statement was planned for its calls over 8 refreshes of a fresh exporter;
and what the server log gains from one refresh with one tenant's table
dropped, with the role's `log_min_error_statement = panic`
(exporter/contract/grants.sql) and without it.

    .venv/bin/python -m bench.majors                                # 13..18, 5,000 tenants: ~15 min
    .venv/bin/python -m bench.majors --majors 15,18 --tenants 10000
    .venv/bin/python -m bench.majors --majors 13 --tenants 1000 --rounds 2 --before

Writes bench/results/majors-<date>.json and prints the markdown tables.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench.floors import TENANTS, floor_statements
from bench.machine import execute, loadavg, proc_status, session_backends, session_count
from devkit.backlogs import example_backlogs
from devkit.postgres_majors import MAJORS, pinned_versions, start_major
from devkit.servers import LocalPostgres
from devkit.tenants import create_database, create_queues, create_tenants, expected_queue_totals, expected_totals
from exporter.backlogs import parse_declarations
from exporter.exporter import Exporter
from exporter.loading import load
from exporter.service import build_exporter
from exporter.signals import backlog
from exporter.sources.postgres.source import Postgres
from exporter.sources.postgres.transaction import transaction_opening
from exporter.timeouts import Timeouts
from registry.backlogs import PENDING_ITEMS
from registry.families import DLQ_PENDING, PRESERVATION_EXHAUSTED

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-majors-exporter"  # noqa: S105 -- a throwaway server's role
EXPORTER_APP = "orpycamcp-exporter"
FLOOR_APP = "bench-floor"
FLOOR_BATCH = 250
DEFAULT_SIGNALS = "dlq,preservation,audit_chain"
SIGNALS = DEFAULT_SIGNALS + ",kyc_dead_letters"
KYC = example_backlogs("kyc_dead_letters")
FIRST_SIX = 6
PLAN_RUNS = 8
GENERIC_PLANS = " SET LOCAL plan_cache_mode = force_generic_plan"
# Statements by what they read, for the plan counts.
KINDS = (
    ("dlq batches", "evento_dead_letter"),
    ("preservation batches", "preservation_retry"),
    ("kyc_dead_letters batches", "dead_letter_queue"),
    ("audit_chain", "audit_chain_runs"),
    ("tenant list", "public.tenants"),
    ("session check", "pg_backend_pid"),
    ("standby check", "pg_is_in_recovery"),
)


@dataclass
class Run:
    walls: list[float]  # every refresh, the first on new connections
    backends_anon_mib: list[float]
    failures: list[str] = field(default_factory=list)
    # Per backend, from its memory contexts (14 on): everything, and the
    # CacheMemoryContext subtree (catalog caches, cached plans and their query trees).
    contexts_mib: list[tuple[float, float]] = field(default_factory=list)


@dataclass
class Subject:
    """One way of reading (exporter, floor, before) over the rounds."""

    runs: list[Run] = field(default_factory=list)

    def steady(self) -> float:
        return statistics.median([wall for run in self.runs for wall in run.walls[FIRST_SIX:]])

    def first_six(self) -> list[float]:
        return [statistics.median([run.walls[i] for run in self.runs]) for i in range(FIRST_SIX)]

    def warm_worst(self) -> float:
        """The slowest of refreshes 2-6 (medians per position) against the steady refresh."""
        return max(self.first_six()[1:]) / self.steady()


@dataclass
class MajorFigures:
    major: int
    version: str
    tenants: int
    create_seconds: float
    load_before: str
    load_after: str
    subjects: dict[str, Subject]
    plans: dict[str, dict[str, dict[str, int]]]  # subject -> kind -> statements, calls, plans
    failed_batch_log_bytes: dict[str, int]  # with / without the role's log_min_error_statement
    correct: bool


def floor_sql(schemas: Sequence[str], backlogs: bool) -> list[str]:
    kyc = parse_declarations(KYC, "bench").backlogs[0]
    statements = list(floor_statements(schemas))
    if backlogs:
        statements.append(backlog.batch_sql(kyc, "\"status\" = 'pending'", schemas))
    return statements


async def floor_lane(
    connection: asyncpg.Connection, prepared: dict[str, Any], batches: list[list[str]], backlogs: bool, framing: str
) -> None:
    for batch in batches:
        for sql in floor_sql(batch, backlogs):
            statement = prepared.get(sql)
            if framing:
                await connection.execute(framing)
            if statement is None:
                statement = prepared[sql] = await connection.prepare(sql, name=f"floor_{len(prepared)}")
            await statement.fetch()
            if framing:
                await connection.execute("COMMIT")


CONTEXT_LINE = re.compile(r"level: (\d+); (?:(\S[^:]*): |\d+ more child contexts containing )(\d+) total")


async def memory_contexts(server: LocalPostgres, admin_url: str, pids: Sequence[int]) -> list[tuple[float, float]]:
    """Each backend's memory contexts in MiB (all, and the CacheMemoryContext
    subtree), as the backend logs them (pg_log_backend_memory_contexts, 14 on)."""
    log = server.base / "postgres.log"
    found: list[tuple[float, float]] = []
    connection = await asyncpg.connect(admin_url)
    try:
        if await connection.fetchval("SELECT current_setting('server_version_num')::int") < 140000:
            return []
        for pid in pids:
            offset = log.stat().st_size
            await connection.fetchval("SELECT pg_log_backend_memory_contexts($1)", pid)
            text = ""
            for _ in range(100):
                await asyncio.sleep(0.05)
                with log.open("rb") as file:
                    file.seek(offset)
                    text = file.read().decode(errors="replace")
                if f"[{pid}] LOG:  Grand total" in text:
                    break
            lines = [line for line in text.splitlines() if f"[{pid}]" in line]
            total = next((int(line.split("Grand total: ")[1].split()[0]) for line in lines if "Grand total" in line), 0)
            cache, top, inside = 0, None, False
            for line in lines:
                match = CONTEXT_LINE.search(line)
                if match is None:
                    continue
                level, name, size = int(match[1]), match[2], int(match[3])
                top = level if top is None else top  # TopMemoryContext comes first
                if level == top + 1 and name is not None:
                    # A context of its own; "N more child contexts" lines sum
                    # the children not listed of the context above them.
                    inside = name == "CacheMemoryContext"
                if inside and level > top:
                    cache += size
            found.append((round(total / 2**20, 1), round(cache / 2**20, 1)))
    finally:
        await connection.close()
    return found


async def run_floor(
    server: LocalPostgres, admin_url: str, url: str, refreshes: int, backlogs: bool, framed: bool
) -> Run:
    """The floor; `framed`: each statement in the exporter's transaction framing."""
    framing = transaction_opening(Timeouts(deadline=10.0)) if framed else ""
    settings = {
        "application_name": FLOOR_APP,
        "default_transaction_read_only": "on",
        "max_parallel_workers_per_gather": "0",
        "jit": "off",
        "TimeZone": "UTC",
    }
    walls: list[float] = []
    connected = time.monotonic()
    connections = [await asyncpg.connect(url, server_settings=settings) for _ in range(2)]
    prepared: list[dict[str, Any]] = [{}, {}]
    try:
        for refresh in range(refreshes):
            started = connected if refresh == 0 else time.monotonic()
            rows = await connections[0].fetch(TENANTS.sql, *TENANTS.args)
            schemas = ['"tenant_' + row["slug"].replace('"', '""') + '"' for row in rows]
            slices = [schemas[i : i + FLOOR_BATCH] for i in range(0, len(schemas), FLOOR_BATCH)]
            half = (len(slices) + 1) // 2
            await asyncio.gather(
                floor_lane(connections[0], prepared[0], slices[:half], backlogs, framing),
                floor_lane(connections[1], prepared[1], slices[half:], backlogs, framing),
            )
            walls.append(time.monotonic() - started)
        pids = [c.get_server_pid() for c in connections]
        anon = [round(proc_status(pid).get("RssAnon", 0), 1) for pid in pids]
        contexts = await memory_contexts(server, admin_url, pids)
    finally:
        for connection in connections:
            await connection.close()
    return Run(walls, anon, contexts_mib=contexts)


async def settled(admin_url: str) -> None:
    """Every session of the previous reader gone (its backend's memory given back), then a second of quiet."""
    for _ in range(100):
        if not await session_count(admin_url, EXPORTER_APP) and not await session_count(admin_url, FLOOR_APP):
            break
        await asyncio.sleep(0.1)
    await asyncio.sleep(1.0)


def new_exporter(
    url: str, backlogs_config_file: str, deadline: float, generic: bool, backlogs: bool = True
) -> Exporter:
    options = {
        "database_url": url,
        "signals": SIGNALS if backlogs else DEFAULT_SIGNALS,
        "backlogs_config_file": backlogs_config_file,
        "deadline": str(deadline),
        "ttl": str(2 * deadline),
    }
    exporter = build_exporter(load(options, {}))
    for cache in exporter.caches.values():
        cache.ttl = 0
    if not generic:
        postgres = exporter.sources.postgres
        assert isinstance(postgres, Postgres)
        # The benchmark's "before" variant: the same transactions without generic plans.
        assert GENERIC_PLANS in postgres._opening
        postgres._opening = postgres._opening.replace(";" + GENERIC_PLANS, "")
    return exporter


def totals_check(tenants: int, backlogs: bool) -> Callable[[Exporter], bool]:
    want = {
        ("dlq", DLQ_PENDING.name): sum(expected_totals(1, tenants).pending.values()),
        ("preservation", PRESERVATION_EXHAUSTED.name): sum(expected_totals(1, tenants).exhausted.values()),
    }
    if backlogs:
        want[("kyc_dead_letters", PENDING_ITEMS)] = sum(expected_queue_totals(1, tenants).pending.values())

    def check(exporter: Exporter) -> bool:
        for (signal, family), total in want.items():
            outcome = exporter.caches[signal].last
            if outcome is None or outcome.samples is None:
                return False
            if sum(sample.value for sample in outcome.samples if sample.family == family) != total:
                return False
        return True

    return check


async def run_exporter(
    server: LocalPostgres,
    admin_url: str,
    url: str,
    backlogs_config_file: str,
    args: argparse.Namespace,
    generic: bool,
    tenants: int,
) -> tuple[Run, bool]:
    refreshes, backlogs = args.refreshes, not args.no_backlog
    exporter = new_exporter(url, backlogs_config_file, args.deadline, generic, backlogs)
    check = totals_check(tenants, backlogs)
    walls: list[float] = []
    failures: list[str] = []
    correct = True
    try:
        for refresh in range(refreshes):
            started = time.monotonic()
            await exporter.scrape()
            walls.append(time.monotonic() - started)
            for name, cache in exporter.caches.items():
                outcome = cache.last
                if outcome is not None and outcome.failure is not None:
                    failures.append(f"refresh {refresh} {name}: {outcome.failure.reason}")
            correct = correct and check(exporter)
        backends = await session_backends(admin_url, EXPORTER_APP)
        anon = [backend.anon_mib for backend in backends]
        contexts = await memory_contexts(server, admin_url, [backend.pid for backend in backends])
    finally:
        await exporter.close()
    return Run(walls, anon, failures, contexts), correct and not failures


async def plan_counts(
    server: LocalPostgres, admin_url: str, url: str, backlogs_config_file: str, deadline: float, generic: bool
) -> dict[str, dict[str, int]]:
    """Planner runs per kind of statement over PLAN_RUNS refreshes of a fresh exporter."""
    await execute(admin_url, "SELECT pg_stat_statements_reset()")
    exporter = new_exporter(url, backlogs_config_file, deadline, generic)
    try:
        for _ in range(PLAN_RUNS):
            await exporter.scrape()
    finally:
        await exporter.close()
    connection = await asyncpg.connect(admin_url)
    try:
        rows = await connection.fetch(
            "SELECT query, calls, plans FROM pg_stat_statements"
            " WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = 'orpycamcp_exporter') AND plans + calls > 0"
            " AND query NOT LIKE 'BEGIN%' AND query NOT LIKE 'COMMIT%'"
        )
    finally:
        await connection.close()
    counts: dict[str, dict[str, int]] = {}
    for row in rows:
        kind = next((name for name, mark in KINDS if mark in row["query"]), "other")
        entry = counts.setdefault(kind, {"statements": 0, "calls": 0, "plans": 0})
        entry["statements"] += 1
        entry["calls"] += row["calls"]
        entry["plans"] += row["plans"]
    return counts


async def failed_batch_log(server: LocalPostgres, admin_url: str, url: str, deadline: float) -> dict[str, int]:
    """Bytes the server log gains from one dlq refresh with one tenant's table dropped."""
    log = server.base / "postgres.log"
    await execute(admin_url, 'ALTER TABLE "tenant_t000002".evento_dead_letter RENAME TO evento_dead_letter_gone')
    sizes: dict[str, int] = {}
    try:
        for label, setting in (
            ("without the role setting", "RESET log_min_error_statement"),
            ("log_min_error_statement = panic", "SET log_min_error_statement = panic"),
        ):
            await execute(admin_url, f"ALTER ROLE orpycamcp_exporter {setting}")
            before = log.stat().st_size
            options = {"database_url": url, "signals": "dlq", "deadline": str(deadline), "ttl": str(2 * deadline)}
            exporter = build_exporter(load(options, {}))
            try:
                await exporter.scrape()
                outcome = exporter.caches["dlq"].last
                assert outcome is not None
                assert outcome.failure is not None, "dlq measured with a table missing"
                assert outcome.failure.reason == "missing_table", outcome.failure.reason
            finally:
                await exporter.close()
            await asyncio.sleep(0.5)  # the server's log writes
            sizes[label] = log.stat().st_size - before
    finally:
        await execute(admin_url, 'ALTER TABLE "tenant_t000002".evento_dead_letter_gone RENAME TO evento_dead_letter')
    return sizes


async def measure_major(major: int, tenants: int, args: argparse.Namespace, backlogs_config_file: str) -> MajorFigures:
    server = start_major(major)
    try:
        admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
        url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
        started = time.monotonic()
        await create_tenants(admin_url, 1, tenants)
        await create_queues(admin_url, 1, tenants)
        await execute(admin_url, "VACUUM ANALYZE")
        await execute(admin_url, "CHECKPOINT")
        created = time.monotonic() - started
        connection = await asyncpg.connect(admin_url)
        try:
            version = str(await connection.fetchval("SHOW server_version"))
        finally:
            await connection.close()
        print(f"PostgreSQL {version}: {tenants:,} tenants in {created:.0f} s, load {loadavg()}", flush=True)
        names = ["exporter", "floor"] + (["before"] if args.before else []) + (["framed floor"] if args.framed else [])
        subjects = {name: Subject() for name in names}
        correct = True
        load_before = loadavg()
        for number in range(args.rounds):
            order = names[number % len(names) :] + names[: number % len(names)]
            for name in order:
                await settled(admin_url)
                if name.endswith("floor"):
                    run = await run_floor(
                        server, admin_url, url, args.refreshes, not args.no_backlog, name == "framed floor"
                    )
                else:
                    generic = name == "exporter"
                    run, ok = await run_exporter(server, admin_url, url, backlogs_config_file, args, generic, tenants)
                    correct = correct and ok
                subjects[name].runs.append(run)
                print(f"  round {number + 1} {name}: {' '.join(f'{w * 1000:.0f}' for w in run.walls)} ms", flush=True)
        load_after = loadavg()
        plans: dict[str, dict[str, dict[str, int]]] = {}
        log_bytes: dict[str, int] = {}
        if args.skip_extras:
            return MajorFigures(
                major, version, tenants, round(created, 1), load_before, load_after, subjects, plans, log_bytes, correct
            )
        # Plan counts need pg_stat_statements, loaded at start: after the timed rounds.
        server.stop()
        server.settings.update(
            {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_planning": "on"}
        )
        server.start()
        await execute(admin_url, "CREATE EXTENSION IF NOT EXISTS pg_stat_statements")
        plans["exporter"] = await plan_counts(server, admin_url, url, backlogs_config_file, args.deadline, True)
        if args.before:
            plans["before"] = await plan_counts(server, admin_url, url, backlogs_config_file, args.deadline, False)
        log_bytes = await failed_batch_log(server, admin_url, url, args.deadline)
    finally:
        server.remove()
    return MajorFigures(
        major, version, tenants, round(created, 1), load_before, load_after, subjects, plans, log_bytes, correct
    )


def memory(run: Run) -> str:
    """RssAnon per backend, with its memory contexts (all / catalog caches and plans) where known."""
    if not run.contexts_mib:
        return ", ".join(f"{anon:.0f}" for anon in run.backends_anon_mib)
    return ", ".join(
        f"{anon:.0f} ({total:.0f} / {cache:.0f})"
        for anon, (total, cache) in zip(run.backends_anon_mib, run.contexts_mib, strict=False)
    )


def ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f}"


def markdown(figures: Sequence[MajorFigures]) -> str:
    lines = [
        "| PG | tenants | exporter steady ms | floor steady ms | ratio | exporter refreshes 1-6 ms"
        " | worst of 2-6 vs steady | floor refreshes 1-6 ms"
        " | exporter backends' RssAnon MiB (contexts / caches and plans) | floor's |",
        "|---|---:|---:|---:|---:|---|---:|---|---|---|",
    ]
    for one in figures:
        exporter, floor = one.subjects["exporter"], one.subjects["floor"]
        lines.append(
            f"| {one.version} | {one.tenants:,} | {ms(exporter.steady())} | {ms(floor.steady())}"
            f" | {exporter.steady() / floor.steady():.2f}x | {', '.join(ms(w) for w in exporter.first_six())}"
            f" | {exporter.warm_worst():.2f}x | {', '.join(ms(w) for w in floor.first_six())}"
            f" | {memory(exporter.runs[-1])} | {memory(floor.runs[-1])} |"
        )
    others = [(one, name, subject) for one in figures for name, subject in one.subjects.items()]
    others = [(one, name, subject) for one, name, subject in others if name not in ("exporter", "floor")]
    if others:
        lines += [
            "",
            "| PG | tenants | subject | steady ms | vs the floor | refreshes 1-6 ms | worst of 2-6 vs steady"
            " | backends' RssAnon MiB |",
        ]
        lines.append("|---|---:|---|---:|---:|---|---:|---|")
        for one, name, subject in others:
            ratio = subject.steady() / one.subjects["floor"].steady()
            lines.append(
                f"| {one.version} | {one.tenants:,} | {name} | {ms(subject.steady())} | {ratio:.2f}x"
                f" | {', '.join(ms(w) for w in subject.first_six())} | {subject.warm_worst():.2f}x"
                f" | {memory(subject.runs[-1])} |"
            )
    lines += ["", f"Planner runs over {PLAN_RUNS} refreshes of a fresh exporter (statements: calls, plans):", ""]
    kinds = [name for name, _ in KINDS]
    lines.append("| PG | subject | " + " | ".join(kinds) + " |")
    lines.append("|---|---|" + "---|" * len(kinds))
    for one in figures:
        for reader, counts in one.plans.items():
            cells = []
            for kind in kinds:
                entry = counts.get(kind)
                cells.append("-" if entry is None else f"{entry['statements']}: {entry['calls']}, {entry['plans']}")
            lines.append(f"| {one.major} | {reader} | " + " | ".join(cells) + " |")
    lines += ["", "| PG | server log from one refresh with a tenant's table dropped |", "|---|---|"]
    for one in figures:
        lines.append(
            f"| {one.major} | "
            + ", ".join(f"{label}: {size:,} B" for label, size in one.failed_batch_log_bytes.items())
            + " |"
        )
    loads = ", ".join(f"{one.major}: {one.load_before} → {one.load_after}" for one in figures)
    lines += ["", f"Load average (1, 5, 15 min) before → after each major's rounds: {loads}."]
    lines.append(f"Counts exact in every exporter refresh: {'yes' if all(one.correct for one in figures) else 'NO'}.")
    return "\n".join(lines) + "\n"


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--majors", default=",".join(map(str, MAJORS)), help="comma-separated, from 13..18")
    parser.add_argument("--tenants", type=int, default=5_000)
    parser.add_argument("--rounds", type=int, default=3, help="rounds alternating exporter and floor")
    parser.add_argument("--refreshes", type=int, default=12, help="refreshes per fresh exporter or floor (>= 7)")
    parser.add_argument("--deadline", type=float, default=60.0, help="seconds: high, so that no refresh is cut")
    parser.add_argument("--before", action="store_true", help="also the exporter without generic plans")
    parser.add_argument("--framed", action="store_true", help="also the floor in the exporter's transaction framing")
    parser.add_argument("--no-backlog", action="store_true", help="dlq, preservation and audit_chain only")
    parser.add_argument("--skip-extras", action="store_true", help="no plan counts, no failed-batch log")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    majors = [int(major) for major in args.majors.split(",")]
    unknown = sorted(set(majors) - set(MAJORS))
    if unknown or args.refreshes <= FIRST_SIX:
        parser.error(f"majors from {MAJORS} (not {unknown}); --refreshes above {FIRST_SIX}")
    started = time.monotonic()
    command = "python -m bench.majors " + " ".join(argv if argv is not None else sys.argv[1:])
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    args.out.mkdir(parents=True, exist_ok=True)
    results: dict[str, Any] = {"command": command, "options": {k: str(v) for k, v in vars(args).items()}}
    figures: list[MajorFigures] = []
    with tempfile.TemporaryDirectory() as directory:
        backlogs_config_file = str(Path(directory) / "backlogs.yml")
        Path(backlogs_config_file).write_text(KYC)
        for major in majors:
            figures.append(asyncio.run(measure_major(major, args.tenants, args, backlogs_config_file)))
            # Written after every major: a long run that stops keeps what it measured.
            header = f"{stamp} UTC, `{command.strip()}`, {time.monotonic() - started:.0f} s;"
            header += f" pinned: {pinned_versions()}\n\n"
            results["figures"] = [asdict(one) for one in figures]
            (args.out / f"majors-{stamp}.json").write_text(json.dumps(results, indent=1, default=str) + "\n")
            (args.out / f"majors-{stamp}.md").write_text(header + markdown(figures))
    print(header + markdown(figures))
    return 0 if all(one.correct for one in figures) else 1


if __name__ == "__main__":
    sys.exit(main())
