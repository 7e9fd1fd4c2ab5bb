"""The slow tier's table (tests/conftest.py SLOW_TIER): each entry still names a test.

An entry left behind by a rename marks nothing, and its tests fall into the fast
tier without a word; this fails instead.
"""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from tests.conftest import SLOW_TIER

REPO_ROOT = Path(__file__).resolve().parents[1]


def defined_tests(path: Path) -> set[str]:
    tree = ast.parse(path.read_text(encoding="utf-8"))
    return {
        node.name
        for node in tree.body
        if isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef) and node.name.startswith("test_")
    }


@pytest.mark.parametrize("entry", SLOW_TIER)
def test_each_slow_tier_entry_names_a_test_file_folder_or_function(entry: str) -> None:
    path, _, function = entry.partition("::")
    target = REPO_ROOT / path
    if path.endswith("/"):
        assert any(target.rglob("test_*.py")), f"{entry}: no test file under it"
        return
    assert target.is_file(), f"{entry}: no such test file"
    assert target.name.startswith("test_"), f"{entry}: not a test file"
    if function:
        assert function in defined_tests(target), f"{entry}: no test function of that name in {path}"


def test_a_renamed_function_is_an_entry_naming_nothing(tmp_path: Path) -> None:
    module = tmp_path / "test_example.py"
    module.write_text("def test_kept() -> None:\n    pass\n\n\nasync def test_awaited() -> None:\n    pass\n")
    assert defined_tests(module) == {"test_kept", "test_awaited"}
