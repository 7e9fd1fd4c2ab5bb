"""The Alertmanager example's routes and inhibitions (mixin/alertmanager.libsonnet), on
every label set promtool saw an alert fire with: what pages, and what one alert holds."""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from devkit import mixin
from registry import SIGNALS

from .shorten import load_rules
from .test_rules import ALERT_IDS, expectations, fired_labels

MATCHER = re.compile(r'^\s*([a-zA-Z_][a-zA-Z0-9_]*)\s*(=~|!~|!=|=)\s*"((?:[^"\\]|\\.)*)"\s*$')


@dataclass(frozen=True)
class Matcher:
    name: str
    op: str
    value: str

    @classmethod
    def parse(cls, text: str) -> Matcher:
        match = MATCHER.match(text)
        assert match, f"unsupported matcher syntax in the example: {text!r}"
        return cls(match.group(1), match.group(2), match.group(3))

    def matches(self, labels: Mapping[str, str]) -> bool:
        value = labels.get(self.name, "")
        if self.op == "=":
            return value == self.value
        if self.op == "!=":
            return value != self.value
        found = re.fullmatch(self.value, value) is not None
        return found if self.op == "=~" else not found


def matchers(texts: list[str]) -> list[Matcher]:
    return [Matcher.parse(text) for text in texts]


@dataclass(frozen=True)
class InhibitRule:
    source: list[Matcher]
    target: list[Matcher]
    equal: list[str]

    def inhibits(self, source: Mapping[str, str], target: Mapping[str, str]) -> bool:
        return (
            all(m.matches(source) for m in self.source)
            and all(m.matches(target) for m in self.target)
            and all(source.get(label, "") == target.get(label, "") for label in self.equal)
        )


def alertmanager() -> dict[str, Any]:
    """The Alertmanager configuration the mixin renders: alerts/alertmanager.example.yml is
    that render (test_mixin.py), and devkit.mixin_mutation points the mixin at a mutant."""
    return mixin.evaluate().alertmanager


def inhibit_rules() -> list[InhibitRule]:
    parsed = []
    for rule in alertmanager()["inhibit_rules"]:
        legacy = {"source_match", "target_match", "source_match_re", "target_match_re"}
        assert not legacy & set(rule)
        parsed.append(
            InhibitRule(
                matchers(rule["source_matchers"]),
                matchers(rule["target_matchers"]),
                list(rule.get("equal", [])),
            )
        )
    return parsed


def inhibited(target: Mapping[str, str], *, by: Mapping[str, str]) -> bool:
    return any(rule.inhibits(by, target) for rule in inhibit_rules())


def test_every_alert_fires_with_known_labels() -> None:
    assert set(fired_labels()) == set(ALERT_IDS)


def role_of(labels: Mapping[str, str]) -> str:
    return labels["orpycamcp_role"]


def test_value_alerts_are_inhibited_by_their_signal_unmeasured() -> None:
    alerts = fired_labels()
    unmeasured = alerts["OrpycamcpSignalUnmeasured"]
    values = [labels for labels in alerts.values() if role_of(labels) == "value"]
    backlogs = {labels["signal"] for labels in values if labels["alertname"].startswith("OrpycamcpBacklog")}
    assert backlogs  # declared backlogs are signals of their own
    assert {labels["signal"] for labels in values} == set(SIGNALS) | backlogs
    for target in values:
        for signal in (*SIGNALS, *backlogs):
            source = {**unmeasured, "signal": signal}
            expected = signal == target["signal"]
            assert inhibited(target, by=source) is expected, (target["alertname"], signal)
        other_job = {**unmeasured, "signal": target["signal"], "job": "another-exporter"}
        assert not inhibited(target, by=other_job), target["alertname"]


def test_unmeasured_does_not_inhibit_health_alerts() -> None:
    alerts = fired_labels()
    unmeasured = alerts["OrpycamcpSignalUnmeasured"]
    for target in alerts.values():
        if role_of(target) == "value":
            continue
        for signal in SIGNALS:
            source = {**unmeasured, "signal": signal}
            if source != target:
                assert not inhibited(target, by=source), (target["alertname"], signal)


# Never inhibited: they say what the platform totals miss.
NEVER_INHIBITED_ROLES = ("exporter_down", "total_unknown", "database")
CLUSTER = "orpycamcp_cluster"
IDENTITY_LABEL = "database_identity"


def same_cluster(source: Mapping[str, str], target: Mapping[str, str]) -> dict[str, str]:
    """`source` as it fires for the target's database (OrpycamcpExporterDown fires per database identity,
    without the cluster label), or for the target's cluster label value if the target names no database."""
    if source["alertname"] != "OrpycamcpExporterDown":
        return dict(source)
    if IDENTITY_LABEL in target:
        return {**source, IDENTITY_LABEL: target[IDENTITY_LABEL]}
    if CLUSTER in target:
        return {**source, CLUSTER: target[CLUSTER]}
    return dict(source)


def test_exporter_down_inhibits_every_other_alert_but_the_totals() -> None:
    alerts = fired_labels()
    sources = [labels for labels in alerts.values() if role_of(labels) == "exporter_down"]
    assert {s["alertname"] for s in sources} == {"OrpycamcpExporterAbsent", "OrpycamcpExporterDown"}
    for source in sources:
        for target in alerts.values():
            expected = role_of(target) not in NEVER_INHIBITED_ROLES
            pair = (source["alertname"], target["alertname"])
            assert inhibited(target, by=same_cluster(source, target)) is expected, pair
            # Also for every signal of a health alert that carries one.
            if "signal" in target and role_of(target) not in ("value", *NEVER_INHIBITED_ROLES):
                for signal in SIGNALS:
                    assert inhibited({**target, "signal": signal}, by=same_cluster(source, target))
        other_job = {**source, "job": "another-exporter"}
        for target in alerts.values():
            assert not inhibited(target, by=other_job), target["alertname"]


def test_non_orpycamcp_alerts_are_never_inhibited() -> None:
    alerts = fired_labels()
    foreign = {
        "alertname": "HostDown",
        "job": "orpycamcp-exporter",
        "signal": "dlq",
        "orpycamcp_role": "value",
        "severity": "critical",
    }
    assert not inhibited(foreign, by=alerts["OrpycamcpExporterDown"])
    assert not inhibited(foreign, by=alerts["OrpycamcpExporterAbsent"])
    # A value alert is only inhibited by an unmeasured alert, its database's outage or its
    # database gone, not by another value alert.
    for source in alerts.values():
        if role_of(source) not in ("unmeasured", "exporter_down") and source["alertname"] != VANISHED:
            for target in alerts.values():
                assert not inhibited(target, by=source), (source["alertname"], target["alertname"])


def route_receiver(route: Mapping[str, Any], labels: Mapping[str, str], inherited: str = "") -> str:
    """The receiver Alertmanager picks (first matching child, no `continue`)."""
    receiver = str(route.get("receiver", inherited))
    for child in route.get("routes", []):
        assert not child.get("continue", False)
        assert not {"match", "match_re"} & set(child)
        if all(m.matches(labels) for m in matchers(child.get("matchers", []))):
            return route_receiver(child, labels, receiver)
    return receiver


def test_routing_by_severity() -> None:
    root = alertmanager()["route"]
    for labels in fired_labels().values():
        expected = f"orpycamcp-{labels['severity']}"
        assert route_receiver(root, labels) == expected, labels["alertname"]
    assert route_receiver(root, {"alertname": "HostDown", "severity": "critical"}) == "default"
    # Only this deployment's own alerts: not another alert of its job, nor its alerts from another job.
    assert route_receiver(root, {"alertname": "HostDown", "job": "orpycamcp-exporter", "severity": "critical"}) == (
        "default"
    )
    for labels in fired_labels().values():
        assert route_receiver(root, {**labels, "job": "another-exporter"}) == "default", labels["alertname"]
    # No alert is `info` today (tests/alerts/test_rules.py allows it): one would reach its own receiver.
    for labels in fired_labels().values():
        assert route_receiver(root, {**labels, "severity": "info"}) == "orpycamcp-info", labels["alertname"]


def test_grouping() -> None:
    assert alertmanager()["route"]["group_by"] == [
        "alertname",
        "job",
        "database_identity",
        "orpycamcp_cluster",
        "signal",
    ]


def database_keyed() -> set[str]:
    """The alerts keyed on the database identity, the cluster label dropped (lib.byDatabase)."""
    return {
        str(rule["alert"])
        for group in load_rules()["groups"]
        for rule in group["rules"]
        if "alert" in rule and f"max without ({CLUSTER}) (" in str(rule["expr"])
    }


def test_alerts_about_one_database_carry_its_identity_and_no_cluster_label() -> None:
    """Wherever promtool saw one fire for an identified database: a renamed cluster label changes nothing."""
    keyed = database_keyed()
    assert {"OrpycamcpExporterDown", "OrpycamcpSignalUnmeasured", "OrpycamcpDlqPendingTooLong"} <= keyed
    values = {
        name for name, labels in fired_labels().items() if role_of(labels) == "value" and labels["signal"] != "streams"
    }
    assert values <= keyed
    seen = 0
    for expectation in expectations():
        if expectation.alertname in keyed:
            for firing in expectation.firing:
                if IDENTITY_LABEL in firing:
                    assert CLUSTER not in firing, expectation.alertname
                    seen += 1
    assert seen > 5


def test_inhibition_stays_within_a_database() -> None:
    """One database's exporters down or signal unmeasured never hide another database's alerts."""
    alerts = fired_labels()
    for source_name in ("OrpycamcpExporterDown", "OrpycamcpSignalUnmeasured"):
        source = {**alerts[source_name], IDENTITY_LABEL: "2/1"}
        source.pop(CLUSTER, None)
        for target in alerts.values():
            if role_of(target) != "value":
                continue
            assert not inhibited({**target, IDENTITY_LABEL: "1/1"}, by=source), (source_name, target["alertname"])
        value = next(t for t in alerts.values() if role_of(t) == "value")
        same = {**source, "signal": value["signal"]}
        assert inhibited({**value, IDENTITY_LABEL: "2/1"}, by=same), source_name
    # Targets that never reported an identity: by their cluster label value.
    down = {**alerts["OrpycamcpExporterDown"], CLUSTER: "b"}
    down.pop(IDENTITY_LABEL, None)
    replica = alerts["OrpycamcpExporterNoSignals"]
    assert inhibited({**replica, CLUSTER: "b"}, by=down)
    assert not inhibited({**replica, CLUSTER: "a"}, by=down)


VANISHED = "OrpycamcpDatabaseVanished"


def test_a_vanished_database_holds_its_own_value_alerts_only() -> None:
    """Its values unknown while it is not scraped: their end is no "resolved" (keep_firing_for, then inhibited)."""
    alerts = fired_labels()
    vanished = {**alerts[VANISHED], IDENTITY_LABEL: "2/1"}
    held = 0
    for target in alerts.values():
        if role_of(target) == "value" and target["signal"] != "streams":
            held += 1
            assert inhibited({**target, IDENTITY_LABEL: "2/1"}, by=vanished), target["alertname"]
            assert not inhibited({**target, IDENTITY_LABEL: "1/1"}, by=vanished), target["alertname"]
            assert not inhibited({**target, IDENTITY_LABEL: "2/1"}, by={**vanished, "job": "another-exporter"})
        else:
            assert not inhibited(target, by=vanished), target["alertname"]
            if role_of(target) != "value":  # the same database's other alerts are not held
                assert not inhibited({**target, IDENTITY_LABEL: "2/1"}, by=vanished), target["alertname"]
    assert held > 10


def test_a_cluster_unable_to_read_the_streams_is_inhibited_by_its_own_outage_only() -> None:
    """Its database's exporters all down say more; another database's outage, or the
    streams unmeasured, never hide it, and it hides nothing."""
    alerts = fired_labels()
    target = alerts["OrpycamcpStreamsUnreadableFromCluster"]
    assert target[IDENTITY_LABEL]
    down = alerts["OrpycamcpExporterDown"]
    assert inhibited(target, by={**down, IDENTITY_LABEL: target[IDENTITY_LABEL]})
    assert not inhibited(target, by={**down, IDENTITY_LABEL: target[IDENTITY_LABEL] + "0"})
    assert not inhibited(target, by={**alerts["OrpycamcpSignalUnmeasured"], "signal": "streams"})
    for other in alerts.values():
        assert not inhibited(other, by=target), other["alertname"]


def test_unmeasured_inhibits_its_own_database_only() -> None:
    """Two databases under one cluster label value: one's unmeasured signal never hides the other's value alerts."""
    alerts = fired_labels()
    source = {**alerts["OrpycamcpSignalUnmeasured"], "orpycamcp_cluster": "k8s", "database_identity": "1/1"}
    value = next(t for t in alerts.values() if role_of(t) == "value")
    target = {**value, "orpycamcp_cluster": "k8s", "signal": source["signal"]}
    assert inhibited({**target, "database_identity": "1/1"}, by=source)
    assert not inhibited({**target, "database_identity": "2/1"}, by=source)


def test_unmeasured_without_an_identity_inhibits_its_own_cluster_label_only() -> None:
    """Targets that never reported an identity: one cluster's unmeasured signal never
    hides another cluster's value alerts."""
    alerts = fired_labels()
    source = {**alerts["OrpycamcpSignalUnmeasured"], CLUSTER: "a"}
    source.pop(IDENTITY_LABEL, None)
    for value in (t for t in alerts.values() if role_of(t) == "value"):
        target = {**value, "signal": source["signal"], CLUSTER: "a"}
        target.pop(IDENTITY_LABEL, None)
        assert inhibited(target, by=source), value["alertname"]
        assert not inhibited({**target, CLUSTER: "b"}, by=source), value["alertname"]


def test_receivers_are_local_placeholders() -> None:
    for receiver in alertmanager()["receivers"]:
        for hook in receiver.get("webhook_configs", []):
            assert str(hook["url"]).startswith("http://127.0.0.1:"), receiver["name"]
