"""The turns of parallel workers (tests/parallel.py): a test marked alone waits
for the tests running beside it, and the tests that come after wait for it."""

from __future__ import annotations

import subprocess
import sys
import threading
from pathlib import Path

from tests.parallel import LONGEST_FIRST, turn


def hold(directory: Path, alone: bool, entered: threading.Event, leave: threading.Event) -> threading.Thread:
    """A test holding its turn from another thread (each turn opens its own lock files, as a worker does)."""

    def run() -> None:
        with turn(directory, alone):
            entered.set()
            leave.wait(10)

    thread = threading.Thread(target=run)
    thread.start()
    return thread


def test_an_alone_test_waits_for_the_running_ones_and_holds_off_the_next(tmp_path: Path) -> None:
    first, first_leave = threading.Event(), threading.Event()
    alone, alone_leave = threading.Event(), threading.Event()
    later, later_leave = threading.Event(), threading.Event()
    threads = [hold(tmp_path, False, first, first_leave)]
    try:
        assert first.wait(10)
        threads.append(hold(tmp_path, True, alone, alone_leave))
        assert not alone.wait(0.5), "ran beside a running test"
        first_leave.set()
        assert alone.wait(10), "never ran after the running test left"
        threads.append(hold(tmp_path, False, later, later_leave))
        assert not later.wait(0.5), "a test started beside the alone one"
        alone_leave.set()
        assert later.wait(10)
    finally:
        for leave in (first_leave, alone_leave, later_leave):
            leave.set()
        for thread in threads:
            thread.join()


def test_tests_side_by_side_share_the_room(tmp_path: Path) -> None:
    one, one_leave = threading.Event(), threading.Event()
    two, two_leave = threading.Event(), threading.Event()
    threads = [hold(tmp_path, False, one, one_leave), hold(tmp_path, False, two, two_leave)]
    try:
        assert one.wait(10)
        assert two.wait(10), "a second test waited for the first"
    finally:
        one_leave.set()
        two_leave.set()
        for thread in threads:
            thread.join()


def test_without_workers_nothing_waits() -> None:
    with turn(None, alone=True), turn(None, alone=True):
        pass


def test_the_longest_modules_go_first_and_the_alone_ones_last() -> None:
    """The order the workers take the modules in (tests/parallel.py: run_order), as pytest collects it."""
    root = Path(__file__).resolve().parents[1]
    assert [path for path in LONGEST_FIRST if not (root / path).is_file()] == []
    modules = ["tests/test_parallel.py", "tests/faults/test_connection_flood.py"]
    modules += ["tests/deploy/test_wheel.py", "tests/properties/test_requests.py"]
    collected = subprocess.run(
        [sys.executable, "-m", "pytest", "-p", "no:cacheprovider", "--collect-only", "-q", *modules],
        cwd=root,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    order = list(dict.fromkeys(line.split("::")[0] for line in collected.splitlines() if "::" in line))
    assert order == [
        "tests/properties/test_requests.py",
        "tests/deploy/test_wheel.py",
        "tests/test_parallel.py",
        "tests/faults/test_connection_flood.py",
    ]
