"""The fences table of docs/architecture.md names code, tests and benchmarks
that exist: a replacement deleted, a test renamed or moved, leaves the table
failing here instead of pointing at nothing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
ARCHITECTURE = ROOT / "docs" / "architecture.md"
PATH = re.compile(r"`((?:exporter|tests|bench)/[\w/]+(?:\.py)?/?)`")
TEST_NAME = re.compile(r"`(test_\w+)`")


def fence_rows() -> list[str]:
    text = ARCHITECTURE.read_text(encoding="utf-8")
    section = text.split("## Fences", 1)[1].split("\n## ", 1)[0]
    return [line for line in section.splitlines() if line.startswith("| `")]


def test_the_table_has_a_row_per_replacement() -> None:
    rows = fence_rows()
    assert len(rows) >= 5
    for row in rows:
        cells = [cell.strip() for cell in row.strip("|").split("|")]
        assert len(cells) == 6, row
        assert all(cells), f"an empty cell: {row}"


def test_every_named_file_exists() -> None:
    for row in fence_rows():
        for named in PATH.findall(row):
            assert (ROOT / named).exists(), f"{named} is named by the fences table and does not exist"


def test_every_named_test_is_in_the_file_of_its_cell() -> None:
    named_any = False
    for row in fence_rows():
        for cell in row.strip("|").split("|"):
            files = [ROOT / named for named in PATH.findall(cell) if named.endswith(".py")]
            for name in TEST_NAME.findall(cell):
                named_any = True
                defined = {
                    node.name
                    for path in files
                    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8")))
                    if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef)
                }
                assert name in defined, f"{name} is not defined in {[str(f.relative_to(ROOT)) for f in files]}"
    assert named_any
