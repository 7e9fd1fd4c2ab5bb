"""Every `_config` key of the mixin is read where it promises: set to a value other
than its default by a promtool-tested render (devkit/mixin_variants.py: `renamed`,
`other`), by the cadences of tests/alerts/test_windows.py, or else here, where the
`for` and the threshold of each alert are checked against a render with distinct
values (a key ignored leaves its alert at the default, which none of these is)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from devkit import mixin
from devkit.mixin_variants import OTHER_CONFIG, RENAMED_CONFIG
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
