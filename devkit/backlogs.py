"""The example backlogs file, deploy/backlogs.example.yml: the one text the
tests and the benchmarks declare backlogs from, whole or cut to some of its
backlogs. Each backlog keeps its lines as the file writes them, so a test can
still vary one of them with str.replace."""

from __future__ import annotations

import re
from pathlib import Path

EXAMPLE = Path(__file__).resolve().parents[1] / "deploy" / "backlogs.example.yml"
BACKLOG_KEY = re.compile(r"^  (?P<name>[a-z][a-z0-9_]*):\s*$")


def example_backlogs(*names: str) -> str:
    """The example file, or a backlogs file of only the backlogs `names` (in that order)."""
    text = EXAMPLE.read_text()
    if not names:
        return text
    blocks: dict[str, list[str]] = {}
    current: list[str] | None = None
    for line in text.splitlines(keepends=True):
        key = BACKLOG_KEY.match(line)
        if key is not None:
            current = blocks[key["name"]] = [line]
        elif current is not None and line.startswith("    "):
            current.append(line)
        else:
            current = None  # a comment or the end of the backlog
    unknown = [name for name in names if name not in blocks]
    if unknown:
        raise KeyError(f"{EXAMPLE.name} declares no backlog {unknown}; it has {sorted(blocks)}")
    return "backlogs:\n" + "".join(line for name in names for line in blocks[name])


def without(text: str, *keys: str) -> str:
    """A backlogs file without the given keys of its backlogs (e.g. "states",
    "arrivals") and the lines nested under them."""
    kept: list[str] = []
    skipping = False
    for line in text.splitlines(keepends=True):
        indent = len(line) - len(line.lstrip(" "))
        if indent == 4:
            skipping = line.strip().split(":", 1)[0] in keys
        elif indent < 4:
            skipping = False
        if not skipping:
            kept.append(line)
    return "".join(kept)


def pending_only(*names: str) -> str:
    """The example's backlogs `names` as pending and oldest only: without states or arrivals."""
    return without(example_backlogs(*names), "states", "arrivals")
