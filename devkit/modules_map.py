"""The module map of docs/architecture.md: every module of exporter/ and
registry/ with its one job, the first sentence of its own docstring. Generated
(`python -m devkit.doctables`), so the map cannot drift from the code: a module
added, removed or renamed, or a docstring changed, leaves the page stale and
tests/test_readme.py failing."""

from __future__ import annotations

import ast
import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("exporter", "registry")
SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`(])")


class ModuleUndocumented(Exception):
    def __init__(self, path: Path) -> None:
        super().__init__(f"{path.relative_to(ROOT)} has no docstring: its first sentence is its line on the module map")


def modules() -> list[Path]:
    """Every module of the shipped packages, in path order."""
    return sorted(path for package in PACKAGES for path in (ROOT / package).rglob("*.py"))


def one_job(path: Path) -> str:
    """The first sentence of the module's docstring, on one line."""
    docstring = ast.get_docstring(ast.parse(path.read_text(encoding="utf-8")))
    if not docstring:
        raise ModuleUndocumented(path)
    paragraph = " ".join(docstring.split("\n\n")[0].split())
    return SENTENCE_END.split(paragraph, maxsplit=1)[0]


def modules_table() -> str:
    rows = ["| module | its one job |", "|---|---|"]
    for path in modules():
        relative = path.relative_to(ROOT).as_posix()
        job = one_job(path).replace("|", "\\|")
        rows.append(f"| [`{relative}`](../{relative}) | {job} |")
    return "\n".join(rows) + "\n"
