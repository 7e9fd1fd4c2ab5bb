"""Large configuration files (600 KB to 1 MiB, under the size cap): how long the
web configuration and the declarations file take to be loaded or refused, in
this tree and, with `--before TREE` (repeatable), in other source trees, each
in a process of its own (the loaders as `check-config` and `serve` call them,
without the interpreter's start).

The shapes are the ones the node count was made for (flow lists and maps
under a key the format does not know) and the ones it does not count (a
megabyte of one scalar, of quotes, of spaces, of a comment), plus the largest
files that load: a backlog of 9,000 groups, 4,000 users.

    .venv/bin/python -m bench.config_files --before /tmp/before
"""

from __future__ import annotations

import argparse
import os
import statistics
import tempfile
from collections.abc import Callable
from pathlib import Path

from bench.trees import probe

TREE = Path(__file__).resolve().parent.parent
MIB = 1 << 20
HASH = "$2b$04$" + "a" * 53

# Run in the measured tree's process (PYTHONPATH=tree): prints one JSON line.
PROBE = """
import json, sys, time
from exporter.backlogs import load_declarations
from exporter.http.webconfig import load_web_config

kind, path, runs = sys.argv[1], sys.argv[2], int(sys.argv[3])
seconds = []
for _ in range(runs):
    started = time.perf_counter()
    try:
        if kind == "web":
            load_web_config(path)
        else:
            load_declarations(path, "--backlogs.config-file")
        outcome = "loaded"
    except Exception as exc:  # the outcome's first line, whatever the tree raises
        outcome = type(exc).__name__ + ": " + str(exc).splitlines()[0][-90:]
    seconds.append(time.perf_counter() - started)
print(json.dumps({"seconds": seconds, "outcome": outcome}))
"""


def _sized(head: str, item: Callable[[int], str], separator: str, tail: str, size: int) -> str:
    """head, items joined by separator, tail: as many items as fit in `size` bytes."""
    parts: list[str] = []
    length = len(head) + len(tail)
    while length + len(item(len(parts))) + len(separator) < size:
        parts.append(item(len(parts)))
        length += len(parts[-1]) + len(separator)
    return head + separator.join(parts) + tail


def cases() -> dict[str, tuple[str, str]]:
    """name: (web or declarations, the file's text)."""
    web = "basic_auth_users: {}\nunknown: "
    decl = "unknown: "
    groups = ", ".join(f"g{i}" for i in range(9_000))
    backlog = (
        "backlogs:\n  big:\n    help: x\n    scope: global\n    table: public.big\n"
        f"    pending: {{status: p}}\n    group_by: g\n    groups: [{groups}]\n"
    )
    return {
        "web, flow list under an unknown key, 600 KB": ("web", _sized(web + "[", lambda i: "a", ", ", "]\n", 600_000)),
        "web, flow list, 900 KB": ("web", _sized(web + "[", lambda i: "a", ", ", "]\n", 900_000)),
        "web, flow map, 900 KB": ("web", _sized(web + "{", lambda i: f"k{i}: a", ", ", "}\n", 900_000)),
        "declarations, flow list, 900 KB": ("declarations", _sized(decl + "[", lambda i: "a", ", ", "]\n", 900_000)),
        "declarations, flow map, 900 KB": (
            "declarations",
            _sized(decl + "{", lambda i: f"k{i}: a", ", ", "}\n", 900_000),
        ),
        "declarations, block map, 900 KB": ("declarations", _sized("", lambda i: f"k{i}: a", "\n", "\n", 900_000)),
        "web, one scalar of 1 MiB": ("web", "unknown: " + "a" * (MIB - 20) + "\n"),
        "web, 1 MiB of '' in one quoted scalar": ("web", "unknown: '" + "''" * ((MIB - 20) // 2) + "'\n"),
        "web, 1 MiB of spaces": ("web", "basic_auth_users: {}\n" + " " * (MIB - 40) + "\n"),
        "declarations, a comment of 1 MiB": ("declarations", "# " + "c" * (MIB - 20) + "\nbacklogs: {}\n"),
        "declarations, a backlog of 9,000 groups": ("declarations", backlog),
        "web, 4,000 users": (
            "web",
            "basic_auth_users:\n" + "".join(f"  user{i}: {HASH}\n" for i in range(4_000)),
        ),
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--before", type=Path, action="append", default=[], help="another source tree (repeatable)")
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    trees = {str(tree): tree for tree in args.before} | {"this tree": TREE}
    print(f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} CPUs; {args.runs} runs, median (max) seconds\n")
    print("| file | bytes | " + " | ".join(trees) + " | outcome (this tree) |")
    print("|---|---:|" + "---:|" * len(trees) + "---|")
    with tempfile.TemporaryDirectory(prefix="orpycamcp-config-") as directory:
        for name, (kind, text) in cases().items():
            path = Path(directory) / "file.yml"
            path.write_text(text, encoding="utf-8")
            cells, outcome = [], ""
            for tree in trees.values():
                result = probe(tree, PROBE, kind, str(path), str(args.runs))
                seconds: list[float] = result["seconds"]  # type: ignore[assignment]
                cells.append(f"{statistics.median(seconds):.2f} ({max(seconds):.2f})")
                outcome = str(result["outcome"])
            print(f"| {name} | {len(text.encode()):,} | " + " | ".join(cells) + f" | {outcome} |", flush=True)
    print(f"\nload average {os.getloadavg()[0]:.1f} at the end")


if __name__ == "__main__":
    main()
