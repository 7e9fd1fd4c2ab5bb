"""PostgreSQL 15 and Redis 7 as Docker containers, for machines with a Docker
engine. They offer what the tests use of the local servers (a URL, stop, kill,
start again on the same port, pause), driven through the docker CLI."""

from __future__ import annotations

import secrets
import signal
import subprocess
import time
from dataclasses import dataclass, field

from exporter.tools.throwaway import ServerUnavailable, free_port, wait_for_port

POSTGRES_IMAGE = "postgres:15"
REDIS_IMAGE = "redis:7"


def docker(*args: str, timeout: float = 120) -> str:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout, check=False)
    if done.returncode != 0:
        raise ServerUnavailable("container", f"docker {args[0]} failed: {done.stderr.strip()[-500:]}")
    return done.stdout.strip()


@dataclass
class ContainerPostgres:
    port: int
    password: str
    settings: dict[str, str] = field(default_factory=dict)
    name: str = field(default_factory=lambda: f"orpycamcp-pg-{secrets.token_hex(4)}")
    created: bool = False

    def url(self, user: str = "postgres", password: str | None = None, database: str = "postgres") -> str:
        secret = self.password if password is None else password
        return f"postgresql://{user}:{secret}@127.0.0.1:{self.port}/{database}"

    def start(self, timeout: float = 60.0) -> None:
        if self.created:
            docker("start", self.name)
        else:
            options = {"fsync": "off", "full_page_writes": "off"} | self.settings
            command = [
                "run",
                "-d",
                "--name",
                self.name,
                "-p",
                f"127.0.0.1:{self.port}:5432",
                "-e",
                f"POSTGRES_PASSWORD={self.password}",
                POSTGRES_IMAGE,
            ]
            for key, value in options.items():
                command += ["-c", f"{key}={value}"]
            docker(*command, timeout=600)
            self.created = True
        end = time.monotonic() + timeout
        while time.monotonic() < end:
            ready = subprocess.run(
                ["docker", "exec", self.name, "pg_isready", "-U", "postgres", "-h", "127.0.0.1"],
                capture_output=True,
                check=False,
            )
            if ready.returncode == 0 and wait_for_port(self.port, 1):
                return
            time.sleep(0.3)
        raise ServerUnavailable("PostgreSQL", f"container {self.name} did not become ready")

    def stop(self, mode: signal.Signals = signal.SIGINT) -> None:
        if mode == signal.SIGKILL:
            docker("kill", self.name)
        else:
            docker("stop", "-t", "30", self.name)

    def remove(self) -> None:
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, check=False)


@dataclass
class ContainerRedis:
    port: int
    name: str = field(default_factory=lambda: f"orpycamcp-redis-{secrets.token_hex(4)}")
    created: bool = False

    @property
    def url(self) -> str:
        return f"redis://127.0.0.1:{self.port}/0"

    def start(self, timeout: float = 60.0) -> None:
        if self.created:
            docker("start", self.name)
        else:
            docker(
                "run",
                "-d",
                "--name",
                self.name,
                "-p",
                f"127.0.0.1:{self.port}:6379",
                REDIS_IMAGE,
                "redis-server",
                "--save",
                "",
                "--appendonly",
                "no",
                "--enable-debug-command",
                "yes",
                timeout=600,
            )
            self.created = True
        if not wait_for_port(self.port, timeout):
            raise ServerUnavailable("Redis", f"container {self.name} did not become ready")

    def stop(self, mode: signal.Signals = signal.SIGTERM) -> None:
        docker("kill" if mode == signal.SIGKILL else "stop", self.name)

    def pause(self) -> None:
        docker("pause", self.name)

    def resume(self) -> None:
        subprocess.run(["docker", "unpause", self.name], capture_output=True, check=False)

    def remove(self) -> None:
        self.resume()
        subprocess.run(["docker", "rm", "-f", self.name], capture_output=True, check=False)


def start_container_postgres(settings: dict[str, str] | None = None) -> ContainerPostgres:
    server = ContainerPostgres(port=free_port(), password=secrets.token_urlsafe(16), settings=settings or {})
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server


def start_container_redis() -> ContainerRedis:
    server = ContainerRedis(port=free_port())
    try:
        server.start()
    except BaseException:
        server.remove()
        raise
    return server
