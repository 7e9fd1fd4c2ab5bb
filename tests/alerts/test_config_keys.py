"""Every `_config` key of the mixin is read where it promises: set to a value other
than its default by a promtool-tested render (devkit/mixin_variants.py: `renamed`,
`other`), by the cadences of tests/alerts/test_windows.py, or else here, where the
`for` and the threshold of each alert are checked against a render with distinct
values (a key ignored leaves its alert at the default, which none of these is),
and where each such key, set alone to that value, makes a promtool test of the
default files fail on the very rules it changed: the tests see where it acts."""

from __future__ import annotations

import re
import subprocess
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit import mixin
from devkit.mixin_mutation import affected, by_name
from devkit.mixin_variants import OTHER_CONFIG, RENAMED_CONFIG, TESTS_DIR, promtool_on
from devkit.tools import tool
from tests.alerts.shorten import parse_duration
from tests.alerts.test_windows import OTHER_CADENCES

# Each value distinct from every other and from every default.
WINDOWS: dict[str, Any] = {
    "exporterAbsentFor": "11m",
    "exporterDownFor": "12m",
    "exporterReplicaDownFor": "13m",
    "exporterNoSignalsFor": "14m",
    "signalUnmeasuredFor": "16m",
    "streamsUnreadableFromClusterFor": "19m",
    "signalStaleAge": "31m",
    "signalStaleFor": "21m",
    "databaseReplayLagAge": "7m",
    "databaseReplayLagFor": "22m",
    "redisReplicaLagAge": "43s",
    "redisReplicaLagFor": "23m",
    "platformTotalUnknownFor": "24m",
    "databaseUnidentifiedFor": "26m",
    "clusterLabelConflictFor": "27m",
    "dlqPendingFor": "2h",
    "dlqOldestPendingAge": "29h",
    "dlqOldestPendingFor": "28m",
    "dlqPendingAgeUnknownFor": "29m",
    "preservationExhaustedFor": "32m",
    "auditChainUndeclaredBreaksFor": "2m",
    "auditChainVerificationFailedFor": "3m",
    "auditChainVerificationAge": "27h",
    "auditChainVerificationStaleFor": "33m",
    "auditChainNeverVerifiedFor": "3h",
    "migrationLockTimeout": "900s",
    "migrationLockHeldFor": "8m",
    "deadLetterPurgeHorizon": "60d",
    "dedupPurgeHorizon": "9d",
    "purgeInterval": "2d",
    "purgeStoppedFor": "4h",
    "streamPendingTooOldFor": "34m",
    "streamPendingAgeUnknownFor": "35m",
    "streamNotConsumedIdle": "6m",
    "streamNotConsumedFor": "36m",
    "streamUndeliveredUnknownFor": "37m",
    "deadletterStreamGrowthWindow": "38m",
    "deadletterStreamEntriesTooOldFor": "5h",
    "backlogPendingFor": "6h",
    "backlogOldestPendingAge": "30h",
    "backlogOldestPendingFor": "39m",
    "backlogPendingAgeUnknownFor": "40m",
    "backlogOldestLookback": "3d",
    "backlogArrivalsHighFor": "42m",
    "backlogGrowthStep": "20m",
    "backlogGrowthSteps": 3,
    "dashboardUid": "orpycamcp-other",
    "dashboardTitle": "orpycamcp, another render",
    "dashboardTags": ["orpycamcp", "other"],
    "dashboardRefresh": "5m",
    "datasourceType": "prometheus-compatible",
    "datasourceRegex": "thanos.*",
}
# Keys the promtool-tested renders set, and those no rule reads but the selector's
# and cluster label's own tests (tests/alerts/test_mixin.py).
ELSEWHERE = {*OTHER_CONFIG, *RENAMED_CONFIG, *OTHER_CADENCES}

# The alerts whose `for` is the key's value.
FOR: dict[str, tuple[str, ...]] = {
    "exporterAbsentFor": ("OrpycamcpExporterAbsent",),
    "exporterDownFor": ("OrpycamcpExporterDown",),
    "exporterReplicaDownFor": ("OrpycamcpExporterReplicaDown",),
    "exporterNoSignalsFor": ("OrpycamcpExporterNoSignals",),
    "signalUnmeasuredFor": ("OrpycamcpSignalUnmeasured",),
    "streamsUnreadableFromClusterFor": ("OrpycamcpStreamsUnreadableFromCluster",),
    "signalStaleFor": ("OrpycamcpSignalStale",),
    "databaseReplayLagFor": ("OrpycamcpDatabaseReplayLagHigh",),
    "redisReplicaLagFor": ("OrpycamcpRedisReplicaLagHigh",),
    "platformTotalUnknownFor": ("OrpycamcpPlatformTotalUnknown",),
    "databaseUnidentifiedFor": ("OrpycamcpDatabaseIdentityUnreadable", "OrpycamcpDatabaseUnidentified"),
    "clusterLabelConflictFor": ("OrpycamcpClusterLabelSharedByDatabases", "OrpycamcpDatabaseInSeveralClusters"),
    "dlqPendingFor": ("OrpycamcpDlqPendingTooLong",),
    "dlqOldestPendingFor": ("OrpycamcpDlqOldestPendingTooOld",),
    "dlqPendingAgeUnknownFor": ("OrpycamcpDlqPendingAgeUnknown",),
    "preservationExhaustedFor": ("OrpycamcpPreservationArtifactsExhausted",),
    "auditChainUndeclaredBreaksFor": ("OrpycamcpAuditChainUndeclaredBreaks",),
    "auditChainVerificationFailedFor": ("OrpycamcpAuditChainVerificationFailed",),
    "auditChainVerificationStaleFor": ("OrpycamcpAuditChainVerificationStale",),
    "auditChainNeverVerifiedFor": ("OrpycamcpAuditChainNeverVerified",),
    "migrationLockHeldFor": ("OrpycamcpMigrationLockHeldTooLong",),
    "purgeStoppedFor": ("OrpycamcpDeadLetterPurgeStopped", "OrpycamcpDedupPurgeStopped"),
    "streamPendingTooOldFor": ("OrpycamcpStreamPendingTooOld",),
    "streamPendingAgeUnknownFor": ("OrpycamcpStreamPendingAgeUnknown",),
    "streamNotConsumedFor": ("OrpycamcpStreamNotConsumed",),
    "streamUndeliveredUnknownFor": ("OrpycamcpStreamUndeliveredUnknown",),
    "deadletterStreamEntriesTooOldFor": ("OrpycamcpDeadletterStreamEntriesTooOld",),
    "backlogPendingFor": ("OrpycamcpBacklogPendingTooLong",),
    "backlogOldestPendingFor": ("OrpycamcpBacklogOldestPendingTooOld",),
    "backlogPendingAgeUnknownFor": ("OrpycamcpBacklogPendingAgeUnknown",),
    "backlogArrivalsHighFor": ("OrpycamcpBacklogArrivalsHigh",),
}
# The alerts whose expression holds the key's duration, in seconds or as written
# (an age compared, a window read, a range, an offset).
SECONDS = {
    "signalStaleAge": ("OrpycamcpSignalStale",),
    "databaseReplayLagAge": ("OrpycamcpDatabaseReplayLagHigh",),
    "redisReplicaLagAge": ("OrpycamcpRedisReplicaLagHigh",),
    "dlqOldestPendingAge": ("OrpycamcpDlqOldestPendingTooOld",),
    "auditChainVerificationAge": ("OrpycamcpAuditChainVerificationStale",),
    "streamNotConsumedIdle": ("OrpycamcpStreamNotConsumed", "OrpycamcpStreamUndeliveredUnknown"),
    "deadletterStreamGrowthWindow": ("OrpycamcpDeadletterStreamGrowing",),
    "backlogOldestPendingAge": ("OrpycamcpBacklogOldestPendingTooOld",),
    "backlogOldestLookback": ("OrpycamcpBacklogPendingAgeUnknown",),
}


# Keys only the dashboard reads: no rule changes with them (checked below), and
# test_each_window_reaches_its_alerts reads them on the render's dashboard.
DASHBOARD_KEYS = (
    "dashboardUid",
    "dashboardTitle",
    "dashboardTags",
    "dashboardRefresh",
    "datasourceType",
    "datasourceRegex",
)


def seconds_in(value: str, expr: str) -> bool:
    number = int(parse_duration(value))
    return bool(re.search(rf"(?<![\w.]){number}(?![\w.])|(?<![\w.]){value}(?![a-z])", expr))


def test_every_key_is_set_otherwise_by_a_render() -> None:
    tool("jsonnet")
    defaults = mixin.default_config()
    assert set(defaults) == ELSEWHERE | set(WINDOWS) | {"orpycamcpSelector", "clusterLabel"}
    assert not ELSEWHERE & set(WINDOWS)
    assert all(value != defaults[key] for key, value in WINDOWS.items())
    durations = [value for value in WINDOWS.values() if isinstance(value, str) and re.fullmatch(r"\d+[smhdw]", value)]
    assert len(durations) == len(set(durations))


def test_each_window_reaches_its_alerts() -> None:
    """A `for` key is the `for` of exactly its alerts; an age or window is in their expressions."""
    tool("jsonnet")
    rendering = mixin.evaluate(WINDOWS)
    alerts = {rule["alert"]: rule for group in rendering.alerts["groups"] for rule in group["rules"]}
    for key, names in FOR.items():
        assert {name for name, rule in alerts.items() if rule.get("for") == WINDOWS[key]} == set(names), key
    for key, names in SECONDS.items():
        assert all(seconds_in(WINDOWS[key], alerts[name]["expr"]) for name in names), key
    purge = int(parse_duration(WINDOWS["purgeInterval"]))
    for key, name in (
        ("deadLetterPurgeHorizon", "OrpycamcpDeadLetterPurgeStopped"),
        ("dedupPurgeHorizon", "OrpycamcpDedupPurgeStopped"),
    ):
        assert (
            f'_seconds:max{{job="orpycamcp-exporter"}} > {int(parse_duration(WINDOWS[key])) + 2 * purge}\n'
            in (alerts[name]["expr"])
        ), key
    # The lock's timeout is in words only: the page comes 7 minutes before a migrator fails closed.
    lock = alerts["OrpycamcpMigrationLockHeldTooLong"]["annotations"]["description"]
    assert "fails closed 7 minutes later (MIGRATIONS_LOCK_TIMEOUT_S 15 minutes:" in lock
    growing = alerts["OrpycamcpBacklogPendingGrowing"]["expr"]
    steps = [f"offset {20 * step}m" for step in range(1, WINDOWS["backlogGrowthSteps"] + 1)]
    assert all(offset in growing for offset in steps)
    assert "offset 80m" not in growing
    (dashboard,) = rendering.dashboards.values()
    assert (dashboard["uid"], dashboard["title"], dashboard["tags"], dashboard["refresh"]) == (
        WINDOWS["dashboardUid"],
        WINDOWS["dashboardTitle"],
        WINDOWS["dashboardTags"],
        WINDOWS["dashboardRefresh"],
    )
    (source,) = [v for v in dashboard["templating"]["list"] if v["type"] == "datasource"]
    assert (source["query"], source["regex"]) == (WINDOWS["datasourceType"], WINDOWS["datasourceRegex"])


@pytest.mark.parametrize(
    ("config", "refusal"),
    [
        ({"orpycamcpSelector": 'job=~"orpycamcp.*"'}, "needs at least one label matched with ="),
        # 510 s + 90 s: the page exactly when migrators fail closed, not before.
        ({"migrationLockHeldFor": "510s"}, "must stay below migrationLockTimeout"),
    ],
    ids=["no-equal-matcher", "lock-page-at-the-timeout"],
)
def test_a_config_the_rules_cannot_keep_is_refused(config: dict[str, str], refusal: str) -> None:
    tool("jsonnet")
    with pytest.raises(mixin.MixinError, match=refusal):
        mixin.evaluate(config)


def cut_tests(text: str, names: set[str]) -> dict[str, Any]:
    """A promtool test file cut to its checks of `names`: the alerts named, the
    expressions naming one (their groups' input series kept whole)."""
    named = mixin.naming(names)
    document = yaml.safe_load(text)
    groups = []
    for group in document["tests"]:
        alerts = [check for check in group.get("alert_rule_test", []) if check["alertname"] in names]
        exprs = [check for check in group.get("promql_expr_test", []) if named.search(check["expr"])]
        if alerts or exprs:
            groups.append({**group, "alert_rule_test": alerts, "promql_expr_test": exprs})
    return {**document, "tests": groups}


def cut_rules(rendering: mixin.Rendering, names: set[str], exprs: list[str]) -> dict[str, Any]:
    """The render's rules cut to `names` and every rule they or `exprs` read (a record, or
    an alert through ALERTS), transitively: promtool then evaluates a few rules, not all of
    them, at every step."""
    read = mixin.reads(rendering)
    named = mixin.naming(read)
    kept = mixin.reached({*names, *(name for expr in exprs for name in named.findall(expr))}, read)
    groups = [
        {**group, "rules": [rule for rule in group["rules"] if mixin.rule_name(rule) in kept]}
        for group in mixin.rule_groups(rendering)
    ]
    return {"groups": [group for group in groups if group["rules"]]}


def promtool_cut(rules: dict[str, Any], tests: dict[str, dict[str, Any]]) -> subprocess.CompletedProcess[str]:
    """The cut checks against the cut rules, the groups evaluated in each file's own
    `group_eval_order` (records first, tests/alerts/test_rules.py: a group the cut left out
    is named there and never evaluated)."""
    with tempfile.TemporaryDirectory(prefix="config-key-") as directory:
        paths = []
        for name, document in tests.items():
            path = Path(directory) / "tests" / name
            path.parent.mkdir(exist_ok=True)
            path.write_text(yaml.safe_dump(document, sort_keys=False), encoding="utf-8")
            paths.append(path)
        return promtool_on(yaml.safe_dump(rules, sort_keys=False), paths, Path(directory))


@pytest.fixture(scope="module")
def default_rendering() -> mixin.Rendering:
    tool("jsonnet")
    return mixin.evaluate_rules({}, mixin.MIXIN_DIR)


# The keys only render checks read otherwise, at their values there.
ALONE = {**WINDOWS, **OTHER_CADENCES}


@pytest.mark.parametrize("key", sorted(ALONE))
def test_each_key_alone_fails_a_promtool_test_of_the_rules_it_changes(
    key: str, default_rendering: mixin.Rendering
) -> None:
    """The key set alone to its value here: the default files' checks of the rules it
    changes, which pass on the default rules, fail on these (a key no test observes
    would pass). Only those checks run, on those rules and the records they read."""
    rendering = mixin.evaluate_rules({key: ALONE[key]}, mixin.MIXIN_DIR)
    changed, _ = affected(by_name(default_rendering), rendering)
    if key in DASHBOARD_KEYS:
        assert not changed, f"{key} is the dashboard's, yet changes rules: {sorted(changed)}"
        return
    assert changed, f"{key} changes no rule"
    tests = {path.name: cut_tests(path.read_text(encoding="utf-8"), changed) for path in TESTS_DIR.glob("*.test.yml")}
    tests = {name: document for name, document in tests.items() if document["tests"]}
    assert tests, f"no default test file checks {sorted(changed)}"
    exprs = [
        check["expr"]
        for document in tests.values()
        for group in document["tests"]
        for check in group["promql_expr_test"]
    ]
    passed = promtool_cut(cut_rules(default_rendering, changed, exprs), tests)
    assert passed.returncode == 0, (
        f"the cut checks of {sorted(changed)} fail on the default rules: {passed.stdout[-600:]}"
    )
    failed = promtool_cut(cut_rules(rendering, changed, exprs), tests)
    output = failed.stdout + failed.stderr
    assert failed.returncode != 0, f"{key}={ALONE[key]!r} changes {sorted(changed)}; every default check of them passes"
    assert [name for name in changed if name in output], output[-600:]
