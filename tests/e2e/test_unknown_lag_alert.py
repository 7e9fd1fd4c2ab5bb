"""End to end: a consumer group whose undelivered count Redis cannot give, in a real
Prometheus with the shipped rules (shortened) and a real Alertmanager.

A group with no consumer lags 6 entries on a real Redis; an entry ahead of it is
deleted (`XDEL`), and Redis answers its `lag` as nil from then on: the exporter
withholds the count (`orpycamcp_stream_undelivered_unknown` 1, one group counted
`not_counted` by `orpycamcp_stream_undelivered_unknown_groups`),
and OrpycamcpStreamUndeliveredUnknown goes pending, then firing. Moved to the
stream's end (`XGROUP SETID $`), the group's lag is 0 again: the alert resolves.
The timeline is Prometheus's own (the `ALERTS` series it wrote at each
evaluation, and the alert's `activeAt`), printed as a report."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import datetime
from pathlib import Path
from typing import Any

import pytest
from redis import Redis

from devkit.process import RunningProcess, exporter_process, http_get
from devkit.servers import RedisServer
from registry.values import STREAM_GROUPS
from tests.alerts.shorten import parse_duration, write_shortened_rules
from tests.e2e.stack import active_alerts, alertmanager, prometheus, query, wait_for

REPO = Path(__file__).resolve().parents[2]
ALERT = "OrpycamcpStreamUndeliveredUnknown"
STREAM, GROUP = "orpycamcp.workflow.events", "notification-service"  # the one group of its stream
FOR = "2s"
KEEP_FIRING_FOR = "2s"
LAG = f'{{stream="{STREAM}",group="{GROUP}"}}'


@pytest.fixture
def stack(redis: RedisServer, tmp_path: Path) -> Iterator[tuple[Redis, RunningProcess, RunningProcess]]:
    client = Redis.from_url(redis.url, decode_responses=True)
    client.flushall()
    for stream, group in STREAM_GROUPS:
        client.xgroup_create(stream, group, id="$", mkstream=True)
    for index in range(6):
        client.xadd(STREAM, {"event": f"workflow.step.{index}"})
    rules = write_shortened_rules(
        tmp_path / "rules.yml", for_duration=FOR, interval="1s", offset="10s", keep_firing_for=KEEP_FIRING_FOR
    )
    args = ["--redis.url", redis.url, "--ttl", "1", "--deadline", "0.8"]
    try:
        with (
            exporter_process(args, tmp_path) as exporter,
            alertmanager(REPO / "alerts" / "alertmanager.example.yml", tmp_path) as am,
            prometheus(exporter.port, am.port, rules, tmp_path) as prom,
        ):
            yield client, prom, am
    finally:
        client.close()


def rule_alerts(prom: RunningProcess) -> list[dict[str, Any]]:
    """The rule's alerts as Prometheus holds them now (pending or firing)."""
    response = http_get(prom.url + "/api/v1/alerts", timeout=10)
    response.raise_for_status()
    return [alert for alert in response.json()["data"]["alerts"] if alert["labels"]["alertname"] == ALERT]


def received(am: RunningProcess) -> list[dict[str, Any]]:
    return [alert for alert in active_alerts(am) if alert["labels"]["alertname"] == ALERT]


def series_times(prom: RunningProcess, selector: str) -> dict[str, list[float]]:
    """The timestamps of every sample Prometheus holds for `selector` over the last 10 minutes,
    by the series' alertstate (or "value" when it has none)."""
    response = http_get(prom.url + "/api/v1/query", params={"query": f"{selector}[10m]"}, timeout=10)
    response.raise_for_status()
    times: dict[str, list[float]] = {}
    for series in response.json()["data"]["result"]:
        state = series["metric"].get("alertstate", "value")
        times.setdefault(state, []).extend(float(stamp) for stamp, _ in series["values"])
    return {state: sorted(stamps) for state, stamps in times.items()}


def test_an_unknown_lag_pends_fires_and_resolves_when_known_again(
    stack: tuple[Redis, RunningProcess, RunningProcess],
) -> None:
    client, prom, am = stack

    # Known first: 6 entries undelivered, nobody reading (OrpycamcpStreamNotConsumed's case, not this one).
    def known() -> bool:
        return query(prom, f"orpycamcp:stream_undelivered_entries:max{LAG}") != [] and rule_alerts(prom) == []

    wait_for(known, 60, lambda: (rule_alerts(prom), prom.log()))
    assert query(prom, f"orpycamcp_stream_undelivered_entries{LAG}")[0]["value"][1] == "6"
    assert query(prom, f"orpycamcp_stream_consumers{LAG}")[0]["value"][1] == "0"

    # An entry ahead of the group deleted: Redis's lag is nil.
    deleted_at = datetime.now().timestamp()
    assert client.xdel(STREAM, client.xinfo_stream(STREAM)["last-generated-id"]) == 1
    (group,) = client.xinfo_groups(STREAM)
    assert group["lag"] is None, group

    wait_for(lambda: [a["state"] for a in rule_alerts(prom)] == ["firing"], 60, lambda: (rule_alerts(prom), prom.log()))
    (firing,) = rule_alerts(prom)
    assert (firing["labels"]["stream"], firing["labels"]["group"]) == (STREAM, GROUP)
    assert "has no count of the entries not yet delivered" in firing["annotations"]["description"]
    assert query(prom, f"orpycamcp_stream_undelivered_entries{LAG}") == []
    assert query(prom, f"orpycamcp_stream_undelivered_unknown{LAG}")[0]["value"][1] == "1"
    assert query(prom, 'orpycamcp_stream_undelivered_unknown_groups{reason="not_counted"}')[0]["value"][1] == "1"
    wait_for(lambda: [a["status"]["state"] for a in received(am)] == ["active"], 60, lambda: active_alerts(am))
    active_at = datetime.fromisoformat(firing["activeAt"]).timestamp()

    # The group moved to the stream's end: its lag is 0, known again.
    known_at = datetime.now().timestamp()
    client.xgroup_setid(STREAM, GROUP, "$")
    (group,) = client.xinfo_groups(STREAM)
    assert group["lag"] == 0, group

    wait_for(lambda: rule_alerts(prom) == [] and received(am) == [], 60, lambda: (rule_alerts(prom), active_alerts(am)))
    assert query(prom, f"orpycamcp_stream_undelivered_entries{LAG}")[0]["value"][1] == "0"
    assert query(prom, f"orpycamcp_stream_undelivered_unknown{LAG}") == []
    assert query(prom, 'orpycamcp_stream_undelivered_unknown_groups{reason="not_counted"}')[0]["value"][1] == "0"

    # The timeline, as Prometheus wrote it.
    alerts = series_times(prom, f'ALERTS{{alertname="{ALERT}",stream="{STREAM}",group="{GROUP}"}}')
    unknown_times = series_times(prom, f"orpycamcp_stream_undelivered_unknown{LAG}")["value"]
    pending, fired = alerts["pending"], alerts["firing"]
    report = [
        f"{ALERT} timeline (seconds after the XDEL; rules every 1 s, for: {FOR}, keep_firing_for: {KEEP_FIRING_FOR}):",
        f"  lag unknown on the page    {unknown_times[0] - deleted_at:6.2f} to {unknown_times[-1] - deleted_at:6.2f}",
        f"  pending (activeAt)         {active_at - deleted_at:6.2f} to {pending[-1] - deleted_at:6.2f}",
        f"  firing                     {fired[0] - deleted_at:6.2f} to {fired[-1] - deleted_at:6.2f}",
        f"  lag known again (SETID $)  {known_at - deleted_at:6.2f}",
    ]
    print("\n".join(report))
    assert deleted_at <= unknown_times[0] <= pending[0]
    assert active_at == pytest.approx(pending[0], abs=0.001)
    assert pending[-1] < fired[0]
    assert fired[0] - pending[0] >= parse_duration(FOR)
    # Firing when the count came back, until an evaluation saw it, and keep_firing_for after that.
    assert known_at < fired[-1]
