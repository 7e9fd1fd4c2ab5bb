"""Tests run in parallel: scripts/test starts pytest-xdist workers, each running
whole files (`--dist loadfile`), with its own session servers (PostgreSQL,
Redis) on free ports and its own temporary directory.

A test that must have the machine to itself (it measures time against a bound,
or fills something all processes share) is marked `@pytest.mark.alone`: it
waits until the tests running on other workers are done, and no other test
starts until it is. Without workers (plain `pytest`) everything runs in turn
anyway and the mark changes nothing.

The workers share two lock files in the run's temporary directory: every test
holds the room shared (an alone test, exclusively); a test waiting to be
alone holds the turnstile, so that no new test slips in before it.
"""

from __future__ import annotations

import fcntl
import os
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from pathlib import Path

import pytest

ALONE = "alone"


def shared_directory(config: pytest.Config) -> Path | None:
    """The run's temporary directory, shared by its workers; None without workers."""
    if "PYTEST_XDIST_WORKER" not in os.environ or config.option.basetemp is None:
        return None
    # Each worker's basetemp is <the run's basetemp>/<worker id>.
    return Path(config.option.basetemp).parent


@contextmanager
def turn(directory: Path | None, alone: bool) -> Iterator[None]:
    """Hold the room for one test: shared, or alone when `alone`."""
    if directory is None:
        yield
        return
    with ExitStack() as held:
        turnstile = held.enter_context((directory / "tests.turnstile").open("a"))
        room = held.enter_context((directory / "tests.room").open("a"))
        fcntl.flock(turnstile, fcntl.LOCK_EX)
        if alone:
            # Kept through the test: whoever comes next waits at the turnstile.
            held.callback(fcntl.flock, turnstile, fcntl.LOCK_UN)
            fcntl.flock(room, fcntl.LOCK_EX)
        else:
            try:
                fcntl.flock(room, fcntl.LOCK_SH)
            finally:
                fcntl.flock(turnstile, fcntl.LOCK_UN)
        held.callback(fcntl.flock, room, fcntl.LOCK_UN)
        yield


@contextmanager
def one_worker_at_a_time(config: pytest.Config, name: str) -> Iterator[None]:
    """Held by one worker at a time: for work every worker would otherwise do at
    once on something they share (the images, built once per Docker engine)."""
    directory = shared_directory(config)
    if directory is None:
        yield
        return
    with (directory / f"{name}.lock").open("a") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(lock, fcntl.LOCK_UN)


# The modules that took longest in the whole run of 2026-12-05 (afternoon, ci profile, 2 workers,
# load 4-6; seconds of the module's slowest tests from `--durations`), longest first. The workers
# take whole modules in the order the collection lists them (`--dist loadfile
# --no-loadscope-reorder`, scripts/test): these first, so that the run does not end with one
# worker in a long module and the other idle, as it did when pytest-xdist sent the modules with
# most tests first and these (one to four tests each) last. Keep it to the top of the 25
# slowest that every run prints. The images are built before and beside the tests now (.ci/run,
# scripts/test; the image tests wait for that build): their module is no longer the longest.
LONGEST_FIRST = (
    "tests/properties/test_configurations.py",  # 331 s, three properties (182, 123, 26)
    "tests/alerts/test_rules.py",  # promtool over every rule test, one run per file (databases 51, dlq 25)
    "tests/alerts/test_mixin.py",  # the same, renamed (databases 31, audit_chain 24)
    "tests/e2e/test_federation.py",  # 120 s
    "tests/e2e/test_alerting.py",  # 120 s
    "tests/properties/test_requests.py",  # 117 s (83, 34)
    "tests/properties/test_secrets.py",  # 114 s (69, 46)
    "tests/properties/test_bounded_work.py",  # 79 s
    "tests/e2e/test_dashboard_scope.py",  # 64 s
    "tests/deploy/test_wheel.py",  # 60 s of setup (its wheel, virtualenv and installs; less with uv now)
    "tests/e2e/test_standby_copy.py",  # 55 s
    "tests/alerts/test_trim_scenarios.py",  # 51 s
    "tests/e2e/test_ha_remote_write.py",  # 49 s
    "tests/alerts/test_mixin_lint.py",  # 79 s (52, 27), about half with go-jsonnet for the local path
    "tests/exporter/sources/postgres/test_scale.py",  # 32 s
    "tests/deploy/test_image.py",  # 31 s of setup with the images built, 100 s when it builds them
    "tests/e2e/test_platform_totals.py",  # 27 s
    "tests/e2e/test_sharded.py",  # 26 s
    "tests/deploy/test_compose_up.py",  # 24 s
)


def run_order(items: list[pytest.Item], root: Path) -> None:
    """In place: the modules of LONGEST_FIRST first, in its order; the modules holding a test
    marked alone last (each waits for the other workers' running tests: at the end of the run
    those are the short ones); the rest as collected. The order within a module is kept."""
    rank = {path: index for index, path in enumerate(LONGEST_FIRST)}
    alone_modules = {item.path for item in items if item.get_closest_marker(ALONE) is not None}

    def place(item: pytest.Item) -> tuple[int, int]:
        path = item.path.relative_to(root).as_posix()
        if path in rank:
            return (0, rank[path])
        return (2, 0) if item.path in alone_modules else (1, 0)

    items.sort(key=place)
