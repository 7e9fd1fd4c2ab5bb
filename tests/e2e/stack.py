"""A real Prometheus and Alertmanager (Debian's packages) around the exporter."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import ThreadPoolExecutor
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import httpx
import yaml

from devkit import mixin
from devkit.process import RunningProcess, http_get, http_post, running_process
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


@dataclass(frozen=True)
class Targets:
    """One static_configs entry of the exporter's job: its ports and the target labels Prometheus attaches."""

    ports: tuple[int, ...]
    labels: Mapping[str, str] = field(default_factory=dict)

    def config(self) -> dict[str, Any]:
        entry: dict[str, Any] = {"targets": [f"127.0.0.1:{port}" for port in self.ports]}
        if self.labels:
            entry["labels"] = dict(self.labels)
        return entry


def prometheus_config(
    jobs: Mapping[str, Sequence[Targets]], alertmanager_port: int | None, rules: Sequence[Path]
) -> dict[str, Any]:
    """A configuration scraping every job every second and evaluating `rules` every second."""
    document: dict[str, Any] = {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "evaluation_interval": "1s"},
        "rule_files": [str(path) for path in rules],
        "scrape_configs": [
            {"job_name": job, "static_configs": [group.config() for group in groups]} for job, groups in jobs.items()
        ],
    }
    if alertmanager_port is not None:
        document["alerting"] = alerting(alertmanager_port)
    return document


def alerting(alertmanager_port: int) -> dict[str, Any]:
    """A configuration's `alerting` section: alerts sent to the Alertmanager on this port."""
    return {"alertmanagers": [{"static_configs": [{"targets": [f"127.0.0.1:{alertmanager_port}"]}]}]}


@contextmanager
def prometheus(
    targets: int | Sequence[Targets] | Mapping[str, Sequence[Targets]],
    alertmanager_port: int | None,
    rules: Path | Sequence[Path],
    folder: Path,
    resend_delay: str = "1s",
) -> Iterator[RunningProcess]:
    """Prometheus scraping every second: one exporter port or target groups of the job
    orpycamcp-exporter, or target groups per job; reloadable (`reload_prometheus`). A firing
    alert is sent again every `resend_delay` and holds in Alertmanager for four times that."""
    if isinstance(targets, int):
        jobs: Mapping[str, Sequence[Targets]] = {"orpycamcp-exporter": [Targets((targets,))]}
    elif isinstance(targets, Mapping):
        jobs = targets
    else:
        jobs = {"orpycamcp-exporter": list(targets)}
    files = [rules] if isinstance(rules, Path) else list(rules)
    document = prometheus_config(jobs, alertmanager_port, files)
    flags = (f"--rules.alert.resend-delay={resend_delay}", "--web.enable-lifecycle")
    with prometheus_server(document, folder, *flags) as running:
        yield running


@contextmanager
def prometheus_server(
    document: Mapping[str, Any], folder: Path, *flags: str, port: int | None = None
) -> Iterator[RunningProcess]:
    """Prometheus with this configuration and these flags, its files in `folder`; on `port`
    when the configuration names it (a job scraping Prometheus itself); answered for once ready."""
    port = free_port() if port is None else port
    config = folder / "prometheus.yml"
    config.write_text(yaml.safe_dump(dict(document), sort_keys=False))
    command = [
        tool("prometheus"),
        f"--config.file={config}",
        f"--storage.tsdb.path={folder / 'prom-data'}",
        f"--web.listen-address=127.0.0.1:{port}",
        *flags,
    ]

    def ready() -> bool:
        # The port opens before the storage is: queries answer 503 until /-/ready says 200.
        try:
            return http_get(f"http://127.0.0.1:{port}/-/ready", timeout=0.5).status_code == 200
        except httpx.TransportError:
            return False

    with running_process(command, port, folder / "prometheus.log", ready) as running:
        yield running


def reload_prometheus(prom: RunningProcess, document: Mapping[str, Any], folder: Path) -> None:
    """Write a new configuration and have Prometheus load it (targets, rule files)."""
    (folder / "prometheus.yml").write_text(yaml.safe_dump(dict(document), sort_keys=False))
    response = http_post(prom.url + "/-/reload", timeout=30)
    assert response.status_code == 200, response.text


def active_alerts(am: RunningProcess) -> list[dict[str, Any]]:
    response = http_get(am.url + "/api/v2/alerts", timeout=5)
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
    response = http_get(prom.url + "/api/v1/query", params={"query": expr}, timeout=10)
    response.raise_for_status()
    body = response.json()
    assert body["status"] == "success", body
    result: list[dict[str, Any]] = body["data"]["result"]
    return result


@dataclass(frozen=True)
class Fired:
    """One alert's firing, read back from ALERTS: its labels, its first and last firing sample."""

    labels: Mapping[str, str]
    first: float
    last: float

    @property
    def alertname(self) -> str:
        return self.labels["alertname"]


def fired(prom: RunningProcess, since: float) -> list[Fired]:
    """Every alert that fired since `since`, in the order they began."""
    window = int(time.time() - since) + 2
    found = [
        Fired(series["metric"], float(series["values"][0][0]), float(series["values"][-1][0]))
        for series in query(prom, f'ALERTS{{alertstate="firing"}}[{window}s]')
    ]
    return sorted((alert for alert in found if alert.last >= since), key=lambda alert: alert.first)


def rule_group_durations(prom: RunningProcess) -> dict[str, float]:
    """prometheus_rule_group_last_duration_seconds per group, from the server's own page."""
    page = http_get(prom.url + "/metrics", timeout=10).text
    found: dict[str, float] = {}
    for line in page.splitlines():
        if line.startswith("prometheus_rule_group_last_duration_seconds{"):
            labels, value = line.rsplit(" ", 1)
            found[labels.split(";")[-1].rstrip('"}')] = float(value)
    return found


def evaluated_beside(stack: ExitStack, *configs: Mapping[str, Any]) -> Callable[[], None]:
    """The mixin evaluated for each of `configs` in a thread owned by `stack` (seconds of CPU
    each; jsonnet releases the GIL), while the caller starts its servers; the function returned
    waits for them, after which `mixin.evaluate` of these configs answers from its cache."""
    renders = stack.enter_context(ThreadPoolExecutor(max_workers=1))
    futures = [renders.submit(mixin.evaluate, config) for config in configs]

    def done() -> None:
        for future in futures:
            future.result()

    return done
