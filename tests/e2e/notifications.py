"""What a receiver gets from a real Alertmanager: a webhook served by the test
process, counted per phase of a run (firing and resolved, by alertname).

The Alertmanager configuration is the one the mixin renders for the run's
`_config` (its inhibitions included), with every alert in a group of its own
(`group_by: ['...']`: one notification is one alert's change), waits of a
second, every receiver on the webhook and resolved notifications sent too.
"""

from __future__ import annotations

import bisect
import json
import threading
import time
from collections import Counter
from collections.abc import Mapping, Sequence
from contextlib import ExitStack
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import yaml

from devkit.mixin import evaluate
from devkit.process import RunningProcess
from devkit.servers import free_port
from tests.e2e.stack import active_alerts, alertmanager, query, wait_for


@dataclass(frozen=True)
class Notified:
    """One alert in one notification, as the receiver got it."""

    received: float
    alertname: str
    status: str  # firing | resolved
    labels: Mapping[str, str]


class Webhook:
    """A receiver for every Alertmanager notification, kept with the time it arrived."""

    def __init__(self) -> None:
        self.notifications: list[dict[str, Any]] = []
        self.received: list[float] = []
        self.lock = lock = threading.Lock()
        notifications, received = self.notifications, self.received

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers["Content-Length"])
                payload = json.loads(self.rfile.read(length))
                with lock:
                    received.append(time.time())
                    notifications.append(payload)
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: object) -> None:
                return

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}"
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def about(self, alertname: str, job: str) -> list[dict[str, Any]]:
        return [
            n
            for n in self.notifications
            if any(a["labels"]["alertname"] == alertname and a["labels"].get("job") == job for a in n["alerts"])
        ]

    def alerts(self, **labels: str) -> list[Notified]:
        """Every alert a Prometheus rule raised (it names its generatorURL; one posted by hand does
        not) in every notification so far, whose labels include `labels`."""
        with self.lock:
            arrived = list(zip(self.received, self.notifications, strict=True))
        return [
            Notified(at, alert["labels"]["alertname"], alert["status"], alert["labels"])
            for at, payload in arrived
            for alert in payload["alerts"]
            if alert.get("generatorURL") and all(alert["labels"].get(k) == v for k, v in labels.items())
        ]

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def alertmanager_config(folder: Path, webhook: Webhook, *configs: Mapping[str, Any]) -> Path:
    """The Alertmanager configuration the mixin renders for each of `configs` (the default
    `_config` if none), in one file as two deployments share an Alertmanager (their routes and
    inhibitions side by side), written to `folder`: one group per alert, waits of a second,
    every receiver on `webhook`, resolved notifications sent too."""
    first, *others = [evaluate(config).alertmanager for config in configs or ({},)]
    for other in others:
        first["route"]["routes"] += other["route"]["routes"]
        first["inhibit_rules"] += [rule for rule in other["inhibit_rules"] if rule not in first["inhibit_rules"]]

    def short(route: dict[str, Any]) -> None:
        route.update(group_by=["..."], group_wait="1s", group_interval="1s")
        for child in route.get("routes", []):
            short(child)

    short(first["route"])
    for receiver in first["receivers"]:
        for hook in receiver["webhook_configs"]:
            hook.update(url=webhook.url + "/" + receiver["name"], send_resolved=True)
    path = folder / "alertmanager.yml"
    path.write_text(yaml.safe_dump(first, sort_keys=False), encoding="utf-8")
    return path


def notifying(stack: ExitStack, folder: Path, *configs: Mapping[str, Any]) -> tuple[RunningProcess, Webhook]:
    """A real Alertmanager (`alertmanager_config` of `configs`, its files in `folder`) and the
    webhook it notifies, both ended by `stack`."""
    webhook = Webhook()
    stack.callback(webhook.close)
    am = stack.enter_context(alertmanager(alertmanager_config(folder, webhook, *configs), folder))
    return am, webhook


def per_phase(events: Sequence[tuple[float, str]], phases: Sequence[tuple[str, float]]) -> dict[str, Counter[str]]:
    """Events (time, what) counted per phase (name, began): e.g. `notified` or the alerts fired."""
    starts = [began for _, began in phases]
    counts: dict[str, Counter[str]] = {name: Counter() for name, _ in phases}
    for at, what in events:
        index = bisect.bisect_right(starts, at) - 1
        if index >= 0:
            counts[phases[index][0]][what] += 1
    return counts


def notified(webhook: Webhook, job: str) -> list[tuple[float, str]]:
    """Each alert of `job` in each notification: (received, "<alertname> <status>")."""
    return [(alert.received, f"{alert.alertname} {alert.status}") for alert in webhook.alerts(job=job)]


def described(counts: Counter[str]) -> str:
    """ "OrpycamcpExporterDown firing 1, ..." or "none"."""
    return ", ".join(f"{key} {count}" for key, count in sorted(counts.items())) or "none"


Key = frozenset[tuple[str, str]]


def alert_key(labels: Mapping[str, str]) -> Key:
    """An alert's identity, as Alertmanager keys it: its labels (ALERTS' own two left out)."""
    return frozenset((name, value) for name, value in labels.items() if name not in ("__name__", "alertstate"))


def unresolved(notified: Sequence[Notified]) -> set[Key]:
    """The alerts whose last notification said firing."""
    last: dict[Key, str] = {}
    for alert in sorted(notified, key=lambda alert: alert.received):
        last[alert_key(alert.labels)] = alert.status
    return {key for key, status in last.items() if status == "firing"}


def unnotified(
    prom: RunningProcess,
    am: RunningProcess,
    webhook: Webhook,
    job: str,
    resolved_too: bool,
    standing: set[Key] | None = None,
) -> list[str]:
    """What the receiver has not been told yet about the alerts of `job`: every alert firing in
    Prometheus has been notified firing (or is inhibited); with `resolved_too`, no alert is
    pending (about to fire) and every alert notified firing that Prometheus no longer fires
    has been notified resolved; with `standing`, every other alert notified has been resolved."""
    alerts = query(prom, f'ALERTS{{job="{job}"}}')
    firing = {alert_key(series["metric"]) for series in alerts if series["metric"]["alertstate"] == "firing"}
    pending = {alert_key(series["metric"]) for series in alerts if series["metric"]["alertstate"] == "pending"}
    suppressed = {alert_key(alert["labels"]) for alert in active_alerts(am) if alert["status"]["state"] == "suppressed"}
    told = unresolved(webhook.alerts(job=job))
    missing = [("firing", key) for key in firing - told - suppressed]
    if resolved_too:
        missing += [("resolved", key) for key in told - firing - suppressed]
        missing += [("pending", key) for key in pending]
    if standing is not None:
        missing += [("not yet resolved", key) for key in told - standing]
    return sorted(f"{status} {dict(key)['alertname']} {sorted(key)}" for status, key in missing)


def wait_told(
    prom: RunningProcess,
    am: RunningProcess,
    webhook: Webhook,
    job: str,
    recovered: bool,
    standing: set[Key] | None = None,
) -> None:
    """Wait until the receiver was told of every alert of `job` firing now (and, once
    `recovered`, of every one resolved; back to the `standing` alerts alone, if given): each
    notification then falls in its own phase."""
    wait_for(
        lambda: not unnotified(prom, am, webhook, job, recovered, standing),
        90,
        lambda: unnotified(prom, am, webhook, job, recovered, standing),
    )


def phase_row(name: str, since: float, verdicts: str, raised: Counter[str], sent: Counter[str]) -> str:
    """One line of a run's phase table: its evaluations' verdicts, the alerts fired, the notifications."""
    return f"  {name} (from {since:.0f} s): {verdicts}; fired: {described(raised)}; notified: {described(sent)}"
