"""The exporter as a real process (the console script under uvicorn)."""

from __future__ import annotations

import os
import subprocess
import sys
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import httpx

from exporter.localservers import free_port


@dataclass
class ExporterProcess:
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")


@contextmanager
def exporter_process(
    args: Sequence[str],
    tmp_path: Path,
    env: dict[str, str] | None = None,
    scheme: str = "http",
    ready_kwargs: dict[str, object] | None = None,
) -> Iterator[ExporterProcess]:
    port = free_port()
    log_path = tmp_path / f"exporter-{port}.log"
    full_env = {k: v for k, v in os.environ.items() if not k.startswith(("DATABASE_URL", "REDIS_URL", "ORPYCAMCP_"))}
    full_env.update(env or {})
    with open(log_path, "wb") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "exporter", "serve", "--web.listen-address", f"127.0.0.1:{port}", *args],
            stdout=log,
            stderr=log,
            env=full_env,
        )
    running = ExporterProcess(process, port, log_path)
    try:
        deadline = time.monotonic() + 20
        while True:
            if process.poll() is not None:
                raise AssertionError(f"exporter exited with {process.returncode}: {running.log()}")
            try:
                httpx.get(f"{scheme}://127.0.0.1:{port}/-/healthy", timeout=0.5, **(ready_kwargs or {}))  # type: ignore[arg-type]
                break
            except httpx.TransportError:
                if time.monotonic() > deadline:
                    raise AssertionError(f"exporter did not start: {running.log()}") from None
                time.sleep(0.1)
        yield running
    finally:
        if process.poll() is None:
            process.terminate()
            try:
                process.wait(timeout=10)
            except subprocess.TimeoutExpired:
                process.kill()
                process.wait()
