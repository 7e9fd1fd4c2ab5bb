"""A private Docker engine: dockerd with its own socket, data root and exec
root under one directory, started and stopped by its pid, so that it never
touches a system engine or anybody else's.

    python -m devkit.docker_engine start DIR   # prints DOCKER_HOST=unix://DIR/docker.sock
    python -m devkit.docker_engine stop DIR    # removes its containers, stops it
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from collections.abc import Iterator
from contextlib import closing, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

import docker
import docker.errors
import requests.exceptions

START_TIMEOUT_SECONDS = 60.0
STOP_TIMEOUT_SECONDS = 30.0


class EngineUnavailable(Exception):
    """No Docker engine could be had; says why."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        self.reason = reason
        self.log_tail = log_tail
        message = f"no Docker engine: {reason}"
        if log_tail:
            message += f"\n--- dockerd log (end) ---\n{log_tail}"
        super().__init__(message)


@dataclass(frozen=True)
class DockerEngine:
    """An engine reached at `host`; `root` is set when it is our private one."""

    host: str
    root: Path | None = None

    def client(self, timeout: float = 120) -> docker.DockerClient:
        return docker.DockerClient(base_url=self.host, timeout=int(timeout))

    def answers(self) -> bool:
        if self.host.startswith("unix://") and not Path(self.host.removeprefix("unix://")).exists():
            return False  # not listening yet: no client, no socket left to the collector
        try:
            with closing(self.client(timeout=3)) as client:
                return bool(client.ping())
        except (docker.errors.DockerException, requests.exceptions.RequestException, OSError):
            return False

    def version(self) -> str:
        with closing(self.client()) as client:
            return str(client.version()["Version"])

    def environment(self) -> dict[str, str]:
        """What the docker CLI and testcontainers need to use this engine (no reaper: it is pulled from a registry)."""
        return {"DOCKER_HOST": self.host, "TESTCONTAINERS_RYUK_DISABLED": "true", "DOCKER_BUILDKIT": "0"}


_LEFT_RUNNING: list[subprocess.Popen[bytes]] = []


def paths(root: Path) -> dict[str, Path]:
    return {
        "socket": root / "docker.sock",
        "data": root / "data",
        "exec": root / "exec",
        "pidfile": root / "dockerd.pid",
        "log": root / "dockerd.log",
    }


def _log_tail(root: Path, lines: int = 20) -> str:
    try:
        return "\n".join(paths(root)["log"].read_text(errors="replace").splitlines()[-lines:])
    except OSError:
        return ""


def start_engine(root: Path, timeout: float = START_TIMEOUT_SECONDS) -> DockerEngine:
    """The private engine of `root`, started unless it already answers."""
    root.mkdir(parents=True, exist_ok=True)
    where = paths(root)
    engine = DockerEngine(f"unix://{where['socket']}", root)
    if engine.answers():
        return engine
    dockerd = shutil.which("dockerd")
    if dockerd is None:
        raise EngineUnavailable("dockerd is not installed (apt-get install docker.io)")
    if os.geteuid() != 0:
        raise EngineUnavailable(f"dockerd needs root, and this runs as uid {os.geteuid()}")
    command = [
        dockerd,
        "--host",
        engine.host,
        "--data-root",
        str(where["data"]),
        "--exec-root",
        str(where["exec"]),
        "--pidfile",
        str(where["pidfile"]),
    ]
    with open(where["log"], "ab") as log:
        # Its own session: it outlives the command that started it (scripts/test).
        process = subprocess.Popen(command, stdout=log, stderr=log, stdin=subprocess.DEVNULL, start_new_session=True)
    # Left running on purpose: held here, its Popen is never collected while the daemon runs (a ResourceWarning).
    _LEFT_RUNNING.append(process)
    end = time.monotonic() + timeout
    while not engine.answers():
        if process.poll() is not None:
            raise EngineUnavailable(f"dockerd exited with {process.returncode}", _log_tail(root))
        if time.monotonic() > end:
            process.terminate()
            raise EngineUnavailable(f"dockerd did not answer within {timeout:g} s", _log_tail(root))
        time.sleep(0.2)
    return engine


def _pid(root: Path) -> int | None:
    try:
        return int(paths(root)["pidfile"].read_text().strip())
    except (OSError, ValueError):
        return None


def _alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    return True


def stop_engine(root: Path, timeout: float = STOP_TIMEOUT_SECONDS) -> None:
    """Removes every container of the private engine of `root`, then stops it by its pid."""
    engine = DockerEngine(f"unix://{paths(root)['socket']}", root)
    if engine.answers():
        with closing(engine.client()) as client:
            for container in client.containers.list(all=True):
                container.remove(force=True, v=True)
    pid = _pid(root)
    if pid is None or not _alive(pid):
        return
    os.kill(pid, signal.SIGTERM)
    end = time.monotonic() + timeout
    while _alive(pid):
        if time.monotonic() > end:
            os.kill(pid, signal.SIGKILL)
            break
        time.sleep(0.2)
    # Reap it when this process started it; otherwise its parent does.
    with suppress(ChildProcessError):
        os.waitpid(pid, os.WNOHANG)
    # dockerd leaves its network namespace mounted under the exec root: unmounted,
    # the directory can be removed.
    for mount_point in _mounts_under(root):
        subprocess.run(["umount", "--lazy", mount_point], capture_output=True, timeout=30, check=False)


def _mounts_under(root: Path) -> list[str]:
    try:
        lines = Path("/proc/self/mounts").read_text().splitlines()
    except OSError:
        return []
    points = [line.split()[1] for line in lines if len(line.split()) > 1]
    return sorted((point for point in points if point.startswith(f"{root}/")), key=len, reverse=True)


@contextmanager
def session_engine() -> Iterator[DockerEngine]:
    """The engine of DOCKER_HOST when it is set (it must answer), else a private one
    in a temporary directory, stopped and removed at the end."""
    host = os.environ.get("DOCKER_HOST")
    if host:
        engine = DockerEngine(host)
        if not engine.answers():
            raise EngineUnavailable(f"DOCKER_HOST={host} does not answer")
        yield engine
        return
    root = Path(tempfile.mkdtemp(prefix="orpycamcp-docker-"))
    saved = {key: os.environ.get(key) for key in DockerEngine("").environment()}
    try:
        engine = start_engine(root)
        os.environ.update(engine.environment())
        yield engine
    finally:
        for key, value in saved.items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        stop_engine(root)
        shutil.rmtree(root, ignore_errors=True)


def main(argv: list[str]) -> int:
    if len(argv) != 2 or argv[0] not in ("start", "stop"):
        print("usage: python -m devkit.docker_engine start|stop DIR", file=sys.stderr)
        return 2
    root = Path(argv[1]).resolve()
    if argv[0] == "stop":
        stop_engine(root)
        return 0
    try:
        engine = start_engine(root)
    except EngineUnavailable as exc:
        print(exc, file=sys.stderr)
        return 1
    print(f"DOCKER_HOST={engine.host}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
