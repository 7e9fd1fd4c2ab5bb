"""The machine a benchmark runs on: host and PostgreSQL state for the report, the
load average, the memory of processes and of the database sessions of an application."""

from __future__ import annotations

import asyncio
import contextlib
import os
import platform
import shutil
import subprocess
from importlib.metadata import version
from pathlib import Path
from typing import Any

import asyncpg

from bench.figures import Backend


def proc_status(pid: int) -> dict[str, float]:
    """VmRSS, RssAnon... of a process, in MiB."""
    values: dict[str, float] = {}
    with contextlib.suppress(OSError):
        for line in Path(f"/proc/{pid}/status").read_text().splitlines():
            name, _, rest = line.partition(":")
            if rest.strip().endswith("kB"):
                values[name] = int(rest.split()[0]) / 1024
    return values


async def session_backends(admin_url: str, application: str) -> list[Backend]:
    connection = await asyncpg.connect(admin_url)
    try:
        rows = await connection.fetch(
            "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = current_database()",
            application,
        )
    finally:
        await connection.close()
    backends = []
    for row in rows:
        status = proc_status(row["pid"])
        backends.append(Backend(row["pid"], round(status.get("VmRSS", 0), 1), round(status.get("RssAnon", 0), 1)))
    return backends


async def session_count(admin_url: str, application: str) -> int:
    return len(await session_backends(admin_url, application))


def read_text(path: str) -> str:
    try:
        return Path(path).read_text()
    except OSError:
        return ""


def loadavg() -> str:
    return " ".join(read_text("/proc/loadavg").split()[:3])


def wrk_version() -> str:
    """wrk's banner; the scenarios without HTTP figures run without it."""
    if shutil.which("wrk") is None:
        return "wrk not installed"
    return subprocess.run(["wrk", "--version"], capture_output=True, text=True, check=False).stdout.split("\n")[0]


def host_state() -> dict[str, Any]:
    cpu = "unknown"
    for line in read_text("/proc/cpuinfo").splitlines():
        if line.startswith("model name"):
            cpu = line.split(":", 1)[1].strip()
            break
    meminfo = {}
    for line in read_text("/proc/meminfo").splitlines():
        name, _, rest = line.partition(":")
        if name in ("MemTotal", "MemAvailable"):
            meminfo[name] = f"{int(rest.split()[0]) / 2**20:.1f} GiB"
    return {
        "cpu": cpu,
        "nproc": os.cpu_count(),
        "loadavg_start": loadavg(),
        "memory": meminfo,
        "kernel": platform.release(),
        "python": platform.python_version(),
        "asyncpg": version("asyncpg"),
        "uvicorn": version("uvicorn"),
        "prometheus_client": version("prometheus_client"),
        "wrk": wrk_version(),
    }


async def machine_state(admin_url: str) -> dict[str, Any]:
    state = await asyncio.to_thread(host_state)
    connection = await asyncpg.connect(admin_url)
    try:
        pg_version = await connection.fetchval("SHOW server_version")
        locks = await connection.fetchval("SHOW max_locks_per_transaction")
        shared_buffers = await connection.fetchval("SHOW shared_buffers")
        max_connections = await connection.fetchval("SHOW max_connections")
    finally:
        await connection.close()
    state["postgresql"] = pg_version
    state["postgresql_settings"] = {
        "max_locks_per_transaction": locks,
        "shared_buffers": shared_buffers,
        "max_connections": max_connections,
    }
    return state


async def execute(admin_url: str, sql: str) -> None:
    connection = await asyncpg.connect(admin_url)
    try:
        await connection.execute(sql)
    finally:
        await connection.close()
