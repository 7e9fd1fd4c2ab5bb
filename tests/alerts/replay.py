"""Alert scenarios replayed by promtool over series a real exporter measured.

A scenario writes to a real Redis (or PostgreSQL) what the platform does
(entries whose IDs carry the simulated time, reads, claims, acknowledgements,
trims; rows resolved and purged), measures the signal with the exporter's own
code after each step, and keeps the values. Timestamps are rebased on promtool's clock: an entry written `a`
seconds before the simulated instant of a measurement is `a` seconds before
promtool's instant of that sample, so every age the rules compute is the one
the platform had. promtool then evaluates the shipped rules (the signal's
records and alerts, annotations aside) over these series.
"""

from __future__ import annotations

import subprocess
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml

from devkit import mixin
from devkit.tools import tool
from exporter.measure import measure
from exporter.signals import streams
from exporter.signals.base import Signal
from exporter.sources import Sources
from exporter.sources.redis.source import RedisStreams
from exporter.timeouts import Timeouts
from registry import Registry

JOB = "orpycamcp-exporter"
INSTANCE = "replay:9874"
STREAMS_ALERTS = "orpycamcp.streams.alerts"
STREAMS_RECORDS = ("orpycamcp:stream_", "orpycamcp:deadletter_")


@dataclass(frozen=True)
class Rules:
    """The records and the alert group a scenario's alerts need."""

    records: tuple[str, ...]
    alerts: str


STREAMS_RULES = Rules(STREAMS_RECORDS, STREAMS_ALERTS)


@dataclass
class Recording:
    """Series measured at steps of `step_s` seconds of promtool time; each value is
    repeated `repeat` times at `step_s / repeat` intervals (an instant query looks
    back 5 minutes only)."""

    step_s: int
    repeat: int = 1
    steps: int = 0
    values: dict[str, dict[int, float]] = field(default_factory=dict)

    @property
    def interval_s(self) -> int:
        return self.step_s // self.repeat

    async def measure(self, source: RedisStreams, registry: Registry, now_s: float) -> None:
        """One measurement through the exporter, as the platform was at `now_s` (simulated)."""
        await self.measure_signal(streams.signal_of(registry), Sources(redis=source), registry, now_s)

    async def measure_signal(self, signal: Signal, sources: Sources, registry: Registry, now_s: float) -> None:
        """One measurement of `signal` through the exporter, as the platform was at `now_s` (simulated)."""
        outcome = await measure(signal, sources, Timeouts(30.0), registry)  # bounds a loaded machine only
        assert outcome.samples is not None, outcome.failure
        at = self.steps * self.step_s
        for sample in outcome.samples:
            family = registry.family(sample.family, signal.name)
            assert family is not None
            labels = ",".join(f'{name}="{value}"' for name, value in zip(family.labels, sample.labels, strict=True))
            name = f'{sample.family}{{job="{JOB}",instance="{INSTANCE}",{labels}}}'
            value = float(sample.value)
            if sample.family.endswith("_timestamp_seconds"):
                value = value - now_s + at
            self.values.setdefault(name, {})[self.steps] = value
        self.steps += 1

    def input_series(self) -> list[dict[str, str]]:
        series = []
        for name, by_step in sorted(self.values.items()):
            parts = []
            for step in range(self.steps):
                value = by_step.get(step)
                shown = "_" if value is None else repr(value)
                parts.append(shown if self.repeat == 1 else f"{shown}x{self.repeat - 1}")
            series.append({"series": name, "values": " ".join(parts)})
        return series


@dataclass(frozen=True)
class Check:
    """At `at_s` seconds of promtool time, `alert` fires for exactly these label sets."""

    at_s: int
    alert: str
    firing: tuple[Mapping[str, str], ...] = ()


def alert_labels(alert: str, signal: str = "streams", **labels: str) -> dict[str, str]:
    severity = "warning"
    return {"severity": severity, "signal": signal, "orpycamcp_role": "value", "job": JOB, **labels}


def duration(seconds: int) -> str:
    """A duration in its largest exact unit: promtool misplaces an alert check at "3456000s"
    (40 days), and finds it at "40d"."""
    for unit, size in (("d", 86_400), ("h", 3600), ("m", 60)):
        if seconds % size == 0:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


def scenario_rules(scrape_interval_s: int, wanted: Rules = STREAMS_RULES) -> dict[str, Any]:
    """The rules the scenario's alerts need, rendered for the recording's scrape interval
    (a sample counts while it is fresh, a few intervals old): their records and alerts,
    annotations left out (the scenarios check when and for what they fire; the texts are
    checked by alerts/tests)."""
    groups = []
    for group in mixin.rule_groups(mixin.evaluate({"scrapeInterval": duration(scrape_interval_s)})):
        rules = []
        for rule in group["rules"]:
            if str(rule.get("record", "")).startswith(wanted.records) or group["name"] == wanted.alerts:
                rules.append({key: value for key, value in rule.items() if key != "annotations"})
        if rules:
            groups.append({"name": group["name"], "rules": rules})
    return {"groups": groups}


def promtool_test(
    recording: Recording, checks: Iterable[Check], directory: Path, evaluation_s: int, wanted: Rules = STREAMS_RULES
) -> str:
    """Runs the checks over the recording with promtool; returns its output, failing on any mismatch."""
    rules = scenario_rules(recording.interval_s, wanted)
    (directory / "rules.yml").write_text(yaml.safe_dump(rules, sort_keys=False), encoding="utf-8")
    tests = [
        {
            "alertname": check.alert,
            "eval_time": duration(check.at_s),
            "exp_alerts": [{"exp_labels": dict(labels)} for labels in check.firing],
        }
        for check in checks
    ]
    document = {
        "rule_files": ["rules.yml"],
        "evaluation_interval": duration(evaluation_s),
        # The records before the alerts that read them, at every evaluation: promtool orders the
        # groups at random otherwise, and a record one interval old is past the 5 m look-back of an
        # hourly recording (the alerts then see nothing, in about one run of five).
        "group_eval_order": [group["name"] for group in rules["groups"]],
        "tests": [
            {
                "interval": duration(recording.interval_s),
                "input_series": recording.input_series(),
                "alert_rule_test": tests,
            }
        ],
    }
    path = directory / "scenario.test.yml"
    path.write_text(yaml.safe_dump(document, sort_keys=False, width=1 << 20), encoding="utf-8")
    result = subprocess.run(
        [tool("promtool"), "test", "rules", str(path)], capture_output=True, text=True, timeout=600, check=False
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output[-6000:]
    assert "SUCCESS" in result.stdout
    return output
