"""devkit.mutation's test lists: each module's list names at least its mirrored test
files, so a test file written for the module's behaviour after the list cannot be
left out of its mutation run (as backlog.py's six catch-all tests once were)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit.mutation import ROOT, TARGETS


def mirrored_tests(module: str, root: Path = ROOT) -> list[str]:
    """tests/<package path>/test_<name>.py and test_<name>_*.py of `module`, its name
    in the singular too (streams.py: test_stream_deliveries.py)."""
    path = Path(module)
    folder = root / "tests" / path.parent
    patterns = {f"test_{name}{tail}" for name in (path.stem, path.stem.removesuffix("s")) for tail in (".py", "_*.py")}
    found = {file for pattern in patterns for file in folder.glob(pattern)}
    return sorted(file.relative_to(root).as_posix() for file in found)


@pytest.mark.parametrize("module", sorted(TARGETS))
def test_each_module_lists_its_mirrored_test_files(module: str) -> None:
    missing = [test for test in mirrored_tests(module) if test not in TARGETS[module]]
    assert not missing, f"{module}: devkit/mutation.py's list lacks {missing}"


@pytest.mark.parametrize("module", sorted(TARGETS))
def test_each_listed_test_file_exists(module: str) -> None:
    absent = [test for test in TARGETS[module] if not (ROOT / test).is_file()]
    assert not absent, f"{module}: devkit/mutation.py lists files that do not exist: {absent}"


def test_a_later_test_file_of_the_module_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "tests" / "exporter" / "signals"
    folder.mkdir(parents=True)
    for name in ("test_backlog.py", "test_backlog_catch_all.py", "test_backlogs.py", "test_dlq.py"):
        (folder / name).write_text("")
    assert mirrored_tests("exporter/signals/backlog.py", tmp_path) == [
        "tests/exporter/signals/test_backlog.py",
        "tests/exporter/signals/test_backlog_catch_all.py",
    ]


def test_a_test_file_named_in_the_singular_is_found(tmp_path: Path) -> None:
    folder = tmp_path / "tests" / "exporter" / "signals"
    folder.mkdir(parents=True)
    for name in ("test_streams.py", "test_stream_deliveries.py", "test_streamline.py"):
        (folder / name).write_text("")
    assert mirrored_tests("exporter/signals/streams.py", tmp_path) == [
        "tests/exporter/signals/test_stream_deliveries.py",
        "tests/exporter/signals/test_streams.py",
    ]
