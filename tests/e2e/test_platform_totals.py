"""End to end, the platform totals as a new user gets them: two real PostgreSQL
clusters (east, west: two system identifiers) holding different tenants, two
exporter replicas each, one Redis with a stuck consumer group, and one real
Prometheus loading three renders of the mixin side by side, each with its own
selector (a job) and cluster label, alerting one real Alertmanager that runs the
configuration rendered for one of them:

* `orpycamcp-exporter`: the default render; targets labelled as the Prometheus
  Operator labels them, plus a Kubernetes-wide `cluster="k8s"` it ignores;
* `shared`: `clusterLabel: cluster`, so one label value covers both databases;
* `renamed`: `clusterLabel: k8s_cluster`, west's targets unreachable, and the
  Alertmanager configuration rendered from this `_config`.

Then west's targets leave the default job's scrape configuration (the database
vanishes), and west is retired by the one documented step (retiredDatabases).
Figures are printed for the record.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from contextlib import ExitStack
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from devkit import mixin
from devkit.process import RunningProcess, exporter_process, http_get, http_post
from devkit.servers import PostgresServer, RedisServer, free_port
from registry.values import STREAM_GROUPS
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.notifications import Key, Webhook, notified, notifying, per_phase, phase_row, unresolved, wait_told
from tests.e2e.stack import (
    Targets,
    active_alerts,
    evaluated_beside,
    fired,
    prometheus,
    prometheus_config,
    query,
    reload_prometheus,
    wait_for,
)
from tests.e2e.test_federation import Phase, Truth, judge
from tests.e2e.test_ha_remote_write import EVALUATIONS, raw_samples
from tests.e2e.test_sharded import EAST, SHARDS, WEST, pending, shard_exporter_args, two_shards
from tests.platform import Platform

# The module's stack (two clusters, four exporters, three renders of the mixin,
# Prometheus, Alertmanager) is set up within its first test: minutes on a loaded machine.
pytestmark = pytest.mark.timeout(900)

RENDERS: dict[str, dict[str, Any]] = {
    "orpycamcp-exporter": {},
    "shared": {"orpycamcpSelector": 'job="shared"', "clusterLabel": "cluster"},
    "renamed": {"orpycamcpSelector": 'job="renamed"', "clusterLabel": "k8s_cluster"},
}
OPERATOR_LABELS = {
    "namespace": "monitoring",
    "service": "orpycamcp-exporter",
    "endpoint": "http",
    "container": "exporter",
}


def stuck_group(url: str) -> None:
    """One message delivered an hour ago and never acknowledged: a stuck consumer group."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        client.flushall()
        for stream, group in STREAM_GROUPS:
            client.xgroup_create(stream, group, id="$", mkstream=True)
        then = datetime.now(UTC) - timedelta(hours=1)
        client.xadd("orpycamcp.document.events", {"event": "document.signed"}, id=f"{int(then.timestamp() * 1000)}-0")
        client.xreadgroup("signature-service", "worker-1", {"orpycamcp.document.events": ">"})
    finally:
        client.close()


def render_rules(folder: Path, job: str, extra: dict[str, Any] | None = None) -> Path:
    config = {**RENDERS[job], **(extra or {})}
    full = folder / f"{job}.full.rules.yml"
    full.write_text(mixin.render(config)[Path("alerts/orpycamcp.rules.yml")], encoding="utf-8")
    # A value alert held 40 s once its series are gone (10 minutes shipped): longer than a gone
    # database's own alert takes to fire and inhibit it, as shipped.
    return write_shortened_rules(
        folder / f"{job}.rules.yml", for_duration="2s", interval="1s", offset="10s", keep_firing_for="40s", source=full
    )


@dataclass
class Stack:
    folder: Path
    prom: RunningProcess
    am: RunningProcess
    webhook: Webhook
    exporters: dict[str, list[RunningProcess]]
    jobs: dict[str, list[Targets]]
    rules: dict[str, Path]
    started: float = field(default_factory=time.time)

    def reload(self) -> None:
        document = prometheus_config(self.jobs, self.am.port, list(self.rules.values()))
        reload_prometheus(self.prom, document, self.folder)

    def told(self, recovered: bool, standing: set[Key] | None = None) -> None:
        wait_told(self.prom, self.am, self.webhook, "orpycamcp-exporter", recovered, standing)


def identity_of(exporter: RunningProcess) -> str:
    page = http_get(exporter.url + "/metrics", timeout=10).text
    (line,) = [line for line in page.splitlines() if line.startswith("orpycamcp_database_identity_info{")]
    return line.split('"')[1]


@pytest.fixture(scope="module")
def stack(pg_server: PostgresServer, redis: RedisServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[Stack]:
    folder = tmp_path_factory.mktemp("platform-totals")
    stuck_group(redis.url)
    with ExitStack() as stack:
        evaluated = evaluated_beside(stack, *RENDERS.values())
        east, west, _ = stack.enter_context(two_shards(pg_server))

        def started(platform: Platform) -> RunningProcess:
            return stack.enter_context(exporter_process(shard_exporter_args(platform, redis.url), folder))

        exporters = {"east": [started(east), started(east)], "west": [started(west), started(west)]}
        unreachable = free_port()  # nothing listens there: west's exporters, as the `renamed` job sees them
        jobs = {
            "orpycamcp-exporter": [
                Targets(
                    (exporter.port,),
                    {
                        **OPERATOR_LABELS,
                        "orpycamcp_cluster": name,
                        "cluster": "k8s",
                        "pod": f"orpycamcp-exporter-{name}-{index}",
                    },
                )
                for name, replicas in exporters.items()
                for index, exporter in enumerate(replicas)
            ],
            "shared": [Targets(tuple(e.port for r in exporters.values() for e in r), {"cluster": "k8s"})],
            "renamed": [
                Targets(tuple(e.port for e in exporters["east"]), {"k8s_cluster": "east"}),
                Targets((unreachable,), {"k8s_cluster": "west"}),
            ],
        }
        evaluated()
        rules = {job: render_rules(folder, job) for job in RENDERS}
        # The `renamed` render's Alertmanager configuration and the default one's, side by side.
        am, webhook = notifying(stack, folder, RENDERS["renamed"], RENDERS["orpycamcp-exporter"])
        # Firing alerts resent every 5 s: valid in Alertmanager for 20 s, so a loaded Prometheus
        # evaluating late does not let one resolve for a moment; an alert's end after
        # keep_firing_for reaches Alertmanager at the next resend, seconds later.
        prom = stack.enter_context(prometheus(jobs, am.port, list(rules.values()), folder, resend_delay="5s"))
        yield Stack(folder, prom, am, webhook, exporters, jobs, rules)


def values(prom: RunningProcess, expr: str, label: str) -> dict[str, float]:
    return {sample["metric"].get(label, ""): float(sample["value"][1]) for sample in query(prom, expr)}


def firing(prom: RunningProcess, alertname: str, job: str) -> list[dict[str, Any]]:
    response = http_get(prom.url + "/api/v1/alerts", timeout=10)
    response.raise_for_status()
    return [
        alert
        for alert in response.json()["data"]["alerts"]
        if alert["labels"]["alertname"] == alertname
        and alert["labels"].get("job") == job
        and alert["state"] == "firing"
    ]


def total(prom: RunningProcess, job: str) -> dict[str, float]:
    return values(prom, f'orpycamcp:dlq_pending_events:total{{job="{job}"}}', "origin_group")


def test_the_identity_on_every_page(stack: Stack) -> None:
    east = {identity_of(e) for e in stack.exporters["east"]}
    west = {identity_of(e) for e in stack.exporters["west"]}
    print(f"\nidentity on the page: east {east}, west {west}")
    assert len(east) == 1
    assert len(west) == 1
    assert east != west


def test_the_default_render_totals_over_databases(stack: Stack) -> None:
    prom = stack.prom
    job = "orpycamcp-exporter"
    wait_for(lambda: total(prom, job) == pending(SHARDS), 90, lambda: (total(prom, job), prom.log()[-2000:]))
    print(f"\n{job}: total {total(prom, job)} (east {pending((EAST,))} + west {pending((WEST,))})")
    assert values(prom, f'orpycamcp:clusters:count{{job="{job}"}}', "job") == {job: 2.0}


def test_one_cluster_label_over_two_databases_blanks_the_totals_and_says_so(stack: Stack) -> None:
    prom = stack.prom
    job = "shared"
    identities = sorted({identity_of(e) for replicas in stack.exporters.values() for e in replicas})
    expected_maxima = sorted([pending((EAST,))["signature-service"], pending((WEST,))["signature-service"]])

    def blanked_and_said() -> bool:
        # The alert, the absent total and both databases' own values, read together:
        # each settles on its own evaluation, so the wait is for all of them.
        shared = firing(prom, "OrpycamcpClusterLabelSharedByDatabases", job)
        unknown = firing(prom, "OrpycamcpPlatformTotalUnknown", job)
        per_database = query(prom, f'orpycamcp:dlq_pending_events:max{{job="{job}", origin_group="signature-service"}}')
        return (
            len(shared) == 1
            and shared[0]["labels"]["cluster"] == "k8s"
            and all(identity in shared[0]["annotations"]["description"] for identity in identities)
            and total(prom, job) == {}
            and sorted(float(s["value"][1]) for s in per_database) == expected_maxima
            and any(
                "Cluster label values over several databases: k8s." in a["annotations"]["description"] for a in unknown
            )
        )

    wait_for(
        blanked_and_said, 90, lambda: (firing(prom, "OrpycamcpClusterLabelSharedByDatabases", job), total(prom, job))
    )
    (alert,) = firing(prom, "OrpycamcpClusterLabelSharedByDatabases", job)
    print(f"\n{job}: {alert['annotations']['description']}")


def test_renders_loaded_together_never_touch_each_other(stack: Stack) -> None:
    prom = stack.prom
    response = http_get(prom.url + "/api/v1/rules", timeout=10)
    response.raise_for_status()
    for group in response.json()["data"]["groups"]:
        job = Path(group["file"]).name.removesuffix(".rules.yml")
        for rule in group["rules"]:
            for alert in rule.get("alerts", []):
                assert alert["labels"].get("job") == job, (group["file"], rule["name"], alert["labels"])
    log = prom.log()
    assert "out-of-order" not in log, log[-3000:]
    assert "duplicate sample" not in log.lower(), log[-3000:]


def test_a_renamed_cluster_label_inhibits_its_own_cluster_only(stack: Stack) -> None:
    am = stack.am
    east = identity_of(stack.exporters["east"][0])

    # An alert about an identified database is keyed on its identity (no cluster
    # label); west's targets never reported one: keyed on their cluster label.
    def states() -> dict[tuple[str, str], str]:
        return {
            (a["labels"]["alertname"], a["labels"].get("k8s_cluster", a["labels"].get("database_identity", ""))): a[
                "status"
            ]["state"]
            for a in active_alerts(am)
            if a["labels"].get("job") == "renamed"
        }

    wanted = {
        ("OrpycamcpExporterDown", "west"): "active",
        ("OrpycamcpPlatformTotalUnknown", ""): "active",
        ("OrpycamcpDlqPendingTooLong", east): "active",
        ("OrpycamcpPreservationArtifactsExhausted", east): "active",
    }
    wait_for(lambda: wanted.items() <= states().items(), 90, lambda: states())
    # Given time to inhibit, none of them is suppressed. Seen again rather than asserted at one
    # instant: a loaded Prometheus that resends late lets Alertmanager resolve one for a moment.
    time.sleep(3)
    wait_for(lambda: wanted.items() <= states().items(), 90, lambda: states())
    current = states()
    print(f"\nrenamed, in Alertmanager: {json.dumps({f'{k[0]}{{{k[1]}}}': v for k, v in sorted(current.items())})}")
    assert wanted.items() <= current.items()
    assert "suppressed" not in current.values(), current

    # A value alert of each cluster, posted as Prometheus would: west's is inhibited by
    # west's OrpycamcpExporterDown, east's is not; another job's west is not either.
    def value_alert(cluster: str, job: str = "renamed") -> dict[str, Any]:
        labels = {
            "alertname": "OrpycamcpDlqOldestPendingTooOld",
            "job": job,
            "k8s_cluster": cluster,
            "severity": "critical",
            "orpycamcp_role": "value",
            "signal": "dlq",
            "origin_group": "knowledge-service",
        }
        return {"labels": labels, "annotations": {}}

    posted = [value_alert("west"), value_alert("east"), value_alert("west", job="orpycamcp-exporter")]
    http_post(am.url + "/api/v2/alerts", json=posted, timeout=10).raise_for_status()

    def posted_states() -> dict[tuple[str, str], tuple[str, int]]:
        return {
            (a["labels"]["job"], a["labels"]["k8s_cluster"]): (a["status"]["state"], len(a["status"]["inhibitedBy"]))
            for a in active_alerts(am)
            if a["labels"]["alertname"] == "OrpycamcpDlqOldestPendingTooOld" and "k8s_cluster" in a["labels"]
        }

    expected = {
        ("renamed", "west"): ("suppressed", 1),
        ("renamed", "east"): ("active", 0),
        ("orpycamcp-exporter", "west"): ("active", 0),
    }
    wait_for(lambda: posted_states() == expected, 30, posted_states)
    print(f"inhibitions read back: {posted_states()}")


def test_one_stuck_group_notifies_once_per_bus(stack: Stack) -> None:
    job = "orpycamcp-exporter"
    wait_for(lambda: stack.webhook.about("OrpycamcpStreamPendingTooOld", job), 90, lambda: stack.webhook.notifications)
    time.sleep(5)
    notifications = stack.webhook.about("OrpycamcpStreamPendingTooOld", job)
    alerts = [
        a for n in notifications for a in n["alerts"] if a["labels"]["alertname"] == "OrpycamcpStreamPendingTooOld"
    ]
    print(f"\n{job}: OrpycamcpStreamPendingTooOld: {len(notifications)} notification(s), {len(alerts)} alert(s)")
    assert len(notifications) == 1
    assert len(alerts) == 1
    assert "orpycamcp_cluster" not in alerts[0]["labels"]


def test_a_vanished_database_blanks_the_totals_until_retired(stack: Stack) -> None:
    prom = stack.prom
    job = "orpycamcp-exporter"
    west = identity_of(stack.exporters["west"][0])
    # Only a database Prometheus has seen can vanish: run alone, this test starts
    # right after the stack, before west's identity was ever scraped.
    wait_for(lambda: total(prom, job) == pending(SHARDS), 90, lambda: (total(prom, job), prom.log()[-2000:]))
    signature = "signature-service"
    truth = Truth([(stack.started, stack.started, int(pending(SHARDS)[signature]))])
    phases = [Phase("start", stack.started)]
    stack.told(recovered=True)
    standing = unresolved(stack.webhook.alerts(job=job))
    phases.append(Phase("steady", time.time()))
    wait_for(lambda: len(raw_samples(prom, EVALUATIONS, phases[-1].began)) >= 5, 60, lambda: prom.log()[-2000:])
    before = time.time()
    phases.append(Phase("west's targets removed", before))
    stack.jobs[job] = [t for t in stack.jobs[job] if t.labels["orpycamcp_cluster"] == "east"]
    stack.reload()
    wait_for(lambda: total(prom, job) == {}, 60, lambda: total(prom, job))
    wait_for(lambda: firing(prom, "OrpycamcpDatabaseVanished", job), 60, lambda: prom.log()[-2000:])
    stack.told(recovered=False)
    (vanished,) = firing(prom, "OrpycamcpDatabaseVanished", job)
    print(f"\n{job}, west's targets removed: total {total(prom, job)}; {vanished['annotations']['description']}")
    assert vanished["labels"]["database_identity"] == west
    # Keyed on the identity; the cluster label is named in the text only.
    assert "orpycamcp_cluster" not in vanished["labels"]
    assert "(cluster west)" in vanished["annotations"]["description"]
    # Never partial, from the start to now: every sample is the sum over both databases.
    response = http_get(
        prom.url + "/api/v1/query_range",
        params={
            "query": f'orpycamcp:dlq_pending_events:total{{job="{job}"}}',
            "start": stack.started,
            "end": time.time(),
            "step": 1,
        },
        timeout=10,
    )
    wrong = [
        (series["metric"]["origin_group"], value)
        for series in response.json()["data"]["result"]
        for _, value in series["values"]
        if float(value) != pending(SHARDS)[series["metric"]["origin_group"]]
    ]
    assert wrong == []
    print(f"{job}: totals absent {time.time() - before:.0f} s after west left, never partial")

    # Retired on purpose: one line of _config, rendered again.
    stack.rules[job] = render_rules(stack.folder, job, {"retiredDatabases": [west]})
    retiring = time.time()
    phases.append(Phase("west retired", retiring))
    stack.reload()
    wait_for(lambda: total(prom, job) == pending((EAST,)), 90, lambda: total(prom, job))
    truth.changes.append((retiring, time.time(), int(pending((EAST,))[signature])))
    wait_for(lambda: not firing(prom, "OrpycamcpDatabaseVanished", job), 60, lambda: prom.log()[-2000:])
    # West's value alerts, held (keep_firing_for) and inhibited while it was gone, end now.
    stack.told(recovered=True, standing={key for key in standing if ("database_identity", west) not in key})
    print(f"{job}: west retired: total {total(prom, job)}")

    judge(prom, stack.started, phases, truth)
    bounds = [(phase.name, phase.began) for phase in phases]
    raised = per_phase([(a.first, a.alertname) for a in fired(prom, stack.started) if a.labels["job"] == job], bounds)
    sent = per_phase(notified(stack.webhook, job), bounds)
    print(f"{job}: evaluations since the start, per phase ({signature} against the SQL count):")
    for phase in phases:
        verdicts = f"exact {phase.exact}, absent {phase.absent}, wrong {len(phase.wrong)}"
        print(phase_row(phase.name, phase.began - stack.started, verdicts, raised[phase.name], sent[phase.name]))
    assert [phase.wrong for phase in phases] == [[] for _ in phases]
    # What the receiver got: nothing while nothing changed; the database gone, its own alert
    # and no "resolved" for the values it still has (held, inhibited).
    assert sent["steady"] == {}, sent
    removed = sent["west's targets removed"]
    assert removed["OrpycamcpDatabaseVanished firing"] == 1, removed
    assert not [what for what in removed if what.endswith(" resolved")], removed
    assert sent["west retired"]["OrpycamcpDatabaseVanished resolved"] == 1, sent
