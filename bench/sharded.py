"""The sharded-platform benchmark: N tenants in one PostgreSQL cluster next to the
same N tenants split over several clusters with one exporter each, in one run.

Three throwaway stock PostgreSQL servers (for --clusters 2): "whole" holds
tenants 1..N, each shard holds its contiguous share (shard 1: 1..N/2, shard 2:
N/2+1..N), the same rows as devkit.tenants gives them anywhere. Then:

- whole: `runs` fresh exporters over the whole cluster (bench.refreshes.measure_exporter):
  first refresh (cold backends), steady refreshes, backend memory per session;
- each shard alone: the same over one shard (what its exporter costs on its
  own machine, which is how a sharded platform runs);
- all shards at once: one exporter per shard refreshing together on this
  machine (they share its cores, unlike real clusters); the platform total is
  known when the slowest shard is measured, so its refresh is the max.

Every refresh's counts are checked against expected_totals, and the sum of
the shards' counts against the whole's. The deadline is raised (--deadline,
60 s) so that a cold refresh of the whole is measured instead of being cut at
the default 10 s.

    .venv/bin/python -m bench.sharded --tenants 2000 --runs 2 --steady 3   # ~1 min
    .venv/bin/python -m bench.sharded --tenants 50000                       # the full scenario

Writes bench/results/sharded-<date>.json and bench/results/sharded-latest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import sys
import time
from collections.abc import Coroutine, Iterator, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from bench.figures import ExporterFigures, Spread, ratio
from bench.machine import execute, loadavg, machine_state
from bench.refreshes import expected_series, measure_exporter
from bench.run import EXPORTER_PASSWORD, RESULTS
from devkit.servers import LocalPostgres, start_postgres
from devkit.tenants import create_database, create_tenants


@dataclass
class Cluster:
    name: str
    first: int
    last: int
    create_seconds: float = 0.0

    @property
    def tenants(self) -> int:
        return self.last - self.first + 1


@dataclass
class Measured:
    cluster: Cluster
    figures: ExporterFigures


@dataclass
class Report:
    started: str
    machine: dict[str, Any]
    options: dict[str, Any]
    whole: Measured | None = None
    alone: list[Measured] = field(default_factory=list)
    together: list[Measured] = field(default_factory=list)
    platform_first: Spread | None = None
    platform_steady: Spread | None = None
    shard_sums_match_whole: bool = False
    seconds: float = 0.0


@contextlib.contextmanager
def servers(count: int) -> Iterator[list[LocalPostgres]]:
    started: list[LocalPostgres] = []
    try:
        for _ in range(count):
            started.append(start_postgres())
        yield started
    finally:
        for server in started:
            server.remove()


def split(tenants: int, clusters: int) -> list[Cluster]:
    bounds = [round(tenants * k / clusters) for k in range(clusters + 1)]
    return [Cluster(f"shard-{k + 1}", bounds[k] + 1, bounds[k + 1]) for k in range(clusters)]


async def prepare(server: LocalPostgres, cluster: Cluster) -> tuple[str, str]:
    """The cluster's database with its tenants; (exporter URL, admin URL)."""
    admin_url = await create_database(server, "bench", EXPORTER_PASSWORD)
    started = time.monotonic()
    await create_tenants(admin_url, cluster.first, cluster.last)
    await execute(admin_url, "CHECKPOINT")
    cluster.create_seconds = round(time.monotonic() - started, 1)
    url = server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database="bench")
    print(f"{cluster.name}: {cluster.tenants:,} tenants in {cluster.create_seconds:.0f} s", flush=True)
    return url, admin_url


def per_refresh_max(figures: Sequence[ExporterFigures], attribute: str) -> Spread:
    """The platform's refresh: the slowest shard's, refresh by refresh (medians of the shards' spreads)."""
    spreads = [getattr(f, attribute) for f in figures]
    return Spread(
        max(s.median for s in spreads),
        max(s.low for s in spreads),
        max(s.high for s in spreads),
        min(s.n for s in spreads),
    )


async def run(args: argparse.Namespace, whole_server: LocalPostgres, shard_servers: list[LocalPostgres]) -> Report:
    started = time.monotonic()
    whole = Cluster("whole", 1, args.tenants)
    shards = split(args.tenants, args.clusters)
    whole_urls = await prepare(whole_server, whole)
    shard_urls = [await prepare(server, shard) for server, shard in zip(shard_servers, shards, strict=True)]
    report = Report(
        started=datetime.now(UTC).strftime("%Y-%m-%d %H:%M UTC"),
        machine=await machine_state(whole_urls[1]),
        options={k: v for k, v in vars(args).items() if k != "out"},
    )

    def measure(cluster: Cluster, urls: tuple[str, str]) -> Coroutine[Any, Any, ExporterFigures]:
        url, admin_url = urls
        return measure_exporter(url, admin_url, cluster.last, args.runs, args.steady, cluster.first, args.deadline)

    report.whole = Measured(whole, await measure(whole, whole_urls))
    print(f"whole: first {report.whole.figures.first.ms()} steady {report.whole.figures.steady.ms()} ms", flush=True)
    for shard, urls in zip(shards, shard_urls, strict=True):
        measured = Measured(shard, await measure(shard, urls))
        report.alone.append(measured)
        print(
            f"{shard.name} alone: first {measured.figures.first.ms()} steady {measured.figures.steady.ms()}", flush=True
        )
    together = await asyncio.gather(*(measure(shard, urls) for shard, urls in zip(shards, shard_urls, strict=True)))
    report.together = [Measured(shard, figures) for shard, figures in zip(shards, together, strict=True)]
    report.platform_first = per_refresh_max(together, "first")
    report.platform_steady = per_refresh_max(together, "steady")
    print(f"together: first {report.platform_first.ms()} steady {report.platform_steady.ms()}", flush=True)
    sums = [expected_series(shard.last, shard.first) for shard in shards]
    report.shard_sums_match_whole = tuple(map(sum, zip(*sums, strict=True))) == expected_series(args.tenants)
    report.machine["loadavg_end"] = loadavg()
    report.seconds = time.monotonic() - started
    return report


def memory(figures: ExporterFigures) -> str:
    return ", ".join(f"{b.rss_mib:.0f} / {b.anon_mib:.0f}" for b in figures.backends) or "-"


def anon(figures: ExporterFigures) -> float:
    values = [b.anon_mib for b in figures.backends]
    return max(values) if values else float("nan")


def markdown(report: Report) -> str:
    m = report.machine
    assert report.whole is not None
    assert report.platform_first is not None
    assert report.platform_steady is not None
    whole = report.whole.figures
    lines = [
        f"# Sharded benchmark, {report.started}",
        "",
        f"Machine: {m['cpu']}, {m['nproc']} CPUs, {m['memory'].get('MemTotal')} RAM"
        f" ({m['memory'].get('MemAvailable')} available at start), load average {m['loadavg_start']} at start,"
        f" {m.get('loadavg_end', '?')} at end; kernel {m['kernel']}. PostgreSQL {m['postgresql']}, stock"
        f" settings ({m['postgresql_settings']}), one throwaway server per cluster on this machine.",
        f"Options: {report.options}. Total {report.seconds / 60:.1f} min.",
        "",
        "Times in ms, median (min-max). *first*: the first refresh of a fresh exporter (new connections, cold"
        " backends); *steady*: the refreshes after it. Backend memory: each exporter session's server process after"
        " the steady refreshes (RSS / RssAnon MiB; RssAnon is private: catalog caches and plans).",
        "",
        "| setup | tenants per cluster | first | steady | statements first / steady | backends RSS / anon MiB"
        " | counts exact | tenant creation s |",
        "|---|---:|---:|---:|---:|---|---|---:|",
    ]

    def row(label: str, measured: Measured) -> str:
        f = measured.figures
        cold = sum(1 for failure in f.failures if " refresh 0 " in failure)
        warm = len(f.failures) - cold
        cold_note = f" ({cold} failed measurements)" if cold else ""
        warm_note = f" ({warm} failed measurements)" if warm else ""
        return (
            f"| {label} | {measured.cluster.tenants:,} | {f.first.ms()}{cold_note} | {f.steady.ms()}{warm_note}"
            f" | {f.statements_first} / {f.statements_steady} | {memory(f)} | {'yes' if f.correct else 'NO'}"
            f" | {measured.cluster.create_seconds:.0f} |"
        )

    lines.append(row("1 cluster", report.whole))
    for measured in report.alone:
        lines.append(row(f"{measured.cluster.name} alone", measured))
    for measured in report.together:
        lines.append(row(f"{measured.cluster.name}, all shards at once", measured))
    slowest_alone_first = max(m.figures.first.median for m in report.alone)
    slowest_alone_steady = max(m.figures.steady.median for m in report.alone)
    shard_anon = max(anon(m.figures) for m in report.alone)
    lines += [
        "",
        f"Platform refresh with {len(report.alone)} clusters measured at once on this machine (the slowest shard,"
        f" when the platform total is known): first {report.platform_first.ms()}, steady"
        f" {report.platform_steady.ms()} ms.",
        "",
        "## What splitting buys",
        "",
        "| | 1 cluster | slowest shard alone | ratio | all shards at once, here | ratio |",
        "|---|---:|---:|---:|---:|---:|",
        f"| first refresh ms | {whole.first.median * 1000:,.0f} | {slowest_alone_first * 1000:,.0f}"
        f" | {ratio(whole.first.median, slowest_alone_first)} | {report.platform_first.median * 1000:,.0f}"
        f" | {ratio(whole.first.median, report.platform_first.median)} |",
        f"| steady refresh ms | {whole.steady.median * 1000:,.0f} | {slowest_alone_steady * 1000:,.0f}"
        f" | {ratio(whole.steady.median, slowest_alone_steady)} | {report.platform_steady.median * 1000:,.0f}"
        f" | {ratio(whole.steady.median, report.platform_steady.median)} |",
        f"| backend RssAnon MiB per session | {anon(whole):,.0f} | {shard_anon:,.0f}"
        f" | {ratio(anon(whole), shard_anon)} | | |",
        "",
        f"Shards' expected counts add up to the whole's: {'yes' if report.shard_sums_match_whole else 'NO'}.",
    ]
    return "\n".join(lines) + "\n"


def parse_args(argv: Sequence[str] | None = None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=50_000, help="tenants of the platform (default 50,000)")
    parser.add_argument("--clusters", type=int, default=2, help="clusters the tenants are split over (default 2)")
    parser.add_argument("--runs", type=int, default=3, help="fresh exporters per setup")
    parser.add_argument("--steady", type=int, default=3, help="refreshes after the first, per run")
    parser.add_argument("--deadline", type=float, default=60.0, help="measurement deadline, s (default 60)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    args = parser.parse_args(argv)
    if args.clusters < 2 or args.tenants < args.clusters:
        parser.error("--clusters must be at least 2 and at most --tenants")
    return args


def main(argv: Sequence[str] | None = None) -> int:
    args = parse_args(argv)
    with servers(args.clusters + 1) as started:
        report = asyncio.run(run(args, started[0], started[1:]))
        # Written before the servers go: removing 100,000 schemas' files takes minutes.
        args.out.mkdir(parents=True, exist_ok=True)
        stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
        (args.out / f"sharded-{stamp}.json").write_text(json.dumps(asdict(report), indent=1, default=str) + "\n")
        text = markdown(report)
        (args.out / "sharded-latest.md").write_text(text)
        print(text, flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
