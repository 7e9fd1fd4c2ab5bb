"""End to end, an HA pair of real Prometheus servers (external label `replica`)
scraping one exporter and remote-writing into a central Prometheus
(`--web.enable-remote-write-receiver`) that evaluates the shipped rules
(shortened). One server of the pair is SIGKILLed: remote write sends no
staleness marker, so its last samples stay in the central server's lookback.
Then dead letters are resolved in the database: the central total follows the
database (the surviving server's newer data), never the dead server's last,
larger value.

Every evaluation of the central server is compared with the SQL truth: before
the change only the old count is right, after the central server first showed
the new count only the new one (in between, either); an evaluation without a
total is absent, never wrong. No bound of time decides a verdict.
"""

from __future__ import annotations

import asyncio
import math
import time
from contextlib import ExitStack
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

from devkit.mixin import evaluate, rules_yaml
from devkit.process import RunningProcess, exporter_process
from devkit.servers import PostgresServer
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.notifications import notified, notifying, per_phase, phase_row, unresolved, wait_told
from tests.e2e.stack import (
    alerting,
    evaluated_beside,
    fired,
    prometheus_server,
    query,
    rule_group_durations,
    wait_for,
)
from tests.platform import Platform, create_platform

JOB = "orpycamcp-exporter"
TOTAL = 'orpycamcp:dlq_pending_events:total{job="orpycamcp-exporter", origin_group="signature-service"}'
# Remote write delivers within about a second here (batch_send_deadline): samples
# count while scraped within 3 x 2 s.
SAMPLES_EVERY = "2s"
EVALUATIONS = f'orpycamcp:clusters:count{{job="{JOB}"}}'
# A firing alert sent again every 5 s (valid in Alertmanager for 20 s): an alert's end after
# keep_firing_for reaches Alertmanager at the next resend, seconds later, not a minute.
RESEND = "--rules.alert.resend-delay=5s"
PENDING_BEFORE = 5
RESOLVED = 2


def folder(tmp_path: Path, name: str) -> Path:
    made = tmp_path / name
    made.mkdir()
    return made


def ha_server(replica: str, exporter_port: int, central: RunningProcess) -> dict[str, Any]:
    return {
        "global": {"scrape_interval": "1s", "scrape_timeout": "1s", "external_labels": {"replica": replica}},
        "scrape_configs": [
            {
                "job_name": JOB,
                "static_configs": [
                    {"targets": [f"127.0.0.1:{exporter_port}"], "labels": {"orpycamcp_cluster": "east"}}
                ],
            }
        ],
        "remote_write": [
            {
                "url": central.url + "/api/v1/write",
                "queue_config": {"batch_send_deadline": "1s", "min_backoff": "100ms"},
            }
        ],
    }


def rules_for_remote_write(folder: Path) -> Path:
    """The shipped rules rendered with the interval samples reach the central server at, then shortened."""
    rendered = folder / "rendered.yml"
    rendered.write_text(rules_yaml(evaluate({"scrapeInterval": SAMPLES_EVERY})))
    return write_shortened_rules(folder / "rules.yml", for_duration="2s", interval="1s", offset="10s", source=rendered)


async def seeded(pg_server: PostgresServer, pending: int = PENDING_BEFORE) -> Platform:
    """A platform database with `pending` dead letters of signature-service in tenant acme."""
    platform = await create_platform(pg_server)
    await platform.add_tenant("acme")
    created = datetime.now(UTC) - timedelta(hours=1)
    for number in range(pending):
        await platform.add_dead_letter("acme", f"e{number}", "signature-service", "pending", created)
    return platform


async def sql_pending(platform: Platform) -> int:
    """The truth: pending dead letters of signature-service, as a superuser reads them."""
    rows = await platform.fetch(
        "SELECT count(*) AS n FROM tenant_acme.evento_dead_letter"
        " WHERE status = 'pending' AND origin_group = 'signature-service'"
    )
    return int(rows[0]["n"])


def raw_samples(prom: RunningProcess, expr: str, since: float) -> dict[float, float]:
    """Every sample a recording rule wrote since `since`: one per evaluation, by timestamp."""
    window = math.ceil(time.time() - since) + 1
    found: dict[float, float] = {}
    for series in query(prom, f"{expr}[{window}s]"):
        found.update({float(at): float(value) for at, value in series["values"] if float(at) >= since})
    return found


def total_now(prom: RunningProcess) -> float | None:
    result = query(prom, TOTAL)
    return float(result[0]["value"][1]) if result else None


@dataclass
class Verdicts:
    exact: int = 0
    absent: int = 0
    warming: int = 0  # of the absent: before the first total (the rules' warm-up)
    wrong: list[str] | None = None


def judge(
    evaluations: list[float], totals: dict[float, float], changed: tuple[float, float], settled: float
) -> Verdicts:
    """Each evaluation against the truth: PENDING_BEFORE until the change began, the new
    count once the central server first showed it, either in between."""
    before, after = float(PENDING_BEFORE), float(PENDING_BEFORE - RESOLVED)
    verdicts = Verdicts(wrong=[])
    assert verdicts.wrong is not None
    for at in evaluations:
        value = totals.get(at)
        if value is None:
            verdicts.absent += 1
            verdicts.warming += verdicts.exact == 0
            continue
        right = {before} if at < changed[0] else {after} if at >= settled else {before, after}
        if value in right:
            verdicts.exact += 1
        else:
            verdicts.wrong.append(f"{at:.0f}: {value:g} (right: {sorted(right)})")
    return verdicts


def test_a_killed_ha_server_never_puts_its_last_values_in_the_central_total(
    pg_server: PostgresServer, tmp_path: Path
) -> None:
    with ExitStack() as stack:
        evaluated = evaluated_beside(stack, {"scrapeInterval": SAMPLES_EVERY})
        platform = asyncio.run(seeded(pg_server))
        exporter = stack.enter_context(
            exporter_process(["--database.url", platform.exporter_url, "--ttl", "1", "--deadline", "0.8"], tmp_path)
        )
        evaluated()
        rules = rules_for_remote_write(tmp_path)
        am, webhook = notifying(stack, folder(tmp_path, "alertmanager"), {"scrapeInterval": SAMPLES_EVERY})
        central = stack.enter_context(
            prometheus_server(
                {"global": {"evaluation_interval": "1s"}, "rule_files": [str(rules)], "alerting": alerting(am.port)},
                folder(tmp_path, "central"),
                "--web.enable-remote-write-receiver",
                RESEND,
            )
        )
        pair = [
            stack.enter_context(
                prometheus_server(ha_server(replica, exporter.port, central), folder(tmp_path, f"replica-{replica}"))
            )
            for replica in ("0", "1")
        ]
        started = time.time()

        # 1. Both servers write; the central total is the database's count.
        wait_for(lambda: total_now(central) == PENDING_BEFORE, 90, lambda: (total_now(central), central.log()[-2000:]))
        assert {s["metric"]["replica"] for s in query(central, f'up{{job="{JOB}"}}')} == {"0", "1"}
        wait_told(central, am, webhook, JOB, recovered=True)
        standing = unresolved(webhook.alerts(job=JOB))
        steady = time.time()
        wait_for(lambda: len(raw_samples(central, EVALUATIONS, steady)) >= 5, 60, central.log)

        # 2. Server 0 SIGKILLed; its last samples (PENDING_BEFORE) stay in the central lookback.
        killed = time.time()
        pair[0].process.kill()
        pair[0].process.wait()
        changing = time.time()
        asyncio.run(
            platform.execute(
                "UPDATE tenant_acme.evento_dead_letter SET status = 'resolved'"
                f" WHERE event_id IN ({', '.join(repr(f'e{n}') for n in range(RESOLVED))})"
            )
        )
        changed = time.time()
        assert asyncio.run(sql_pending(platform)) == PENDING_BEFORE - RESOLVED

        # 3. The central total follows the database through the surviving server.
        wait_for(
            lambda: total_now(central) == PENDING_BEFORE - RESOLVED,
            60,
            lambda: (total_now(central), central.log()[-2000:]),
        )
        settled = min(at for at, v in raw_samples(central, TOTAL, changed).items() if v == PENDING_BEFORE - RESOLVED)

        # 4. Twenty more evaluations while the dead server's samples are still in the lookback (5 minutes).
        def evaluations_since_settled() -> int:
            return len(raw_samples(central, EVALUATIONS, settled))

        wait_for(lambda: evaluations_since_settled() >= 20, 60, evaluations_since_settled)
        wait_told(central, am, webhook, JOB, recovered=True, standing=standing)
        evaluations = sorted(raw_samples(central, EVALUATIONS, started))
        totals = raw_samples(central, TOTAL, started)
        phases = [("start", started), ("steady", steady), ("HA server killed", killed)]
        raised = per_phase([(alert.first, alert.alertname) for alert in fired(central, started)], phases)
        sent = per_phase(notified(webhook, JOB), phases)
        print("\ncentral evaluations, per phase:")
        ends = [began for _, began in phases[1:]] + [float("inf")]
        for (name, began), end in zip(phases, ends, strict=True):
            among = [at for at in evaluations if began <= at < end]
            verdicts = judge(among, totals, (changing, changed), settled)
            counted = (
                f"exact {verdicts.exact}, absent {verdicts.absent} (before the first total: {verdicts.warming}),"
                f" wrong {len(verdicts.wrong or [])}"
            )
            print(phase_row(name, began - started, counted, raised[name], sent[name]))
        verdicts = judge(evaluations, totals, (changing, changed), settled)
        print(
            f"  new count shown {settled - changed:.1f} s after the change; rule groups' last evaluation: "
            + ", ".join(f"{group} {seconds * 1000:.1f} ms" for group, seconds in rule_group_durations(central).items())
        )
        assert verdicts.wrong == []
        assert verdicts.exact >= 20
        # The receiver: nothing while nothing changed, nothing about the dead server.
        assert sent["steady"] == {}, sent
        assert sent["HA server killed"] == {}, sent
