"""The Prometheus rules, their promtool unit tests and the runbook (the Alertmanager
example's routes and inhibitions: test_alertmanager.py)."""

from __future__ import annotations

import re
import subprocess
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit.tools import tool
from registry import BY_NAME, SIGNALS
from registry.backlogs import ARRIVALS, ARRIVALS_THRESHOLD, OLDEST_PENDING, PENDING_ITEMS

from .shorten import (
    REPO_ROOT,
    RULES_PATH,
    load_rules,
    parse_duration,
    shortened_rules,
    write_shortened_rules,
)

ALERTS_DIR = REPO_ROOT / "alerts"
RULE_TESTS = sorted((ALERTS_DIR / "tests").glob("*.test.yml"))
ALERTMANAGER_PATH = ALERTS_DIR / "alertmanager.example.yml"
RUNBOOK_PATH = REPO_ROOT / "docs" / "runbook.md"
GUIDE_PATH = REPO_ROOT / "docs" / "alerts-and-dashboard.md"
RUNBOOK_BASE = "https://github.com/orpycamcp/orpycamcp-exporter/blob/main/docs/runbook.md"

BACKLOG_FAMILIES = frozenset({PENDING_ITEMS, OLDEST_PENDING})
SEVERITIES = ("critical", "warning", "info")
HEALTH_ROLES = (
    "exporter_down",
    "exporter_replica_down",
    "no_signals",
    "unmeasured",
    "stale",
    "total_unknown",
    "database",
)
ROLES = (*HEALTH_ROLES, "value")
ALERT_NAME = re.compile(r"^Orpycamcp(?:[A-Z][a-z0-9]+)+$")
RECORD_NAME = re.compile(r"^orpycamcp:[a-z0-9_]+:(max|total|count|latest|last_seen_timestamp_seconds)$")
SELECTOR = '{job="orpycamcp-exporter"}'
IDENTITY = 'orpycamcp_database_identity_info{job="orpycamcp-exporter"}'
LATEST = 'orpycamcp:database_identity:latest{job="orpycamcp-exporter"}'
SUM = re.compile(r"\bsum(?:_over_time)?\b")
# Declared-backlog alerts take `signal` from the series: the backlog's name.
SIGNAL_FROM_BACKLOG = '"signal", "$1", "backlog", "(.+)"'
# Gauges whose values come from each cluster's own database: their totals are
# sums or minima over clusters, gated on every cluster having measured them.
PER_CLUSTER_TOTALS = {
    "dlq_pending_events": ("sum", "origin_group"),
    "dlq_oldest_pending_timestamp_seconds": ("min", "origin_group"),
    "preservation_exhausted_artifacts": ("sum", "artifact, phase"),
    "backlog_pending_items": ("sum", "backlog, group"),
    "backlog_oldest_pending_timestamp_seconds": ("min", "backlog, group"),
}
# The one Redis event bus of the platform: the same value from every cluster,
# merged over every target of the deployment (never per cluster or database).
GLOBAL_TOTALS = {
    "stream_pending_messages": "stream, group",
    "stream_oldest_pending_timestamp_seconds": "stream, group",
    "deadletter_stream_entries": "stream",
    "deadletter_stream_oldest_entry_timestamp_seconds": "stream",
}
# Bus families whose bus value (`:max`) has no platform total of its own.
BUS_ONLY = {
    "stream_undelivered_entries",
    "stream_consumers",
    "stream_consumer_idle_seconds",
    "stream_oldest_pending_deliveries",
    "deadletter_stream_entry_101_timestamp_seconds",
}


def run(*command: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(command, cwd=REPO_ROOT, capture_output=True, text=True, timeout=300, check=False)


def rules() -> Iterator[dict[str, Any]]:
    for group in load_rules()["groups"]:
        yield from group["rules"]


def alerting_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "alert" in rule]


def recording_rules() -> list[dict[str, Any]]:
    return [rule for rule in rules() if "record" in rule]


ALERT_IDS = [str(rule["alert"]) for rule in alerting_rules()]


def alert_rule(name: str) -> dict[str, Any]:
    for rule in alerting_rules():
        if rule["alert"] == name:
            return rule
    raise KeyError(name)


# --- promtool / amtool ---------------------------------------------------------


def test_promtool_check_rules() -> None:
    result = run(tool("promtool"), "check", "rules", str(RULES_PATH))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


def test_there_are_rule_tests() -> None:
    assert RULE_TESTS, "no alerts/tests/*.test.yml"


# One promtool run per file: each file's CPU (up to 11 s) stays far from the test's
# timeout on a loaded machine, where all of them in one run (65 s of CPU) did not,
# and the slowest file shows in --durations.
@pytest.mark.parametrize("path", RULE_TESTS, ids=lambda path: path.name)
def test_promtool_test_rules(path: Path) -> None:
    result = run(tool("promtool"), "test", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    assert result.stdout.count("SUCCESS") == 1, result.stdout


def test_amtool_check_config() -> None:
    result = run(tool("amtool"), "check-config", str(ALERTMANAGER_PATH))
    assert result.returncode == 0, result.stdout + result.stderr
    assert "SUCCESS" in result.stdout


# --- rule file conventions ------------------------------------------------------


def test_each_rule_test_file_evaluates_every_group_records_first() -> None:
    """promtool evaluates a test file's groups in a random order unless the file sets
    `group_eval_order` (and a group it leaves out ties with the first one named): an
    alert evaluated before the records it reads becomes active one evaluation late, so a
    check at its `for` exactly would pass or fail by that draw."""
    groups = yaml.safe_load(RULES_PATH.read_text(encoding="utf-8"))["groups"]
    order = [group["name"] for group in groups]
    assert all("record" in rule for rule in groups[0]["rules"]), "the first group is the records"
    assert not any("record" in rule for group in groups[1:] for rule in group["rules"]), "records are in one group"
    for path in [*RULE_TESTS, *sorted((ALERTS_DIR / "tests" / "other_config").glob("*.test.yml"))]:
        assert yaml.safe_load(path.read_text(encoding="utf-8")).get("group_eval_order") == order, path.name


def test_alert_names_are_unique() -> None:
    assert len(ALERT_IDS) == len(set(ALERT_IDS))


@pytest.mark.parametrize("name", ALERT_IDS)
def test_alert_name_is_camel_case_with_prefix(name: str) -> None:
    assert ALERT_NAME.match(name), name


@pytest.mark.parametrize("name", ALERT_IDS)
def test_alert_labels(name: str) -> None:
    labels = alert_rule(name).get("labels", {})
    assert labels.get("severity") in SEVERITIES
    role = labels.get("orpycamcp_role")
    assert role in ROLES
    if role == "value" and name.startswith("OrpycamcpBacklog"):
        assert "signal" not in labels, "a backlog alert takes `signal` from its backlog"
        assert SIGNAL_FROM_BACKLOG in str(alert_rule(name)["expr"])
    elif role == "value":
        assert labels.get("signal") in SIGNALS, "a value alert names its signal"
    else:
        assert "signal" not in labels, "health alerts take `signal` from the series, if any"


@pytest.mark.parametrize("name", ALERT_IDS)
def test_alert_annotations(name: str) -> None:
    annotations = alert_rule(name).get("annotations", {})
    summary = annotations.get("summary", "")
    description = annotations.get("description", "")
    assert summary
    assert "{{" not in summary, "summary is a fixed sentence"
    assert summary.endswith(".")
    assert "{{" in description, "description is templated"
    assert annotations.get("runbook_url") == f"{RUNBOOK_BASE}#{name.lower()}"


def github_anchor(heading: str) -> str:
    anchor = re.sub(r"[^\w\- ]", "", heading.strip().lower())
    return anchor.replace(" ", "-")


def runbook_sections() -> dict[str, str]:
    """Level-2 sections of the runbook, by GitHub anchor."""
    sections: dict[str, str] = {}
    text = RUNBOOK_PATH.read_text(encoding="utf-8")
    for chunk in re.split(r"^## ", text, flags=re.MULTILINE)[1:]:
        heading, _, body = chunk.partition("\n")
        sections[github_anchor(heading)] = body
    return sections


@pytest.mark.parametrize("name", ALERT_IDS)
def test_runbook_has_section(name: str) -> None:
    anchor = str(alert_rule(name)["annotations"]["runbook_url"]).partition("#")[2]
    sections = runbook_sections()
    assert anchor in sections, f"docs/runbook.md has no '## {name}' section"
    body = sections[anchor]
    for part in ("### What it means", "### How to check", "### How to fix"):
        assert part in body, f"runbook section {name} lacks {part!r}"


@pytest.mark.parametrize("name", ALERT_IDS)
def test_thresholds_are_documented(name: str) -> None:
    """The runbook's threshold table lists every alert (its values live in mixin/config.libsonnet)."""
    table = RUNBOOK_PATH.read_text(encoding="utf-8").partition("## Thresholds")[2]
    assert f"[{name}]" in table, f"threshold table lacks {name}"


TABLE_ROW = re.compile(r"^\|\s*\[?(Orpycamcp\w+)\]?(?:\([^)]*\))?\s*\|\s*(\w+)\s*\|", re.MULTILINE)


@pytest.mark.parametrize("path", [RUNBOOK_PATH, GUIDE_PATH], ids=["runbook", "guide"])
def test_threshold_tables_match_the_rules(path: Path) -> None:
    rows = dict(TABLE_ROW.findall(path.read_text(encoding="utf-8")))
    expected = {name: str(alert_rule(name)["labels"]["severity"]) for name in ALERT_IDS}
    assert rows == expected


def test_runbook_has_no_orphan_alert_section() -> None:
    anchors = {name.lower() for name in ALERT_IDS}
    orphans = [a for a in runbook_sections() if a.startswith("orpycamcp") and a not in anchors]
    assert not orphans


def record_rule(name: str) -> dict[str, Any]:
    for rule in recording_rules():
        if rule["record"] == name:
            return rule
    raise KeyError(name)


def test_no_sum_over_exporter_metrics() -> None:
    """Replicas report the same state: aggregate with max, never sum; only a
    platform total sums, and only over the replicas' max of a family."""
    for rule in rules():
        expr = str(rule["expr"])
        if not SUM.search(expr):
            continue
        assert str(rule.get("record", "")).endswith(":total"), rule
        summed = re.findall(
            r"\bsum\s+by\s*\([^)]*\)\s*\(\s*max by \(job, database_identity\b[^)]*\) \(\s*\(?(orpycamcp_[a-z0-9_]+)\{",
            expr,
        )
        assert summed, rule
        assert len(summed) == len(SUM.findall(expr)), rule


def test_no_or_vector_zero() -> None:
    assert not re.search(r"\bor\s+vector\s*\(", RULES_PATH.read_text(encoding="utf-8"))


def family_labels(family: str) -> tuple[str, ...]:
    """A family's own labels as the registry declares them (a declared backlog's: with its groups)."""
    if family in BACKLOG_FAMILIES:
        return ("backlog", "group")
    if family == ARRIVALS:
        return ("backlog", "group", "window")
    if family == ARRIVALS_THRESHOLD:
        return ("backlog", "window")
    return BY_NAME[family].labels


def test_recording_rules_merge_replicas_by_database_and_family_labels() -> None:
    """One value per database: merged by job, the cluster label (for people), the
    database identity and the family's labels, so any other target label (instance,
    pod, namespace, ...) never splits a database; the streams per bus: by job and the
    family's labels only."""
    records = recording_rules()
    assert records
    for rule in records:
        name = str(rule["record"])
        assert RECORD_NAME.match(name), name
        if not name.endswith(":max"):
            continue
        source = "orpycamcp_" + name.split(":")[1]
        labels = family_labels(source)
        bus = name.split(":")[1] in GLOBAL_TOTALS.keys() | BUS_ONLY
        if bus or source == "orpycamcp_redis_replica_lag_seconds":
            by = ", ".join(("job", *labels))
            assert squeeze(rule["expr"]) == f"max by ({by}) {fresh(source + SELECTOR)}", name
            continue
        by = ", ".join(("job", "orpycamcp_cluster", "database_identity", *labels))
        if source.startswith(("orpycamcp_signal_", "orpycamcp_database_")):
            assert squeeze(rule["expr"]) == f"max by ({by}) ({latest_join(fresh(source + SELECTOR), labels)})", name
            continue
        # A family a signal measures: the copy with the newest data (a primary over its lagging standby).
        copy = freshest_copy(source, labels, latest_join, "job, orpycamcp_cluster, database_identity")
        assert squeeze(rule["expr"]) == f"max by ({by}) {copy}", name


DATA_TIME = "orpycamcp_signal_data_timestamp_seconds"
DATA_MAX_AGE = 90  # dataMaxAge, 90s past the signal's own TTL
TTL = "orpycamcp_signal_ttl_seconds"
EXPORTER_TTL = 30  # exporterTtl: an exporter that publishes no TTL


def aged(series: str) -> str:
    """`series` plus its signal's own TTL (the exporter's default where none is published)."""
    return f"({series} + {TTL}{SELECTOR} or {series} + {EXPORTER_TTL})"


SAMPLE_MAX_AGE = 45  # samplesFreshScrapes x scrapeInterval, 3 x 15s


def fresh(series: str) -> str:
    """`series` only while its own sample is at most SAMPLE_MAX_AGE old (no staleness marker
    comes with federated or remote-written samples)."""
    return f"({series} unless timestamp({series}) < time() - {SAMPLE_MAX_AGE})"


def signal_of(family: str) -> str | None:
    """The signal measuring a family; None for a declared backlog's (its `backlog` label)."""
    name = family.removeprefix("orpycamcp_")
    if name.startswith("backlog_"):
        return None
    return BY_NAME[family].signal


def freshest_copy(source: str, labels: tuple[str, ...], join: Callable[[str, tuple[str, ...]], str], by: str) -> str:
    """`source`'s series of the copy with the newest data within its TTL plus dataMaxAge, per `by` and
    signal; every copy of a database that dates none of its data."""
    signal = signal_of(source)
    matcher = 'signal=~".+"' if signal is None else f'signal="{signal}"'
    dated_series = f'{DATA_TIME}{{job="orpycamcp-exporter", {matcher}}}'

    def as_family(text: str) -> str:
        return text if signal is not None else f'label_replace({text}, "backlog", "$1", "signal", "(.+)")'

    identified = join(f"{source}{SELECTOR}", labels)
    own = [label for label in labels if not (signal is None and label == "backlog")]
    current = (
        f"({dated_series} and {aged(dated_series)} >= time() - {DATA_MAX_AGE}"
        f" unless timestamp({dated_series}) < time() - {SAMPLE_MAX_AGE})"
    )
    fresh = join(current, ("signal",))
    newest = as_family(f"topk by ({by}, signal) (1, {fresh})")
    db_by = by + (", backlog" if signal is None else "")
    return (
        f"( {identified} and ignoring ({', '.join((*own, 'signal'))}) {newest}"
        f" or {identified} unless on ({db_by}) {as_family(join(dated_series, ('signal',)))} )"
    )


def latest_join(series: str, labels: tuple[str, ...]) -> str:
    ignoring = ", ".join((*labels, "database_identity"))
    return (
        f"({series} * ignoring ({ignoring}) group_left (database_identity) {LATEST}"
        f" or {series} unless ignoring ({ignoring}) {LATEST})"
    )


def now_join(series: str, labels: tuple[str, ...]) -> str:
    ignoring = ", ".join((*labels, "database_identity"))
    return f"({series} * ignoring ({ignoring}) group_left (database_identity) {fresh(IDENTITY)})"


def squeeze(expr: object) -> str:
    return " ".join(str(expr).split())


def test_identity_of_each_target_is_remembered() -> None:
    seen = squeeze(record_rule("orpycamcp:database_identity:last_seen_timestamp_seconds")["expr"])
    assert seen == f"timestamp({IDENTITY}) >= time() - {SAMPLE_MAX_AGE}"
    latest = squeeze(record_rule("orpycamcp:database_identity:latest")["expr"])
    assert latest == (
        "topk without (database_identity) (1, last_over_time("
        f"orpycamcp:database_identity:last_seen_timestamp_seconds{SELECTOR}[6h1ms])) * 0 + 1"
    )


@pytest.mark.parametrize("family", sorted(PER_CLUSTER_TOTALS))
def test_per_cluster_totals_are_gated_on_every_database(family: str) -> None:
    """Never a partial sum: the total exists only with every known database's measurement."""
    operator, labels = PER_CLUSTER_TOTALS[family]
    expr = squeeze(record_rule(f"orpycamcp:{family}:total")["expr"])
    # Values only from targets that report their database now, merged per database.
    copy = freshest_copy(f"orpycamcp_{family}", tuple(labels.split(", ")), now_join, "job, database_identity")
    merged = f"max by (job, database_identity, {labels}) {copy}"
    assert expr.startswith(f"{operator} by (job, {labels}) ( {merged} ) and on (job"), expr
    # The gate, in the same expression (one consistent read of the storage): the
    # databases measured now == every database known (remembered or reporting), the
    # known set stable over the warm-up, no unidentified target, no shared label.
    assert '(orpycamcp_signal_measured{job="orpycamcp-exporter", signal=' in expr, expr
    assert 'unless timestamp(orpycamcp_signal_measured{job="orpycamcp-exporter", signal=' in expr, expr
    # A copy whose data is past dataMaxAge, or whose sample a server gone left, measured nothing now.
    stale = (
        f"{aged(DATA_TIME + SELECTOR)} < time() - {DATA_MAX_AGE}"
        f" unless timestamp({DATA_TIME}{SELECTOR}) < time() - {SAMPLE_MAX_AGE})"
    )
    assert f"== 1 unless {stale}" in expr, expr
    assert (
        f"group by (job, database_identity) ({LATEST}) or group by (job, database_identity) ({fresh(IDENTITY)})" in expr
    )
    assert f"group by (job, database_identity) ({LATEST} offset 1m)" in expr
    # A target is its job and instance: its identity survives a rename of its cluster label.
    assert f"({fresh('up' + SELECTOR)} == 0) unless ignoring (database_identity, orpycamcp_cluster) {LATEST}" in expr
    assert "count by (job, orpycamcp_cluster) (group by (job, orpycamcp_cluster, database_identity)" in expr


@pytest.mark.parametrize("family", sorted(GLOBAL_TOTALS))
def test_global_totals_are_the_bus_value(family: str) -> None:
    expr = squeeze(record_rule(f"orpycamcp:{family}:total")["expr"])
    assert expr == f"orpycamcp:{family}:max{SELECTOR}"


def test_every_total_has_its_family_max() -> None:
    totals = {str(r["record"]).split(":")[1] for r in recording_rules() if str(r["record"]).endswith(":total")}
    assert totals == set(PER_CLUSTER_TOTALS) | set(GLOBAL_TOTALS)
    maxima = {str(r["record"]).split(":")[1] for r in recording_rules() if str(r["record"]).endswith(":max")}
    assert totals <= maxima


def total_expectations() -> dict[str, list[int]]:
    """For each expression of the promtool expression tests: the sample counts expected."""
    found: dict[str, list[int]] = {}
    for path in RULE_TESTS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in document["tests"]:
            for check in case.get("promql_expr_test", []):
                found.setdefault(str(check["expr"]), []).append(len(check.get("exp_samples") or []))
    return found


@pytest.mark.parametrize("family", sorted(set(PER_CLUSTER_TOTALS) | set(GLOBAL_TOTALS)))
def test_every_total_is_unit_tested_present_and_absent(family: str) -> None:
    counts = total_expectations().get(f"orpycamcp:{family}:total", [])
    assert len(counts) >= 5, "two clusters, one unmeasured, one down, one replica down, no cluster label"
    assert any(counts), f"{family}: no promtool case where the total is present"
    if family in PER_CLUSTER_TOTALS:
        assert not all(counts), f"{family}: no promtool case where the total is absent"


def test_exporter_job_selector() -> None:
    """`up` is always selected by the exporter's job, so other jobs never fire these alerts."""
    for rule in alerting_rules():
        expr = str(rule["expr"])
        for match in re.finditer(r"\bup\b(\{[^}]*\})?", expr):
            assert match.group(1) == '{job="orpycamcp-exporter"}', (rule["alert"], expr)


# --- promtool unit-test coverage --------------------------------------------------


@dataclass(frozen=True)
class Expectation:
    alertname: str
    firing: tuple[dict[str, str], ...]


def expectations() -> list[Expectation]:
    found: list[Expectation] = []
    for path in RULE_TESTS:
        document = yaml.safe_load(path.read_text(encoding="utf-8"))
        for case in document["tests"]:
            for check in case.get("alert_rule_test", []):
                firing = tuple(
                    {str(k): str(v) for k, v in alert.get("exp_labels", {}).items()}
                    for alert in check.get("exp_alerts") or []
                )
                found.append(Expectation(str(check["alertname"]), firing))
    return found


@pytest.mark.parametrize("name", ALERT_IDS)
def test_every_alert_is_unit_tested_firing_and_silent(name: str) -> None:
    mine = [e for e in expectations() if e.alertname == name]
    assert any(e.firing for e in mine), f"{name}: no promtool case where it fires"
    assert any(not e.firing for e in mine), f"{name}: no promtool case where it stays silent"


def test_unit_tests_name_only_existing_alerts() -> None:
    assert {e.alertname for e in expectations()} <= set(ALERT_IDS)


def fired_labels() -> dict[str, dict[str, str]]:
    """One label set per alert, exactly as promtool saw it fire (plus alertname)."""
    labels: dict[str, dict[str, str]] = {}
    for expectation in expectations():
        for firing in expectation.firing:
            labels.setdefault(expectation.alertname, {**firing, "alertname": expectation.alertname})
    return labels


# --- shortened copy for end-to-end runs -------------------------------------------


def test_shortened_rules_are_valid_and_short(tmp_path: Path) -> None:
    path = write_shortened_rules(tmp_path / "short.rules.yml", for_duration="2s", offset="10s")
    result = run(tool("promtool"), "check", "rules", str(path))
    assert result.returncode == 0, result.stdout + result.stderr
    document = load_rules(path)
    names = [r.get("alert") for g in document["groups"] for r in g["rules"] if "alert" in r]
    assert names == ALERT_IDS
    for group in document["groups"]:
        assert group["interval"] == "1s"
        for rule in group["rules"]:
            assert parse_duration(str(rule.get("for", "0s"))) <= 2
            assert not re.search(r"offset\s+(?!10s\b)", str(rule["expr"]))
    growing = alert_rule_from(document, "OrpycamcpDeadletterStreamGrowing")
    assert "offset 10s" in str(growing["expr"])


def alert_rule_from(document: Mapping[str, Any], name: str) -> dict[str, Any]:
    for group in document["groups"]:
        for rule in group["rules"]:
            if rule.get("alert") == name:
                return dict(rule)
    raise KeyError(name)


def test_shortened_rules_leave_source_and_thresholds_alone() -> None:
    before = RULES_PATH.read_text(encoding="utf-8")
    short = shortened_rules(for_duration="1s", interval=None, offset=None)
    assert RULES_PATH.read_text(encoding="utf-8") == before
    original = load_rules()
    for group, short_group in zip(original["groups"], short["groups"], strict=True):
        assert "interval" not in short_group or short_group["interval"] == group.get("interval")
        for rule, short_rule in zip(group["rules"], short_group["rules"], strict=True):
            assert short_rule["expr"] == rule["expr"]
            assert short_rule.get("labels") == rule.get("labels")


@pytest.mark.parametrize(
    ("text", "seconds"),
    [
        ("0s", 0),
        ("2s", 2),
        ("5m", 300),
        ("1h", 3600),
        ("26h", 93600),
        ("1h30m", 5400),
        ("500ms", 0.5),
    ],
)
def test_parse_duration(text: str, seconds: float) -> None:
    assert parse_duration(text) == seconds


@pytest.mark.parametrize("text", ["", "5", "m5", "5 m", "1x"])
def test_parse_duration_rejects(text: str) -> None:
    with pytest.raises(ValueError, match="duration"):
        parse_duration(text)
