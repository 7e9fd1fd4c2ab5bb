"""The whole default page at `--tenants` tenants, byte for byte, against a page
written from plain per-tenant SQL truth; and, in the same run, the refresh
against bench's floor (bench.floors).

One throwaway stock PostgreSQL; `--tenants` tenants (devkit/tenants.py) and a
few audit runs. A database-only exporter with its defaults (every PostgreSQL
signal: dlq, preservation, audit_chain, migration_lock, housekeeping) renders its
page once.
The expected page is then written without the exporter's statements: the
table signals' families from one plain query per tenant and table through the
admin connection (GROUP BY, status words literal), audit_chain's from one plain
query, migration_lock's from pg_locks, housekeeping's from one plain query per
tenant and table, `orpycamcp_signal_measured` 1 for each
enabled signal; every other family, the exporter's own state (durations, last
success, data time, process, build info), is copied from the page in the
registry's order. The two pages must be equal, byte for byte: a family
missing, out of order or with another value is a difference, the first of
which is printed. Then `--runs` fresh exporters (bench.refreshes, signals
dlq,preservation,audit_chain) and the floor are refreshed in the same run.

    .venv/bin/python -m bench.page_truth                   # 10,000 tenants
    .venv/bin/python -m bench.page_truth --tenants 1000 --runs 2

Writes bench/results/page-truth-<date>.json (figures, machine state and
`uptime` at the start and end) and prints the markdown rows.
"""

from __future__ import annotations

import argparse
import asyncio
import subprocess
import sys
import time
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import asyncpg

from bench.figures import ExporterFigures, FloorFigures, ratio, save_figures
from bench.floors import measure_floor
from bench.machine import execute, machine_state
from bench.refreshes import measure_exporter
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import create_database, create_tenants
from exporter.contract.fixed import CLASSID, OBJID
from exporter.exposition.text import escape_help, escape_label_value, format_value
from exporter.loading import load
from exporter.service import build_exporter
from registry import BUILTIN
from registry.families import (
    AUDIT_BREAKS,
    AUDIT_DECLARED_BREAKS,
    AUDIT_LAST_VERIFICATION,
    AUDIT_VERIFICATION_OK,
    DLQ_OLDEST,
    DLQ_PENDING,
    HOUSEKEEPING_DEDUP_OLDEST,
    HOUSEKEEPING_TERMINAL_OLDEST,
    HOUSEKEEPING_TERMINAL_UNDATED,
    MIGRATION_LOCK_HELD,
    MIGRATION_LOCK_WAITERS,
    PRESERVATION_EXHAUSTED,
    SIGNAL_MEASURED,
)
from registry.model import Family

RESULTS = Path(__file__).resolve().parent / "results"
EXPORTER_PASSWORD = "bench-page-truth-exporter"  # noqa: S105 -- a throwaway server's role
DEFAULT_SIGNALS = ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping")
AUDIT_RUNS_SQL = """
INSERT INTO public.audit_chain_runs (started_at, finished_at, scope, breaks, declared_breaks, verification_ok) VALUES
    ('2026-12-01 01:00:00+00', '2026-12-01 01:30:00+00', 'complete', 2, 1, false),
    ('2026-12-01 02:00:00+00', '2026-12-01 02:40:00.25+00', 'complete', 0, 0, true),
    ('2026-12-01 03:00:00+00', '2026-12-01 03:10:00+00', 'partial', 7, 0, false);
"""
# The truth's own statements, written here (not the exporter's): one per tenant and table.
TRUTH_DLQ = (
    "SELECT origin_group, count(*) AS n, extract(epoch FROM min(created_at))::float8 AS first"
    " FROM {schema}.evento_dead_letter WHERE status = 'pending' GROUP BY origin_group"
)
TRUTH_PRESERVATION = (
    "SELECT artifact, phase, count(*) AS n FROM {schema}.preservation_retry WHERE status = 'exhausted'"
    " GROUP BY artifact, phase"
)
TRUTH_TERMINAL = (
    "SELECT origin_group, extract(epoch FROM min(resolved_at))::float8 AS first,"
    " count(*) FILTER (WHERE resolved_at IS NULL) AS undated"
    " FROM {schema}.evento_dead_letter WHERE status IN ('resolved', 'discarded') GROUP BY origin_group"
)
TRUTH_DEDUP = (
    "SELECT extract(epoch FROM min(processed_at))::float8 AS first FROM {schema}.notification_processed_events"
)
TRUTH_AUDIT = (
    "SELECT breaks, declared_breaks, verification_ok, extract(epoch FROM finished_at)::float8 AS finished"
    " FROM public.audit_chain_runs WHERE scope = 'complete' ORDER BY finished_at DESC, id DESC LIMIT 1"
)
TRUTH_LOCK = (
    "SELECT count(*) FILTER (WHERE granted) AS held, count(*) FILTER (WHERE NOT granted) AS waiting"
    f" FROM pg_locks WHERE locktype = 'advisory' AND classid = {CLASSID} AND objid = {OBJID} AND objsubid = 1"
)

Series = dict[tuple[str, tuple[str, ...]], float]


@dataclass
class Figures:
    tenants: int
    create_seconds: float
    page_bytes: int
    page_lines: int
    truth_lines: int  # the lines written from SQL truth (HELP and TYPE included)
    copied_lines: int  # the exporter's own state, copied from the page
    truth_seconds: float
    identical: bool
    first_difference: str | None
    exporter: ExporterFigures | None = None
    floor: FloorFigures | None = None
    steady_vs_floor: str = "-"
    machine_start: dict[str, Any] = field(default_factory=dict)
    machine_end: dict[str, Any] = field(default_factory=dict)
    uptime_start: str = ""
    uptime_end: str = ""


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


async def truth(admin_url: str) -> Series:
    """Every value series of the default signals, read plainly, tenant by tenant."""
    values: Series = {}
    key: tuple[str, tuple[str, ...]]
    connection = await asyncpg.connect(admin_url)
    try:
        slugs = await connection.fetch(
            "SELECT slug, status = 'active' AS purged FROM public.tenants WHERE provisioning_status = 'active'"
            " ORDER BY slug"
        )
        for slug, purged in ((row["slug"], row["purged"]) for row in slugs):
            schema = '"tenant_' + slug.replace('"', '""') + '"'
            for row in await connection.fetch(TRUTH_DLQ.format(schema=schema)):
                key = (DLQ_PENDING.name, (row["origin_group"],))
                values[key] = values.get(key, 0) + row["n"]
                oldest = (DLQ_OLDEST.name, (row["origin_group"],))
                values[oldest] = min(values.get(oldest, row["first"]), row["first"])
            for row in await connection.fetch(TRUTH_PRESERVATION.format(schema=schema)):
                key = (PRESERVATION_EXHAUSTED.name, (row["artifact"], row["phase"]))
                values[key] = values.get(key, 0) + row["n"]
            if not purged:
                continue  # housekeeping reads the tenants the purges walk (status 'active') only
            for row in await connection.fetch(TRUTH_TERMINAL.format(schema=schema)):
                key = (HOUSEKEEPING_TERMINAL_UNDATED.name, (row["origin_group"],))
                values[key] = values.get(key, 0) + row["undated"]
                if row["first"] is not None:
                    oldest = (HOUSEKEEPING_TERMINAL_OLDEST.name, (row["origin_group"],))
                    values[oldest] = min(values.get(oldest, row["first"]), row["first"])
            first = await connection.fetchval(TRUTH_DEDUP.format(schema=schema))
            if first is not None:
                dedup = (HOUSEKEEPING_DEDUP_OLDEST.name, ())
                values[dedup] = min(values.get(dedup, first), first)
        run = await connection.fetchrow(TRUTH_AUDIT)
        if run is not None:
            values[AUDIT_BREAKS.name, ()] = run["breaks"]
            values[AUDIT_DECLARED_BREAKS.name, ()] = run["declared_breaks"]
            values[AUDIT_VERIFICATION_OK.name, ()] = 1 if run["verification_ok"] else 0
            values[AUDIT_LAST_VERIFICATION.name, ()] = run["finished"]
        lock = await connection.fetchrow(TRUTH_LOCK)
        assert lock is not None
        values[MIGRATION_LOCK_HELD.name, ()] = 1 if lock["held"] else 0
        values[MIGRATION_LOCK_WAITERS.name, ()] = lock["waiting"]
    finally:
        await connection.close()
    for signal in DEFAULT_SIGNALS:
        values[SIGNAL_MEASURED.name, (signal,)] = 1
    return values


def written(family: Family, values: Series) -> str:
    """A family's lines written from `values`: every registered combination in the registry's
    order, 0 for a missing count of a dense family, none for a sparse one; nothing when empty."""
    lines = []
    for combination in family.combinations:
        value = values.get((family.name, combination))
        if value is None and family.signal in DEFAULT_SIGNALS and not family.sparse:
            value = 0
        if value is None:
            continue
        labels = ",".join(
            f'{name}="{escape_label_value(label)}"' for name, label in zip(family.labels, combination, strict=True)
        )
        lines.append(
            f"{family.name}{{{labels}}} {format_value(value)}\n" if labels else f"{family.name} {format_value(value)}\n"
        )
    if not lines:
        return ""
    return f"# HELP {family.name} {escape_help(family.help)}\n# TYPE {family.name} {family.type.value}\n" + "".join(
        lines
    )


def family_of(line: str) -> str:
    """The family a page line belongs to: a HELP or TYPE line's, or a sample's name."""
    return line.removeprefix("# HELP ").removeprefix("# TYPE ").split(" ", 1)[0].split("{", 1)[0]


def blocks(page: str) -> dict[str, str]:
    """The page's lines by family, in page order."""
    by_family: dict[str, str] = {}
    for line in page.splitlines(keepends=True):
        name = family_of(line)
        by_family[name] = by_family.get(name, "") + line
    return by_family


def from_truth(family: Family) -> bool:
    return family.signal in DEFAULT_SIGNALS or family is SIGNAL_MEASURED


def expected_page(page: str, values: Series) -> tuple[str, int, int]:
    """The page written from truth where the database decides, copied where the exporter's own state does."""
    own = blocks(page)
    text = []
    truth_lines = copied = 0
    for name in dict.fromkeys(family.name for family in BUILTIN.families):
        parts = [family for family in BUILTIN.families if family.name == name]
        if all(from_truth(family) for family in parts):
            block = written(parts[0], values) if len(parts) == 1 else ""
            truth_lines += block.count("\n")
        else:
            block = own.get(name, "")
            copied += block.count("\n")
        text.append(block)
    return "".join(text), truth_lines, copied


def first_difference(page: str, expected: str) -> str | None:
    for number, (got, want) in enumerate(zip(page.splitlines(), expected.splitlines(), strict=False), start=1):
        if got != want:
            return f"line {number}: page {got!r}, truth {want!r}"
    if len(page) != len(expected):
        return f"the page has {page.count(chr(10))} lines, the truth {expected.count(chr(10))}"
    return None


async def default_page(url: str, deadline: float) -> str:
    exporter = build_exporter(load({"database_url": url, "deadline": str(deadline), "ttl": str(2 * deadline)}, {}))
    try:
        assert exporter.caches.keys() == set(DEFAULT_SIGNALS), exporter.caches.keys()
        return (await exporter.scrape()).raw.decode("utf-8")
    finally:
        await exporter.close()


async def run(args: argparse.Namespace, server: LocalPostgres) -> Figures:
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    started = time.monotonic()
    await create_tenants(admin_url, 1, args.tenants)
    await execute(admin_url, AUDIT_RUNS_SQL)
    await execute(admin_url, "VACUUM ANALYZE")
    await execute(admin_url, "CHECKPOINT")
    created = round(time.monotonic() - started, 1)
    print(f"{args.tenants:,} tenants in {created:.0f} s", flush=True)
    machine_start, uptime_start = await machine_state(admin_url), uptime()
    page = await default_page(url, args.deadline)
    started = time.monotonic()
    values = await truth(admin_url)
    truth_seconds = round(time.monotonic() - started, 1)
    expected, truth_lines, copied = expected_page(page, values)
    exporter = await measure_exporter(url, admin_url, args.tenants, args.runs, args.steady, deadline=args.deadline)
    floor = await measure_floor(url, args.runs, args.steady)
    return Figures(
        tenants=args.tenants,
        create_seconds=created,
        page_bytes=len(page.encode("utf-8")),
        page_lines=page.count("\n"),
        truth_lines=truth_lines,
        copied_lines=copied,
        truth_seconds=truth_seconds,
        identical=page == expected,
        first_difference=first_difference(page, expected),
        exporter=exporter,
        floor=floor,
        steady_vs_floor=ratio(exporter.steady.median, floor.steady.median),
        machine_start=machine_start,
        machine_end=await machine_state(admin_url),
        uptime_start=uptime_start,
        uptime_end=uptime(),
    )


def markdown(figures: Figures) -> str:
    assert figures.exporter is not None
    assert figures.floor is not None
    return (
        "| tenants | page lines (bytes) | from SQL truth | copied (exporter's own) | byte-identical |"
        " exporter steady ms | floor steady ms | vs floor | counts exact |\n"
        "|---|---|---|---|---|---|---|---|---|\n"
        f"| {figures.tenants:,} | {figures.page_lines} ({figures.page_bytes:,}) | {figures.truth_lines}"
        f" | {figures.copied_lines} | {'yes' if figures.identical else 'NO: ' + str(figures.first_difference)}"
        f" | {figures.exporter.steady.ms()} | {figures.floor.steady.ms()} | {figures.steady_vs_floor}"
        f" | {'yes' if figures.exporter.correct else 'NO'} |\n\n"
        f"start: {figures.uptime_start}\nend:   {figures.uptime_end}\n"
    )


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=10_000)
    parser.add_argument("--runs", type=int, default=3, help="fresh exporters, and floor runs")
    parser.add_argument("--steady", type=int, default=5, help="refreshes after the first, per run")
    parser.add_argument(
        "--deadline", type=float, default=30.0, help="seconds per measurement (raise it on a busy machine)"
    )
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    server = start_postgres()
    try:
        figures = asyncio.run(run(args, server))
    finally:
        server.remove()
    path = save_figures(args.out, "page-truth", figures)
    print(markdown(figures))
    print(f"wrote {path}")
    return 0 if figures.identical and figures.exporter is not None and figures.exporter.correct else 1


if __name__ == "__main__":
    sys.exit(main())
