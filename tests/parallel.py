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
