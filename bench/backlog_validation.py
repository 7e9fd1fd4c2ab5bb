"""A declared backlog with 1,000 groups x 5 states: what holding its samples to
the registry costs, and how long it holds the event loop, in this tree and,
with `--before TREE`, in another source tree, each in a process of its own.

The backlog is declared through the declarations file and the registry built
as `serve` builds it (devkit.catalog.catalog_of); its samples are every
registered combination. The refresh's database part is not here: it does not
depend on the number of combinations (bench/backlogs.py measures it). A
ticker on the loop records the longest stretch without a turn while the
samples are completed (`completing` where the tree has it; else the
synchronous `complete`, called from the loop as that tree does).

    .venv/bin/python -m bench.backlog_validation --before /tmp/before
"""

from __future__ import annotations

import argparse
import os
import tempfile
from pathlib import Path

import yaml

from bench.trees import probe

TREE = Path(__file__).resolve().parent.parent
GROUPS = 1000
STATES = 5

# Run in the served tree's process (PYTHONPATH=tree): prints one JSON line.
PROBE = """
import asyncio, inspect, json, statistics, sys, time
from exporter.backlogs import load_declarations
from exporter.samples import Sample
from devkit.catalog import catalog_of
import exporter.validate as validate

declarations = load_declarations(sys.argv[1], "--backlogs.config-file")
registry = catalog_of(declarations.backlogs, declarations.streams).registry
samples = [Sample(f.name, c, 1) for f in registry.families_of("big") for c in f.combinations]

async def once():
    gaps = []
    stop = False
    async def ticker():
        last = time.perf_counter()
        while not stop:
            await asyncio.sleep(0.001)
            now = time.perf_counter()
            gaps.append(now - last)
            last = now
    task = asyncio.create_task(ticker())
    await asyncio.sleep(0.01)
    started = time.perf_counter()
    if hasattr(validate, "completing"):
        done = await validate.completing("big", samples, registry)
    else:
        done = validate.complete("big", samples, registry)
    took = time.perf_counter() - started
    await asyncio.sleep(0.01)
    stop = True
    await task
    assert len(done) == len(samples)
    return took, max(gaps)

runs = [asyncio.run(once()) for _ in range(int(sys.argv[2]))]
print(json.dumps({"samples": len(samples), "seconds": statistics.median(r[0] for r in runs),
                  "longest_loop_stall_ms": max(r[1] for r in runs) * 1000}))
"""


def declarations(directory: Path) -> Path:
    path = directory / "backlog.yaml"
    backlog = {
        "help": "A backlog of many groups and states.",
        "scope": "global",
        "table": "public.big",
        "pending": {"status": "s0"},
        "group_by": "g",
        "groups": [f"g{i}" for i in range(GROUPS)],
        "oldest": "created_at",
        "states": {"column": "status", "values": [f"s{i}" for i in range(STATES)]},
        "arrivals": {"column": "created_at", "windows": ["1h"]},
    }
    path.write_text(yaml.safe_dump({"backlogs": {"big": backlog}}))
    return path


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path)
    parser.add_argument("--runs", type=int, default=5)
    args = parser.parse_args()
    trees = {"after": TREE} if args.before is None else {"before": args.before, "after": TREE}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs, medians")
    print("| code | samples | completing them, s | longest event-loop stall, ms |")
    print("|---|---:|---:|---:|")
    with tempfile.TemporaryDirectory(prefix="orpycamcp-backlog-") as directory:
        path = declarations(Path(directory))
        for code, tree in trees.items():
            result = probe(tree, PROBE, str(path), str(args.runs))
            print(
                f"| {code} | {result['samples']:,} | {result['seconds']:.3f} | {result['longest_loop_stall_ms']:.0f} |"
            )


if __name__ == "__main__":
    main()
