"""The generated tables of the documentation, written between their markers:
`python -m devkit.doctables` rewrites them after a change to the registry, the
settings, the failure hints, the example backlogs or a new benchmark run; `tests/test_readme.py`
fails while any of them differs from what it generates."""

from __future__ import annotations

import sys
from collections.abc import Callable
from pathlib import Path
from typing import NamedTuple

from bench.current import figures_table
from devkit.catalog import catalog_of
from devkit.modules_map import modules_table
from devkit.reference_tables import options_table, reasons_table
from exporter.backlogs import load_declarations
from exporter.tools.reference import metrics_table

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE_BACKLOGS = ROOT / "deploy" / "backlogs.example.yml"


class GeneratedTable(NamedTuple):
    """A table of `page` between `<!-- marker:start -->` and `<!-- marker:end -->`."""

    page: Path
    marker: str
    generate: Callable[[], str]


def declared_metrics_table() -> str:
    """The rows the example backlogs add to the metrics table, under its header."""
    backlogs = load_declarations(str(EXAMPLE_BACKLOGS), "--backlogs.config-file").backlogs
    table = metrics_table(catalog_of(backlogs).registry, {b.name: b.help for b in backlogs}).splitlines()
    declared = [row for row in table[2:] if row.startswith("| `orpycamcp_backlog_")]
    return "\n".join([*table[:2], *declared]) + "\n"


TABLES: tuple[GeneratedTable, ...] = (
    GeneratedTable(ROOT / "README.md", "metrics-table", metrics_table),
    GeneratedTable(ROOT / "README.md", "figures-table", figures_table),
    GeneratedTable(ROOT / "docs" / "configuration.md", "options-table", options_table),
    GeneratedTable(ROOT / "docs" / "backlogs.md", "declared-metrics-table", declared_metrics_table),
    GeneratedTable(ROOT / "docs" / "runbook.md", "reasons-table", reasons_table),
    GeneratedTable(ROOT / "docs" / "architecture.md", "modules-table", modules_table),
)


class MarkerMissing(Exception):
    def __init__(self, page: Path, marker: str) -> None:
        super().__init__(f"{page.relative_to(ROOT)}: the <!-- {marker}:start --> or :end marker is missing")


def _bounds(text: str, page: Path, marker: str) -> tuple[int, int]:
    start = f"<!-- {marker}:start -->\n"
    end = f"<!-- {marker}:end -->"
    first = text.find(start)
    last = text.find(end, first + len(start)) if first >= 0 else -1
    if first < 0 or last < 0:
        raise MarkerMissing(page, marker)
    return first + len(start), last


def current(table: GeneratedTable) -> str:
    """What the page holds between the table's markers now."""
    text = table.page.read_text(encoding="utf-8")
    begin, end = _bounds(text, table.page, table.marker)
    return text[begin:end]


def rewrite(table: GeneratedTable) -> bool:
    """Write the generated table into its page; True when the page changed."""
    text = table.page.read_text(encoding="utf-8")
    begin, end = _bounds(text, table.page, table.marker)
    new = text[:begin] + table.generate() + text[end:]
    if new == text:
        return False
    table.page.write_text(new, encoding="utf-8")
    return True


def main() -> int:
    try:
        changed = [table for table in TABLES if rewrite(table)]
    except MarkerMissing as exc:
        print(f"doctables: {exc}", file=sys.stderr)
        return 2
    for table in changed:
        print(f"rewrote {table.marker} in {table.page.relative_to(ROOT)}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
