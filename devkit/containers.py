"""PostgreSQL 15 and Redis 7 as containers of a Docker engine, through
testcontainers: what the tests use of the local servers (a URL, stop, kill,
start again on the same port, pause), with the images of devkit.images."""

from __future__ import annotations

import os
import secrets
import signal
import time
from dataclasses import dataclass, field
from typing import Any, Protocol, TypeVar

from devkit import images
from exporter.tools.throwaway import ServerUnavailable, free_port, wait_for_port

# The reaper container comes from a registry; the tests remove their containers themselves.
os.environ.setdefault("TESTCONTAINERS_RYUK_DISABLED", "true")

from testcontainers.core.container import DockerContainer  # after the setting above


@dataclass
class ContainerPostgres:
    port: int
    password: str
    settings: dict[str, str] = field(default_factory=dict)
    container: Any = None  # DockerContainer once created

    def url(self, user: str = "postgres", password: str | None = None, database: str = "postgres") -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60.0) -> None:
        if self.container is None:
            options = {"fsync": "off", "full_page_writes": "off"} | self.settings
            command = [part for key, value in options.items() for part in ("-c", f"{key}={value}")]
            self.container = (
                DockerContainer(images.image("postgres"))
                .with_env("POSTGRES_PASSWORD", self.password)
                .with_bind_ports(5432, self.port)
                .with_command(command)
            )
            self.container.start()
        else:
            self.container.get_wrapped_container().start()
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            # Over TCP: the image's init server listens on its socket only.
            ready = self.container.exec(["pg_isready", "-U", "postgres", "-h", "127.0.0.1"])
            if ready.exit_code == 0 and wait_for_port(self.port, 1):
                return
            time.sleep(0.3)
        raise ServerUnavailable("PostgreSQL", f"container {self.container.get_container_id()[:12]} not ready")

    def stop(self, mode: signal.Signals = signal.SIGINT) -> None:
        wrapped = self.container.get_wrapped_container()
        if mode == signal.SIGKILL:
            wrapped.kill()
        else:
            wrapped.stop(timeout=30)

    def remove(self) -> None:
        if self.container is not None:
            self.container.stop()


@dataclass
class ContainerRedis:
    port: int
    container: Any = None

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 60.0) -> None:
        if self.container is None:
            command = ["redis-server", "--save", "", "--appendonly", "no", "--enable-debug-command", "yes"]
            self.container = (
                DockerContainer(images.image("redis")).with_bind_ports(6379, self.port).with_command(command)
            )
            self.container.start()
        else:
            self.container.get_wrapped_container().start()
        if not wait_for_port(self.port, timeout):
            raise ServerUnavailable("Redis", f"container {self.container.get_container_id()[:12]} not ready")

    def stop(self, mode: signal.Signals = signal.SIGTERM) -> None:
        wrapped = self.container.get_wrapped_container()
        if mode == signal.SIGKILL:
            wrapped.kill()
        else:
            wrapped.stop()

    def pause(self) -> None:
        self.container.get_wrapped_container().pause()

    def resume(self) -> None:
        wrapped = self.container.get_wrapped_container()
        wrapped.reload()
        if wrapped.status == "paused":
            wrapped.unpause()

    def remove(self) -> None:
        if self.container is not None:
            self.resume()
            self.container.stop()


class _Server(Protocol):
    def start(self, timeout: float = ...) -> None: ...
    def remove(self) -> None: ...


Started = TypeVar("Started", bound=_Server)


def _started(server: Started) -> Started:
    """The server, started; removed (never left half-made) if it does not start."""
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server


def start_container_postgres(settings: dict[str, str] | None = None) -> ContainerPostgres:
    return _started(ContainerPostgres(port=free_port(), password=secrets.token_urlsafe(16), settings=settings or {}))


def start_container_redis() -> ContainerRedis:
    return _started(ContainerRedis(port=free_port()))
