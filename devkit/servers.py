"""Real servers for the tests. PostgreSQL 15 and Redis 7 come from the local
binaries, or, with ORPYCAMCP_TEST_SERVERS=docker, from containers of a Docker
engine through testcontainers (images from devkit.images). Local is the
default: it is the faster of the two for the bulk of the suite, while the image
and compose tests always run containers. Never a skip: a test that cannot get
its server fails with the reason."""

from __future__ import annotations

import os
import signal
import subprocess
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager, contextmanager
from pathlib import Path
from typing import NoReturn, Protocol, TypeVar

import pytest

from devkit.docker_engine import DockerEngine
from exporter.tools import throwaway
from exporter.tools.throwaway import (
    LocalPostgres,
    ServerUnavailable,
    free_port,
    postgres_bindir,
    redis_binary,
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
    "in_containers",
    "postgres_bindir",
    "postgres_server",
    "redis_server",
    "servers_header",
    "start_postgres",
    "start_redis",
    "wait_for_port",
]


class Pausable:
    """A server process the fault tests pause (SIGSTOP) and resume."""

    process: subprocess.Popen[bytes] | None

    def pause(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGSTOP)

    def resume(self) -> None:
        if self.process is not None:
            self.process.send_signal(signal.SIGCONT)


class LocalRedis(Pausable, throwaway.LocalRedis):
    """The demo's throwaway Redis, plus what the fault tests do to it: pause
    it (SIGSTOP) and slow it down (DEBUG SLEEP, allowed from loopback)."""

    def remove(self) -> None:
        self.resume()
        super().remove()


def start_redis() -> LocalRedis:
    return throwaway.start_redis(LocalRedis, ("--enable-debug-command", "local"))


MODES = ("local", "docker")


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


def server_mode() -> str:
    mode = os.environ.get("ORPYCAMCP_TEST_SERVERS", "local") or "local"
    if mode not in MODES:
        pytest.fail(f"ORPYCAMCP_TEST_SERVERS={mode!r}: one of {', '.join(MODES)}", pytrace=False)
    return mode


def in_containers() -> bool:
    return server_mode() == "docker"


def servers_header(docker_needed: bool = True) -> list[str]:
    """What the suite's servers are, for the report header; `docker_needed`: the
    run includes the image and compose tests (not the fast tier alone)."""
    lines: list[str] = []
    if in_containers():
        from devkit import images

        source = "official images" if images.use_official_images() else "images built here on Debian bookworm"
        lines.append(f"servers: PostgreSQL 15 and Redis 7 in containers (testcontainers, {source})")
    else:
        try:
            where = f"{postgres_bindir()}, {redis_binary()}"
        except ServerUnavailable as exc:
            where = f"missing: {exc}"
        lines.append(f"servers: PostgreSQL 15 and Redis 7 from local binaries ({where})")
    host = os.environ.get("DOCKER_HOST")
    if not docker_needed and not in_containers():
        lines.append("docker: not used (no image or compose test in this run)")
        return lines
    engine = DockerEngine(host) if host else None
    if engine is not None and engine.answers():
        lines.append(f"docker: engine {engine.version()} at {host}, for the image and compose tests")
    elif host:
        lines.append(f"docker: DOCKER_HOST={host} does not answer: the image and compose tests will fail")
    else:
        lines.append("docker: a private engine is started for the image and compose tests")
    return lines


POSTGRES_HINT = "Install PostgreSQL 15 (apt-get install postgresql) or set PG_BINDIR."
REDIS_HINT = "Install Redis 7 (apt-get install redis-server) or set REDIS_SERVER."


def _fail(exc: ServerUnavailable, hint: str) -> NoReturn:
    pytest.fail(f"{exc}. {hint}" if hint else str(exc), pytrace=False)


class _Removable(Protocol):
    def remove(self) -> None: ...


Server = TypeVar("Server", bound=_Removable)


@contextmanager
def serving(start: Callable[[], Server], hint: str = "") -> Iterator[Server]:
    """A started server, removed afterwards; the test fails (never skips) with `hint` if it cannot start."""
    try:
        server = start()
    except ServerUnavailable as exc:
        _fail(exc, hint)
    try:
        yield server
    finally:
        server.remove()


# A test cluster creates and drops a database per test: on a shared disk that
# writing (and removing the cluster at the end) takes longer than the tests
# themselves. In memory when the machine has room for it.
MEMORY_DIRECTORY = Path("/dev/shm")  # noqa: S108 -- a private directory is made inside (mkdtemp)
MEMORY_NEEDED = 2 << 30


def memory_directory() -> str | None:
    """A RAM-backed directory with room for a test cluster, or None (the temporary directory then)."""
    try:
        stat = os.statvfs(MEMORY_DIRECTORY)
    except OSError:
        return None
    if stat.f_bavail * stat.f_frsize < MEMORY_NEEDED or not os.access(MEMORY_DIRECTORY, os.W_OK):
        return None
    return str(MEMORY_DIRECTORY)


def postgres_server() -> AbstractContextManager[PostgresServer]:
    """A private PostgreSQL 15: a container, or a cluster from the local binaries (in
    memory when there is room).

    Both can be stopped, killed and started again on the same port.
    """

    def start() -> PostgresServer:
        if in_containers():
            from devkit.containers import start_container_postgres

            return start_container_postgres()
        return start_postgres(directory=memory_directory())

    return serving(start, POSTGRES_HINT)


def redis_server() -> AbstractContextManager[RedisServer]:
    def start() -> RedisServer:
        if in_containers():
            from devkit.containers import start_container_redis

            return start_container_redis()
        return start_redis()

    return serving(start, REDIS_HINT)
