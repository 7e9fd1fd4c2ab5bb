"""Real servers for the tests: Docker containers when an engine is reachable,
otherwise the local binaries (ORPYCAMCP_TEST_SERVERS=local or docker forces
one). Never a skip: a test that cannot get its server fails with the reason."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import pytest

from devkit.containers import start_container_postgres, start_container_redis
from exporter.tools import throwaway
from exporter.tools.throwaway import (
    LocalPostgres,
    ServerUnavailable,
    free_port,
    postgres_bindir,
    start_postgres,
    wait_for_port,
)

__all__ = [
    "LocalPostgres",
    "LocalRedis",
    "PostgresServer",
    "RedisServer",
    "ServerUnavailable",
    "free_port",
    "postgres_bindir",
    "postgres_server",
    "redis_server",
    "start_postgres",
    "start_redis",
    "wait_for_port",
]


class LocalRedis(throwaway.LocalRedis):
    """The demo's throwaway Redis, plus what the fault tests do to it: pause
    it (SIGSTOP) and slow it down (DEBUG SLEEP, allowed from loopback)."""

    def pause(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)

    def remove(self) -> None:
        self.resume()
        super().remove()


def start_redis() -> LocalRedis:
    return throwaway.start_redis(LocalRedis, ("--enable-debug-command", "local"))


class PostgresServer(Protocol):
    """What the tests use of a PostgreSQL server, local or in a container."""

    port: int
    password: str

    def url(self, user: str = ..., password: str | None = ..., database: str = ...) -> str: ...
    def start(self, timeout: float = ...) -> None: ...
    def stop(self, mode: signal.Signals = ...) -> None: ...
    def remove(self) -> None: ...


class RedisServer(Protocol):
    """What the tests use of a Redis server, local or in a container."""

    port: int

    @property
    def url(self) -> str: ...
    def start(self, timeout: float = ...) -> None: ...
    def stop(self, mode: signal.Signals = ...) -> None: ...
    def pause(self) -> None: ...
    def resume(self) -> None: ...
    def remove(self) -> None: ...


def docker_reachable() -> bool:
    forced = os.environ.get("ORPYCAMCP_TEST_SERVERS")
    if forced in ("local", "docker"):
        return forced == "docker"
    if shutil.which("docker") is None:
        return False
    try:
        return subprocess.run(["docker", "info"], capture_output=True, timeout=5, check=False).returncode == 0
    except (OSError, subprocess.TimeoutExpired):
        return False


@contextmanager
def postgres_server() -> Iterator[PostgresServer]:
    """A private PostgreSQL 15: a container, or a cluster from the local binaries.

    Both can be stopped, killed and started again on the same port.
    """
    server: PostgresServer
    try:
        server = start_container_postgres() if docker_reachable() else start_postgres()
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install PostgreSQL 15 (apt-get install postgresql) or set PG_BINDIR.", pytrace=False)
    try:
        yield server
    finally:
        server.remove()


@contextmanager
def redis_server() -> Iterator[RedisServer]:
    server: RedisServer
    try:
        server = start_container_redis() if docker_reachable() else start_redis()
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install Redis 7 (apt-get install redis-server) or set REDIS_SERVER.", pytrace=False)
    try:
        yield server
    finally:
        server.remove()
