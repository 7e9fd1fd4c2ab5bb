"""Real processes for the tests: the exporter (the console script under
uvicorn), and any server a test starts on a port of its own."""

from __future__ import annotations

import os
import ssl
import subprocess
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from exporter.tools.throwaway import free_port, wait_for_port

# The tests' requests are plain HTTP on the loopback, yet httpx builds a TLS context (the CA
# bundle loaded) for each request made without one: 55-60 ms of CPU a request, most of a
# test's own CPU when it polls a server every tenth or half of a second. One context, built
# once, is handed to every request that brings none: 2-3 ms a request.
_TLS = ssl.create_default_context()


def http_get(url: str, **options: Any) -> httpx.Response:
    """httpx.get, with the shared TLS context unless `options` give one."""
    return httpx.get(url, **{"verify": _TLS, **options})


def http_post(url: str, **options: Any) -> httpx.Response:
    """httpx.post, with the shared TLS context unless `options` give one."""
    return httpx.post(url, **{"verify": _TLS, **options})


@dataclass
class RunningProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def running_process(
    command: Sequence[str],
    port: int,
    log_path: Path,
    ready: Callable[[], bool] | None = None,
    env: dict[str, str] | None = None,
    timeout: float = 30,
    cwd: Path | None = None,
) -> Iterator[RunningProcess]:
    """Start `command`, wait until `ready()` (default: the port accepts), stop it at the end."""
    with open(log_path, "wb") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=log, env=env, cwd=cwd)
    running = RunningProcess(process, port, log_path)
    try:
        deadline = time.monotonic() + timeout
        while not (ready() if ready is not None else wait_for_port(port, 0.2, process)):
            if process.poll() is not None:
                raise AssertionError(f"{command[0]} exited with {process.returncode}: {running.log()[-3000:]}")
            if time.monotonic() > deadline:
                raise AssertionError(f"{command[0]} did not start: {running.log()[-3000:]}")
            time.sleep(0.1)
        yield running
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=15)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()


@contextmanager
def exporter_process(
    args: Sequence[str],
    tmp_path: Path,
    env: dict[str, str] | None = None,
    scheme: str = "http",
    ready_kwargs: dict[str, object] | None = None,
) -> Iterator[RunningProcess]:
    """`python -m exporter serve` on a free port, ready when /-/healthy answers."""
    port = free_port()
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "ORPYCAMCP_"))}
    full_env.update(env or {})

    def healthy() -> bool:
        try:
            http_get(f"{scheme}://127.0.0.1:{port}/-/healthy", timeout=0.5, **(ready_kwargs or {}))
        except httpx.TransportError:
            return False
        return True

    command = [sys.executable, "-m", "exporter", "serve", "--web.listen-address", f"127.0.0.1:{port}", *args]
    with running_process(command, port, tmp_path / f"exporter-{port}.log", healthy, full_env, timeout=20) as running:
        yield running
