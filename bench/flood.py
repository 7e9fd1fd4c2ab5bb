"""Connection flood: the scraper's latency and success while 10,000 connections
are held open against the exporter process, and its memory.

Scenarios (each against a fresh exporter over a small database, TTL 60 s so
every scrape is served from the cached page; the scraper opens a new
connection for every scrape, every 0.1 s):

- held-idle: 10,000 connections that send nothing, held open (head timeout
  raised past the run so that all 10,000 are open at once);
- held-trickle: 10,000 connections sending a request head one byte a second;
- churn-idle: default settings: 10,000 idle connections closed after the 5 s
  head timeout and reopened at once, as a reconnecting client does;
- capped: --web.max-connections 2000 under the 10,000 idle connections: the
  longest idle are shed;
- stream: clients sending a header value that never ends, as fast as the
  socket takes it (default settings: each is refused once its head passes
  16 KiB, and reconnects);
- crlf: clients answered once, then sending a line end every second (default
  settings: each is closed at the 15 s keep-alive timeout, and reconnects);
- trailer: clients sending a chunked GET, answered, then a trailer (a header
  after the body) that never ends, as fast as the socket takes it (each closed
  once what follows its head passes 16 KiB, and reconnects);
- body: clients sending a GET announcing a 1 GB body, answered, then one body
  byte a second (each closed at the 15 s keep-alive timeout, and reconnects).

The hostile clients of issue #41 are measured with a few of them, not 10,000:

    .venv/bin/python -m bench.flood --scenarios stream,crlf,trailer,body --connections 1 --seconds 20
    .venv/bin/python -m bench.flood --scenarios stream,crlf,trailer,body --connections 10 --seconds 20
    .venv/bin/python -m bench.flood --scenarios stream,crlf,trailer,body --connections 100 --seconds 20

Unloaded figures come from the same process in the same run, just before the
flood. The flood runs in its own process (devkit/flood.py).

    .venv/bin/python -m bench.flood                # all scenarios, 10,000 connections, 15 s held
    .venv/bin/python -m bench.flood --scenarios held-idle --connections 5000 --seconds 10
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
from pathlib import Path

from devkit.flood import measure_flood, raise_fd_limit
from devkit.process import exporter_process
from devkit.servers import start_postgres
from tests.platform import create_platform

RESULTS = Path(__file__).resolve().parent / "results"
SCENARIOS: dict[str, tuple[str, list[str]]] = {
    "held-idle": ("idle", ["--web.request-head-timeout", "600"]),
    "held-trickle": ("trickle", ["--web.request-head-timeout", "600"]),
    "churn-idle": ("idle", []),
    "capped": ("idle", ["--web.max-connections", "2000"]),
    "stream": ("stream", []),
    "crlf": ("crlf", []),
    "trailer": ("trailer", []),
    "body": ("body", []),
}


async def run(
    scenarios: list[str], connections: int, seconds: float, log_dir: Path, flood_nice: int = 0
) -> list[dict[str, object]]:
    server = start_postgres()
    results: list[dict[str, object]] = []
    try:
        platform = await create_platform(server)
        for slug in ("acme", "globex", "initech"):
            await platform.add_tenant(slug)
        for name in scenarios:
            mode, options = SCENARIOS[name]
            args = ["--database.url", platform.exporter_url, "--ttl", "60", "--deadline", "5", *options]
            with exporter_process(args, log_dir) as process:
                # Churn never holds them all at once: its ramp is cut short.
                ramp = 60.0 if name.startswith("held") else 5.0
                flood = await measure_flood(
                    process.url,
                    process.port,
                    process.process.pid,
                    connections,
                    mode,
                    seconds,
                    ramp_limit=ramp,
                    flood_nice=flood_nice,
                )
            summary = {"scenario": name, **flood.summary()}
            results.append(summary)
            print(markdown_row(summary), flush=True)
    finally:
        server.remove()
    return results


HEADER = (
    "| scenario | scrapes (200) | p50 / p99 unloaded | p50 / p99 flooded | p99 ratio | p99 while ramping"
    " | open max | shed | RSS before / peak | server CPU unloaded / flooded |\n"
    "|---|---|---|---|---|---|---|---|---|---|"
)


def markdown_row(s: dict[str, object]) -> str:
    ratio = float(s["p99_loaded_ms"]) / float(s["p99_unloaded_ms"])  # type: ignore[arg-type]
    total = int(s["ramp_scrapes"]) + int(s["scrapes"])  # type: ignore[call-overload]
    ok = int(s["ramp_scrapes_200"]) + int(s["scrapes_200"])  # type: ignore[call-overload]
    return (
        f"| {s['scenario']} | {total} ({ok}) | {s['p50_unloaded_ms']} / {s['p99_unloaded_ms']} ms"
        f" | {s['p50_loaded_ms']} / {s['p99_loaded_ms']} ms | {ratio:.2f} | {s['p99_ramp_ms']} ms"
        f" | {s['open_connections_max']:.0f} | {s['shed_total']:.0f}"
        f" | {s['rss_before_mib']} / {s['rss_peak_mib']} MiB"
        f" | {s['server_cpu_unloaded_percent']} / {s['server_cpu_loaded_percent']} % |"
    )


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--scenarios", default=",".join(SCENARIOS))
    parser.add_argument("--connections", type=int, default=10_000)
    parser.add_argument("--seconds", type=float, default=15)
    parser.add_argument(
        "--flood-nice",
        type=int,
        default=0,
        help="run the flood process at this niceness (19: its own CPU, a remote client's, yields to the server's)",
    )
    args = parser.parse_args()
    raise_fd_limit()
    scenarios = [name.strip() for name in args.scenarios.split(",") if name.strip()]
    unknown = [name for name in scenarios if name not in SCENARIOS]
    if unknown:
        parser.error(f"unknown scenarios {unknown} (known: {', '.join(SCENARIOS)})")
    print(f"{args.connections} connections, {args.seconds:g} s held, load {os.getloadavg()}\n\n{HEADER}", flush=True)
    log_dir = Path(tempfile.mkdtemp(prefix="bench-flood-"))
    results = asyncio.run(run(scenarios, args.connections, args.seconds, log_dir, args.flood_nice))
    RESULTS.mkdir(exist_ok=True)
    path = RESULTS / f"flood-{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps(results, indent=2) + "\n")
    print(f"\nload at the end {os.getloadavg()}; results: {path}")
    complete = all(r["scrapes"] == r["scrapes_200"] and r["ramp_scrapes"] == r["ramp_scrapes_200"] for r in results)
    return 0 if complete else 1


if __name__ == "__main__":
    sys.exit(main())
