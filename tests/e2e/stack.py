"""A real Prometheus and Alertmanager (Debian's packages) around the exporter."""

from __future__ import annotations

import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import httpx

from devkit.process import RunningProcess, running_process
from devkit.servers import free_port
from devkit.tools import tool


@contextmanager
def alertmanager(config: Path, folder: Path) -> Iterator[RunningProcess]:
    port = free_port()
    command = [
        tool("prometheus-alertmanager"),
        f"--config.file={config}",
        f"--storage.path={folder / 'am-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        "--cluster.listen-address=",
    ]
    with running_process(command, port, folder / "alertmanager.log") as running:
        yield running


@contextmanager
def prometheus(exporter_port: int, alertmanager_port: int, rules: Path, folder: Path) -> Iterator[RunningProcess]:
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
    with running_process(command, port, folder / "prometheus.log") as running:
        yield running


def active_alerts(am: RunningProcess) -> list[dict[str, Any]]:
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


def query(prom: RunningProcess, expr: str) -> list[dict[str, Any]]:
    response = httpx.get(prom.url + "/api/v1/query", params={"query": expr}, timeout=10)
    response.raise_for_status()
    body = response.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result
