"""End to end: the rendered mixin follows an edited contract's value sets
without a rule edited. The platform's fifth service dead-letters under
`origin_group="billing"` and its artifacts are three others than the shipped
seven (tests/different_platform.py); given the edited contract, the exporter
measures them, and one real Prometheus, loading the shipped rules (their
`for:` shortened, their thresholds untouched), fires the dead-letter age alert
for `billing` and the exhausted-artifacts alert for `firma`, and carries both
in the platform totals: the rules group by the families' label names, never
by a value of a value set."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

from devkit.process import RunningProcess, exporter_process, http_get
from tests.alerts.shorten import write_shortened_rules
from tests.different_platform import different_platform, edited_contract
from tests.e2e.stack import prometheus, query, wait_for
from tests.platform import Platform, at

pytestmark = pytest.mark.anyio

DLQ_ALERT = "OrpycamcpDlqOldestPendingTooOld"
PRESERVATION_ALERT = "OrpycamcpPreservationArtifactsExhausted"
GLOBEX_BILLING = at("2026-10-30 08:00:00")  # the oldest pending billing dead letter of a measured tenant


def firing(prom: RunningProcess, name: str) -> list[dict[str, str]]:
    """The labels of the alert `name`'s firing instances, as Prometheus holds them now."""
    response = http_get(prom.url + "/api/v1/alerts", timeout=10)
    response.raise_for_status()
    alerts: list[dict[str, Any]] = response.json()["data"]["alerts"]
    return [a["labels"] for a in alerts if a["labels"]["alertname"] == name and a["state"] == "firing"]


def values(prom: RunningProcess, expr: str) -> dict[str, float]:
    """Each series of `expr` by its labels but its name, written as Prometheus writes a selector."""
    return {
        ",".join(f'{k}="{v}"' for k, v in sorted(series["metric"].items()) if k != "__name__"): float(
            series["value"][1]
        )
        for series in query(prom, expr)
    }


async def test_a_new_origin_group_and_replaced_artifacts_alert_and_total(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    contract = tmp_path / "contract.yml"
    contract.write_text(edited_contract())
    rules = write_shortened_rules(tmp_path / "rules.yml", for_duration="2s", interval="1s", offset="10s")
    args = ["--database.url", platform.exporter_url, "--signals", "dlq,preservation"]
    args += ["--backlogs.config-file", str(contract), "--ttl", "1", "--deadline", "0.8"]
    started = time.monotonic()
    with exporter_process(args, tmp_path) as exporter, prometheus(exporter.port, None, rules, tmp_path) as prom:

        def billing_fires() -> bool:
            return any(labels["origin_group"] == "billing" for labels in firing(prom, DLQ_ALERT))

        wait_for(billing_fires, 25, lambda: (firing(prom, DLQ_ALERT), prom.log()[-2000:]))
        fired = time.monotonic() - started
        wait_for(lambda: firing(prom, PRESERVATION_ALERT) != [], 25, lambda: prom.log()[-2000:])

        # The totals wait for the databases to be known for the rules' (shortened) offset.
        billing = 'orpycamcp:dlq_pending_events:total{origin_group="billing"}'
        wait_for(lambda: query(prom, billing) != [], 25, lambda: prom.log()[-2000:])
        totalled = time.monotonic() - started
        # acme's and globex's pending billing dead letters (initech is still provisioning).
        assert values(prom, billing) == {'job="orpycamcp-exporter",origin_group="billing"': 2.0}
        oldest = 'orpycamcp:dlq_oldest_pending_timestamp_seconds:total{origin_group="billing"}'
        assert values(prom, oldest) == {'job="orpycamcp-exporter",origin_group="billing"': GLOBEX_BILLING.timestamp()}
        exhausted = values(prom, "orpycamcp:preservation_exhausted_artifacts:total > 0")
        assert exhausted == {
            'artifact="expediente",job="orpycamcp-exporter",phase="sealing"': 2.0,
            'artifact="firma",job="orpycamcp-exporter",phase="fixity"': 2.0,
            'artifact="sello",job="orpycamcp-exporter",phase="transfer"': 2.0,
        }
        assert {(labels["artifact"], labels["phase"]) for labels in firing(prom, PRESERVATION_ALERT)} == {
            ("expediente", "sealing"),
            ("firma", "fixity"),
            ("sello", "transfer"),
        }
        groups = sorted(labels["origin_group"] for labels in firing(prom, DLQ_ALERT))
        print(f"{DLQ_ALERT} firing {fired:.1f} s after start for {groups}; billing total at {totalled:.1f} s")
        print(f"{billing} = {values(prom, billing)}; exhausted totals {exhausted}")
