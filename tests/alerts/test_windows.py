"""Every window an alert, a panel or the runbook states follows from the `_config`
value it derives from (the platform's cadences, ADR-021), and the audit-chain
texts say what ADR-041 says they are: monitoring, not proof."""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

import pytest

from devkit import mixin
from devkit.tools import tool
from tests.alerts.shorten import REPO_ROOT, parse_duration

RUNBOOK = REPO_ROOT / "docs" / "runbook.md"
OTHER_CADENCES = {
    "reclaimInterval": "20s",
    "reclaimMinIdle": "45s",
    "maxDeliveries": 3,
    "streamPendingAge": "15m",
    "deadletterTrimHorizon": "14d",
    "deadletterTrimInterval": "12h",
}


def words(seconds: int) -> str:
    """How the texts say a number of seconds."""
    for size, unit in ((86_400, "day"), (3600, "hour")):
        if seconds >= size and seconds % size == 0:
            count = seconds // size
            return f"{count} {unit}{'' if count == 1 else 's'}"
    if seconds < 120 or seconds % 30:
        return f"{seconds} seconds"
    if seconds % 60 == 0:
        return f"{seconds // 60} minutes"
    return f"{seconds // 60}.5 minutes"


def span(low: int, high: int) -> str:
    low_words, high_words = words(low), words(high)
    if low_words.split()[1] == high_words.split()[1]:
        return f"{low_words.split()[0]} to {high_words}"
    return f"{low_words} to {high_words}"


def windows(config: Mapping[str, Any]) -> dict[str, Any]:
    """The windows the texts state, computed here from the cadences alone."""
    idle = int(parse_duration(config["reclaimMinIdle"]))
    interval = int(parse_duration(config["reclaimInterval"]))
    deliveries = int(config["maxDeliveries"])
    trim = int(parse_duration(config["deadletterTrimHorizon"]) + 2 * parse_duration(config["deadletterTrimInterval"]))
    return {
        # Four retries of 60 to 90 s each before the fifth delivery; five when it never returned.
        "dead_letter": span((deliveries - 1) * idle, deliveries * (idle + interval)),
        "retry": span(idle, idle + interval),
        "two_sweeps": 2 * (idle + interval),
        "cadence": f"every {words(interval)}, minimum idle {words(idle)}, {deliveries} deliveries",
        "max_deliveries": deliveries,
        "trim_age": trim,
    }


def rendered(config: Mapping[str, Any] | None) -> tuple[dict[str, dict[str, Any]], dict[int, str], dict[str, Any]]:
    tool("jsonnet")
    rendering = mixin.evaluate(config)
    alerts = {rule["alert"]: rule for group in rendering.alerts["groups"] for rule in group["rules"]}
    (dashboard,) = rendering.dashboards.values()
    panels = {panel["id"]: str(panel.get("description", "")) for panel in dashboard["panels"]}
    return alerts, panels, {**mixin.default_config(), **(config or {})}


@pytest.mark.parametrize("config", [None, OTHER_CADENCES], ids=["defaults", "other-cadences"])
def test_alerts_and_panels_state_the_windows_of_their_config(config: Mapping[str, Any] | None) -> None:
    alerts, panels, merged = rendered(config)
    expected = windows(merged)

    stuck = alerts["OrpycamcpStreamPendingTooOld"]
    assert f"({expected['cadence']})" in stuck["annotations"]["description"]
    assert f"keeps failing {expected['dead_letter']} after its first delivery" in stuck["annotations"]["description"]
    age = int(parse_duration(merged["streamPendingAge"]))
    assert f"> {age}" in stuck["expr"]
    assert f"offset {merged['streamPendingAge']}" in stuck["expr"]
    assert (
        f'orpycamcp:stream_oldest_pending_deliveries:max{{job="orpycamcp-exporter"}} > {expected["max_deliveries"]}'
        in stuck["expr"]
    )

    failing = alerts["OrpycamcpStreamDeadLetteringFailing"]
    assert failing["expr"].endswith(f"> {expected['max_deliveries']}")
    assert parse_duration(failing["for"]) == expected["two_sweeps"]
    description = failing["annotations"]["description"]
    assert f"more than max_deliveries ({expected['max_deliveries']})" in description
    assert f"after two sweeps ({words(expected['two_sweeps'])})" in description
    assert f"retries it every {expected['retry']}:" in description

    trim = alerts["OrpycamcpDeadletterStreamEntriesTooOld"]
    assert trim["expr"].endswith(f"> {expected['trim_age']}")
    assert f"(threshold {words(expected['trim_age'])}:" in trim["annotations"]["description"]

    assert f"({expected['cadence']}) dead-letters a message that keeps failing {expected['dead_letter']}" in panels[16]
    assert f"at its delivery {expected['max_deliveries']};" in panels[58]
    assert f"fires above {words(expected['trim_age'])}." in panels[59]
    for text in (*panels.values(), *(str(rule["annotations"]) for rule in alerts.values())):
        assert "2.5 minutes" not in text


def runbook_section(name: str) -> str:
    text = RUNBOOK.read_text(encoding="utf-8")
    return text.partition(f"\n## {name}\n")[2].partition("\n## ")[0]


def test_the_runbook_states_the_windows_of_the_default_config() -> None:
    tool("jsonnet")
    expected = windows(mixin.default_config())
    text = RUNBOOK.read_text(encoding="utf-8")
    thresholds = re.sub(r"\s+", " ", text.partition("\n## Thresholds\n")[2].partition("\n## ")[0])
    assert f"dead-lettered {expected['dead_letter']} after its first delivery" in thresholds
    assert f"{expected['retry']} after its last delivery" in thresholds
    assert f"older than {words(expected['trim_age'])}" in thresholds
    assert f"above {expected['max_deliveries']} for two sweeps ({words(expected['two_sweeps'])})" in thresholds
    assert f"keeps failing {expected['dead_letter']} after its first" in re.sub(
        r"\s+", " ", runbook_section("OrpycamcpStreamPendingTooOld")
    )
    failing = re.sub(r"\s+", " ", runbook_section("OrpycamcpStreamDeadLetteringFailing"))
    assert f"still pending two sweeps ({words(expected['two_sweeps'])})" in failing
    assert f"every {expected['retry']} the sweep" in failing
    trim = re.sub(r"\s+", " ", runbook_section("OrpycamcpDeadletterStreamEntriesTooOld"))
    assert f"older than {words(expected['trim_age'])}" in trim
    # The records' own "2.5 minutes" (30 s x 5) is quoted as what it is not, never stated.
    assert [line for line in text.splitlines() if "2.5 minutes" in line] == [
        '  dead-lettered 4 to 7.5 minutes after its first delivery, not "2.5 minutes"'
    ]


def test_audit_runs_are_monitoring_not_proof() -> None:
    _, panels, _ = rendered(None)
    for panel in (11, 13):
        assert "Monitoring, not proof (ADR-041)" in panels[panel]
        assert "verify_chain" in panels[panel]
    proof = re.sub(r"\s+", " ", runbook_section("OrpycamcpAuditChainUndeclaredBreaks"))
    assert "**monitoring, not proof** (ADR-041)" in proof
    assert "running `verify_chain` again" in proof
    for name in ("OrpycamcpAuditChainVerificationFailed", "OrpycamcpAuditChainVerificationStale"):
        assert "monitoring, not proof" in re.sub(r"\s+", " ", runbook_section(name))
