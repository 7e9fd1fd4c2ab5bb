"""The README's table of current figures, generated from the last recorded run
of `python -m bench.run` (the newest `bench/results/YYYY-MM-DDTHH-MM.json`), with
the run named: its file, date, machine load and command. `python -m
devkit.doctables` writes it; `tests/test_readme.py` fails while it differs."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

RESULTS = Path(__file__).resolve().parent / "results"
RUN_FILE = re.compile(r"\d{4}-\d{2}-\d{2}T\d{2}-\d{2}\.json")
TENANTS = 10_000


def last_run(results: Path = RESULTS) -> Path:
    """The newest scale run recorded (file names sort by date)."""
    runs = sorted(path for path in results.iterdir() if RUN_FILE.fullmatch(path.name))
    if not runs:
        raise FileNotFoundError(f"no run of bench.run recorded in {results}")
    return runs[-1]


def command(options: dict[str, Any]) -> str:
    """The command line that made a run, from the options it recorded."""
    words = ["python -m bench.run"]
    if options.get("stretch"):
        words.append("--stretch")
    if options.get("before"):
        words.append(f"--before {options['before']}")
    return " ".join(words)


def _ms(seconds: float) -> str:
    return f"{seconds * 1000:,.0f} ms"


def _ratio(a: float, b: float) -> str:
    return f"{a / b:.2f}x"


def figures_table(path: Path | None = None) -> str:
    path = path or last_run()
    run = json.loads(path.read_text())
    machine = run["machine"]
    row = next(row for row in run["rows"] if row["tenants"] == TENANTS)
    exporter, floor, naive = row["exporter"], row["floor"], row["naive"]
    steady, first = exporter["steady"]["median"], exporter["first"]["median"]
    http = {(one["app"], one["encoding"]): one for one in run["http"]}
    cached = http["exporter", "identity"]
    rps = cached["requests_per_second"]
    lines = [
        f"From [`{path.name}`](bench/results/{path.name}): {run['started']}, {machine['nproc']} cores"
        f" ({machine['cpu']}), load average {machine['loadavg_start'].split()[0]} at start and"
        f" {machine['loadavg_end'].split()[0]} at end, `{command(run['options'])}`; medians, PostgreSQL"
        f" {machine['postgresql'].split()[0]} with stock settings.",
        "",
        "| what | figure |",
        "|---|---|",
        f"| refresh at {TENANTS:,} tenants, steady / first (cold) | {_ms(steady)} / {_ms(first)}"
        f" ({_ratio(steady, floor['steady']['median'])} the hand-written floor;"
        f" one query per tenant: {_ms(naive['refresh']['median'])}) |",
        f"| cached scrapes of `/metrics` ({run['http_tenants']:,} tenants) | {rps:,.0f} req/s, p99"
        f" {cached['p99_ms']:.1f} ms: {_ratio(rps, http['constant', 'identity']['requests_per_second'])} a"
        f" constant-body app, {_ratio(rps, http['prometheus_client', 'identity']['requests_per_second'])}"
        " prometheus_client |",
        f"| database cost at {TENANTS:,} tenants | {len(exporter['backends'])} connections,"
        f" {exporter['statements_steady']} statements per refresh, {exporter['prepares_steady']} re-planned |",
        f"| exporter memory at {TENANTS:,} tenants | {row['exporter_rss_mib']:.0f} MiB RSS |",
    ]
    return "\n".join(lines) + "\n"
