"""Real servers for the tests: a Docker container when an engine is reachable
(testcontainers), otherwise the local binaries. Never a skip: a test that
cannot get its server fails with the reason."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager

import pytest

from exporter.localservers import LocalPostgres, LocalRedis, ServerUnavailable, start_postgres, start_redis


def docker_reachable() -> bool:
    if os.environ.get("ORPYCAMCP_TEST_NO_DOCKER") or shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def postgres_server() -> Iterator[LocalPostgres]:
    """A local PostgreSQL 15 cluster.

    Fault tests stop, kill and restart the server, which needs a process of
    ours; with a Docker engine the same cluster runs from local binaries too
    when they exist, else the suite fails with the reason.
    """
    try:
        server = start_postgres()
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install PostgreSQL 15 (apt-get install postgresql) or set PG_BINDIR.", pytrace=False)
    try:
        yield server
    finally:
        server.remove()


@contextmanager
def redis_server() -> Iterator[LocalRedis]:
    try:
        server = start_redis()
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install Redis 7 (apt-get install redis-server) or set REDIS_SERVER.", pytrace=False)
    try:
        yield server
    finally:
        server.remove()
