"""The exporter outside one refresh: its served process (`python -m exporter serve`,
its RSS) and its database sessions closing when it is left idle."""

from __future__ import annotations

import asyncio
import contextlib
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

from bench.figures import IdleCheck
from bench.machine import proc_status, session_count
from bench.refreshes import EXPORTER_APP, SIGNALS
from devkit.process import running_process
from devkit.servers import free_port
from exporter.loading import load
from exporter.service import build_exporter

ROOT = Path(__file__).resolve().parent.parent


@contextlib.contextmanager
def serve(command: list[str], port: int) -> Iterator[subprocess.Popen[bytes]]:
    with (
        tempfile.TemporaryDirectory() as folder,
        running_process(command, port, Path(folder) / "serve.log", cwd=ROOT) as running,
    ):
        yield running.process


def exporter_command(url: str, port: int, ttl: float) -> list[str]:
    return [
        sys.executable,
        "-m",
        "exporter",
        "serve",
        "--database.url",
        url,
        "--signals",
        SIGNALS,
        "--web.listen-address",
        f"127.0.0.1:{port}",
        "--ttl",
        str(ttl),
        "--log.level",
        "warning",
    ]


def get(port: int, gzip_ok: bool = False) -> bytes:
    request = urllib.request.Request(f"http://127.0.0.1:{port}/metrics")
    if gzip_ok:
        request.add_header("Accept-Encoding", "gzip")
    with urllib.request.urlopen(request, timeout=30) as response:  # noqa: S310 -- loopback
        body: bytes = response.read()
    return body


def exporter_rss(url: str) -> float:
    """RSS of the real exporter process after its first refresh."""
    port = free_port()
    with serve(exporter_command(url, port, 60), port) as process:
        get(port)
        return round(proc_status(process.pid).get("VmRSS", 0), 1)


async def check_idle_close(url: str, admin_url: str) -> IdleCheck:
    ttl = 2.0
    exporter = build_exporter(load({"database_url": url, "signals": SIGNALS, "ttl": ttl, "deadline": 1.5}, {}))
    try:
        await exporter.scrape()
        after_scrape = await session_count(admin_url, EXPORTER_APP)
        idle = 3 * ttl
        started = time.monotonic()
        await asyncio.sleep(idle + 1.0)
        after_idle = await session_count(admin_url, EXPORTER_APP)
        return IdleCheck(ttl, idle, after_scrape, after_idle, round(time.monotonic() - started, 1))
    finally:
        await exporter.close()
