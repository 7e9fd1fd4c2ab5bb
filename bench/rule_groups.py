"""The shipped rule groups' evaluation time at 14 databases (#35).

One throwaway PostgreSQL with 14 platform databases (each its own
database_identity; `--tenants` tenants each from devkit.tenants, with pending
dead letters and exhausted preservation rows), one exporter per database and a
second replica exporter for two of them (16 exporters, as HA deployments run),
each database its own `orpycamcp_cluster`. One real Prometheus scrapes them and
evaluates alerts/orpycamcp.rules.yml (the mixin rendered with its default
config) every 5 s: the shortest interval an operator plausibly runs, so the
most evaluations per minute and the least slack for an evaluation to fit in;
rule cost depends on the series read, not on the interval. After a warm-up
past the rules' 1m look-back, every evaluation for `--seconds` is sampled:
prometheus_rule_group_last_duration_seconds per group (its /metrics page) and
/api/v1/rules evaluationTime. Printed per group: median and max ms, the series
its rules read; and whether each platform total equals the sum of the
databases' SQL truth.

    nice -n 5 .venv/bin/python -m bench.rule_groups     # ~4 min

Writes bench/results/rule-groups-<date>.json and bench/results/rule-groups-latest.md.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import re
import statistics
import subprocess
import sys
import tempfile
import time
from contextlib import ExitStack
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import asyncpg

from bench.run import EXPORTER_PASSWORD, RESULTS
from devkit.process import exporter_process, http_get
from devkit.servers import start_postgres
from devkit.tenants import create_database, create_tenants, slug
from tests.e2e.stack import prometheus_server, query, rule_group_durations, wait_for

RULES = Path(__file__).resolve().parent.parent / "alerts" / "orpycamcp.rules.yml"
DATABASES, REPLICATED, INTERVAL = 14, 2, 5
JOB = "orpycamcp-exporter"
TOTALS = {
    "orpycamcp:dlq_pending_events:total": (
        "SELECT origin_group AS k, count(*) AS n FROM {}.evento_dead_letter WHERE status = 'pending' GROUP BY 1"
    ),
    "orpycamcp:preservation_exhausted_artifacts:total": (
        "SELECT artifact || '/' || phase AS k, count(*) AS n FROM {}.preservation_retry"
        " WHERE status = 'exhausted' GROUP BY 1"
    ),
}
KEYS = {"orpycamcp:dlq_pending_events:total": ("origin_group",)}
NAME = re.compile(r"\b(up|orpycamcp[_:][a-z0-9_:]*[a-z0-9_])\b")


async def prepare(server: Any, tenants: int) -> tuple[list[str], dict[str, dict[str, float]]]:
    """The databases' exporter URLs, and the SQL truth summed over them per total and key."""
    urls, truth = [], {name: dict[str, float]() for name in TOTALS}
    for d in range(1, DATABASES + 1):
        first = (d - 1) * tenants + 1
        admin = await create_database(server, f"platform{d:02d}", EXPORTER_PASSWORD)
        await create_tenants(admin, first, first + tenants - 1)
        urls.append(server.url(user="orpycamcp_exporter", password=EXPORTER_PASSWORD, database=f"platform{d:02d}"))
        connection = await asyncpg.connect(admin)
        try:
            for k in range(first, first + tenants):
                for name, sql in TOTALS.items():
                    for row in await connection.fetch(sql.format(f"tenant_{slug(k)}")):
                        truth[name][row["k"]] = truth[name].get(row["k"], 0) + row["n"]
        finally:
            await connection.close()
    return urls, truth


def totals_exact(prom: Any, truth: dict[str, dict[str, float]]) -> dict[str, bool]:
    exact = {}
    for name, expected in truth.items():
        labels = KEYS.get(name, ("artifact", "phase"))
        seen = {"/".join(r["metric"][k] for k in labels): float(r["value"][1]) for r in query(prom, name)}
        exact[name] = seen == expected
    return exact


def uptime() -> str:
    return subprocess.run(["uptime"], capture_output=True, text=True, check=False).stdout.strip()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--tenants", type=int, default=5, help="tenants per database (default 5)")
    parser.add_argument("--warmup", type=float, default=75.0, help="s before sampling (default 75)")
    parser.add_argument("--seconds", type=float, default=120.0, help="s of sampling (default 120)")
    args = parser.parse_args(argv)
    report: dict[str, Any] = {"started": datetime.now(UTC).isoformat(), "uptime_start": uptime(), "options": vars(args)}
    with tempfile.TemporaryDirectory() as tmp, ExitStack() as stack:
        folder = Path(tmp)
        server = start_postgres()
        stack.callback(server.remove)
        urls, truth = asyncio.run(prepare(server, args.tenants))
        groups = []
        for d, url in enumerate(urls, 1):
            copies = 2 if d <= REPLICATED else 1
            ports = [stack.enter_context(exporter_process(["--database.url", url], folder)).port for _ in range(copies)]
            groups.append({"targets": [f"127.0.0.1:{p}" for p in ports], "labels": {"orpycamcp_cluster": f"pg{d:02d}"}})
        every = f"{INTERVAL}s"
        config = {
            "global": {"scrape_interval": every, "scrape_timeout": every, "evaluation_interval": every},
            "rule_files": [str(RULES)],
            "scrape_configs": [{"job_name": JOB, "static_configs": groups}],
        }
        prom = stack.enter_context(prometheus_server(config, folder))
        time.sleep(args.warmup)
        wait_for(lambda: all(totals_exact(prom, truth).values()), 60, lambda: totals_exact(prom, truth))
        durations: dict[str, list[float]] = {}
        api: dict[str, dict[str, float]] = {}
        queries: dict[str, list[str]] = {}
        end = time.monotonic() + args.seconds
        while time.monotonic() < end:
            for group, seconds in rule_group_durations(prom).items():
                durations.setdefault(group, []).append(seconds * 1000)
            for group in http_get(prom.url + "/api/v1/rules", timeout=10).json()["data"]["groups"]:
                api.setdefault(group["name"], {})[group["lastEvaluation"]] = group["evaluationTime"] * 1000
                queries[group["name"]] = [rule["query"] for rule in group["rules"]]
            time.sleep(INTERVAL)
        rows = []
        for group, values in durations.items():
            names = sorted({n for q in queries.get(group, []) for n in NAME.findall(q)})
            series = query(prom, f'count({{__name__=~"{"|".join(names)}"}})') if names else []
            evaluations = list(api.get(group, {}).values()) or [float("nan")]
            rows.append(
                {
                    "group": group,
                    "median_ms": round(statistics.median(values), 2),
                    "max_ms": round(max(values), 2),
                    "api_median_ms": round(statistics.median(evaluations), 2),
                    "api_max_ms": round(max(evaluations), 2),
                    "samples": len(values),
                    "series_read": int(series[0]["value"][1]) if series else 0,
                }
            )
        report |= {"groups": rows, "totals_exact": totals_exact(prom, truth)}
        report["raw_series"] = int(query(prom, 'count({__name__=~"orpycamcp_.*"})')[0]["value"][1])
    report["uptime_end"] = uptime()
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    (RESULTS / f"rule-groups-{stamp}.json").write_text(json.dumps(report, indent=1) + "\n")
    lines = [
        f"# Rule groups at {DATABASES} databases ({DATABASES + REPLICATED} exporters), {report['started'][:16]} UTC",
        "",
        f"Load: `{report['uptime_start']}` at start, `{report['uptime_end']}` at end. Evaluation every {INTERVAL} s;"
        f" {report['raw_series']} orpycamcp_ series scraped. Totals exact: {report['totals_exact']}.",
        "",
        "| group | median ms | max ms | /api/v1/rules median / max ms | samples | series read |",
        "|---|---:|---:|---:|---:|---:|",
        *(
            f"| {r['group']} | {r['median_ms']} | {r['max_ms']} | {r['api_median_ms']} / {r['api_max_ms']}"
            f" | {r['samples']} | {r['series_read']} |"
            for r in rows
        ),
    ]
    (RESULTS / "rule-groups-latest.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
