"""A real Prometheus and Alertmanager (Debian's packages) around the exporter."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator, Sequence
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from exporter.localservers import free_port, wait_for_port
from tests.tools import tool


@dataclass
class Service:
    name: str
    process: subprocess.Popen[bytes]
    port: int
    log_path: Path

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")[-3000:]


@contextmanager
def service(name: str, command: Sequence[str], port: int, folder: Path) -> Iterator[Service]:
    log_path = folder / f"{name}.log"
    with open(log_path, "wb") as log:
        process = subprocess.Popen(list(command), stdout=log, stderr=log)
    running = Service(name, process, port, log_path)
    try:
        if not wait_for_port(port, 30, process):
            raise AssertionError(f"{name} did not start: {running.log()}")
        yield running
    finally:
        process.terminate()
        try:
            process.wait(timeout=15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()


@contextmanager
def alertmanager(config: Path, folder: Path) -> Iterator[Service]:
    port = free_port()
    command = [
        tool("prometheus-alertmanager"),
        f"--config.file={config}",
        f"--storage.path={folder / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with service("alertmanager", command, port, folder) as running:
        yield running


@contextmanager
def prometheus(exporter_port: int, alertmanager_port: int, rules: Path, folder: Path) -> Iterator[Service]:
    port = free_port()
    config = folder / "prometheus.yml"
    config.write_text(
        "global:\n  scrape_interval: 1s\n  scrape_timeout: 1s\n  evaluation_interval: 1s\n"
        f"rule_files:\n  - {rules}\n"
        "alerting:\n  alertmanagers:\n    - static_configs:\n"
        f"        - targets: ['127.0.0.1:{alertmanager_port}']\n"
        "scrape_configs:\n  - job_name: orpycamcp-exporter\n    static_configs:\n"
        f"      - targets: ['127.0.0.1:{exporter_port}']\n"
    )
    command = [
        tool("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'prom-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--rules.alert.resend-delay=1s",
    ]
    with service("prometheus", command, port, folder) as running:
        yield running


def active_alerts(am: Service) -> list[dict[str, Any]]:
    response = httpx.get(am.url + "/api/v2/alerts", timeout=5)
    response.raise_for_status()
    alerts: list[dict[str, Any]] = response.json()
    return alerts


def wait_for(condition: Any, timeout: float, describe: Any) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if condition():
            return
        time.sleep(0.5)
    raise AssertionError(f"timed out after {timeout:g}s: {describe()}")


def query(prom: Service, expr: str) -> list[dict[str, Any]]:
    response = httpx.get(prom.url + "/api/v1/query", params={"query": expr}, timeout=10)
    response.raise_for_status()
    body = response.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result
