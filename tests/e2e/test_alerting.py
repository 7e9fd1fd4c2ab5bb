"""End to end: the real exporter over real PostgreSQL and Redis, scraped every
second by a real Prometheus with the shipped rules (shortened), alerting a real
Alertmanager with the example configuration."""

from __future__ import annotations

import subprocess
import time
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from devkit.process import RunningProcess, exporter_process, http_get
from devkit.servers import PostgresServer, RedisServer
from devkit.tools import tool
from registry.values import STREAM_GROUPS
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.stack import active_alerts, alertmanager, prometheus, query, wait_for
from tests.grafana.test_dashboard import panel_exprs, substitute
from tests.platform import Platform, create_platform

REPO = Path(__file__).resolve().parents[2]
EXPECTED_FIRING = {
    "OrpycamcpDlqPendingTooLong",
    "OrpycamcpDlqOldestPendingTooOld",
    "OrpycamcpPreservationArtifactsExhausted",
    "OrpycamcpAuditChainUndeclaredBreaks",
    "OrpycamcpAuditChainVerificationFailed",
    "OrpycamcpStreamPendingTooOld",
    "OrpycamcpDeadletterStreamEntriesTooOld",
    # The other groups of the poison pill's stream were created at `$` with no
    # consumer: the entry waits undelivered and nobody reads it.
    "OrpycamcpStreamNotConsumed",
    # globex's terminal dead letter and dedup row, older than their purges leave them.
    "OrpycamcpDeadLetterPurgeStopped",
    "OrpycamcpDedupPurgeStopped",
}
DLQ_VALUE_ALERTS = {"OrpycamcpDlqPendingTooLong", "OrpycamcpDlqOldestPendingTooOld"}
# Every value alert of a signal that reads evento_dead_letter: held while one tenant's table is gone.
DEAD_LETTER_TABLE_ALERTS = {
    **dict.fromkeys(DLQ_VALUE_ALERTS, "dlq"),
    "OrpycamcpDeadLetterPurgeStopped": "housekeeping",
    "OrpycamcpDedupPurgeStopped": "housekeeping",
}


def stream_id(moment: datetime) -> str:
    return f"{int(moment.timestamp() * 1000)}-0"


def load_problems(platform: Platform, redis_url: str) -> None:
    import asyncio

    now = datetime.now(UTC)

    async def database() -> None:
        await platform.add_tenant("acme")
        await platform.add_tenant("globex")
        await platform.add_dead_letter("acme", "e1", "signature-service", "pending", now - timedelta(days=2))
        await platform.add_retry("globex", "d1", "document", "sealing", "exhausted")
        # The purges stopped: a dead letter resolved 100 days ago, a dedup row 10 days old.
        await platform.add_dead_letter("globex", "e9", "workflow-service", "resolved", now - timedelta(days=101))
        await platform.execute(
            """UPDATE "tenant_globex".evento_dead_letter SET resolved_at = $1 WHERE event_id = 'e9'""",
            now - timedelta(days=100),
        )
        await platform.execute(
            """INSERT INTO "tenant_globex".notification_processed_events VALUES ('n9', $1)""",
            now - timedelta(days=10),
        )
        await platform.add_audit_run(
            "complete", now - timedelta(minutes=5), breaks=2, declared_breaks=0, verification_ok=False
        )

    asyncio.run(database())
    client = redis.Redis.from_url(redis_url, decode_responses=True)
    try:
        client.flushall()
        for stream, group in STREAM_GROUPS:
            client.xgroup_create(stream, group, id="$", mkstream=True)
        # A poison pill delivered an hour ago and never acknowledged.
        client.xadd("orpycamcp.document.events", {"event": "document.signed"}, id=stream_id(now - timedelta(hours=1)))
        client.xreadgroup("signature-service", "worker-1", {"orpycamcp.document.events": ">"})
        # More than one stream node (100 entries, what `XTRIM MINID ~` keeps at most)
        # of dead letters older than the 30-day trim horizon: the trim is not running.
        for index in range(101):
            client.xadd(
                "orpycamcp.signature.deadletter",
                {"error": "x"},
                id=stream_id(now - timedelta(days=40) + timedelta(milliseconds=index)),
            )
    finally:
        client.close()


def alert_states(am: RunningProcess) -> dict[tuple[str, str], dict[str, Any]]:
    return {
        (alert["labels"]["alertname"], alert["labels"].get("signal", "")): alert["status"]
        for alert in active_alerts(am)
        if alert["labels"]["alertname"].startswith("Orpycamcp")
    }


def names(am: RunningProcess, state: str = "active") -> set[str]:
    return {name for (name, _), status in alert_states(am).items() if status["state"] == state}


@pytest.fixture
def stack(
    pg_server: PostgresServer, redis: RedisServer, tmp_path: Path
) -> Iterator[tuple[Platform, RunningProcess, RunningProcess, RunningProcess]]:
    import asyncio

    platform = asyncio.run(create_platform(pg_server))
    load_problems(platform, redis.url)
    rules = write_shortened_rules(
        tmp_path / "rules.yml", for_duration="2s", interval="1s", offset="10s", keep_firing_for="20s"
    )
    args = ["--database.url", platform.exporter_url, "--redis.url", redis.url, "--ttl", "1", "--deadline", "0.8"]
    with (
        exporter_process(args, tmp_path) as exporter,
        alertmanager(REPO / "alerts" / "alertmanager.example.yml", tmp_path) as am,
        prometheus(exporter.port, am.port, rules, tmp_path) as prom,
    ):
        yield platform, exporter, prom, am


def test_alerts_fire_are_inhibited_and_resolve(
    stack: tuple[Platform, RunningProcess, RunningProcess, RunningProcess],
) -> None:
    import asyncio

    platform, exporter, prom, am = stack

    # 1. Exactly the expected alerts become active.
    wait_for(lambda: names(am) == EXPECTED_FIRING, 90, lambda: (names(am), prom.log()))
    # Given time for an alert that should not fire, or an inhibition that should not hold,
    # the same seen again rather than asserted at one instant: a loaded Prometheus that
    # resends late lets Alertmanager resolve one for a moment.
    time.sleep(4)
    wait_for(
        lambda: names(am) == EXPECTED_FIRING and names(am, "suppressed") == set(),
        90,
        lambda: (names(am), names(am, "suppressed")),
    )

    # 2. Every dashboard query returns data from this Prometheus.
    # Except the families this stack has no reason to emit: no backlog is
    # declared, and the exporter reads primaries (no replica lag).
    # Every signal is measured here, and the database identity read: no failure reason either.
    absent_here = (
        "orpycamcp_backlog_",
        'signal=~"$backlog"',
        "orpycamcp_database_replay_lag_seconds",
        "orpycamcp_redis_replica_lag_seconds",
        "orpycamcp_signal_failure_info",
        "orpycamcp_database_identity_failure_info",
        # Only while a group's undelivered count is withheld (its per-reason count stays).
        "orpycamcp_stream_undelivered_unknown{",
        # Only while the migration lock is held: no migration runs here.
        "orpycamcp_migration_lock_holder_session_start",
    )
    exprs = [expr for expr in panel_exprs() if not any(part in expr for part in absent_here)]
    assert len(exprs) < len(panel_exprs()), "the exempted panels are still on the dashboard"

    # The platform totals wait until the clusters known now were known a minute
    # ago (the rules' warm-up after Prometheus starts).
    def empty() -> list[str]:
        return [expr for expr in exprs if not query(prom, substitute(expr))]

    wait_for(lambda: empty() == [], 90, lambda: f"dashboard queries without data: {empty()}")

    # 3. The live scrape passes promtool's lint.
    page = http_get(exporter.url + "/metrics").content
    lint = subprocess.run([tool("promtool"), "check", "metrics"], input=page, capture_output=True, timeout=30)
    assert lint.returncode == 0, lint.stdout + lint.stderr
    assert lint.stdout + lint.stderr == b""

    # 4. dlq becomes unmeasurable, and housekeeping, which reads the same table:
    #    their value alerts are held and inhibited while OrpycamcpSignalUnmeasured
    #    is active for each.
    asyncio.run(platform.execute('DROP TABLE "tenant_acme".evento_dead_letter'))

    def dlq_inhibited() -> bool:
        states = alert_states(am)
        unmeasured = [states.get(("OrpycamcpSignalUnmeasured", signal)) for signal in ("dlq", "housekeeping")]
        held = [states.get(pair) for pair in DEAD_LETTER_TABLE_ALERTS.items()]
        return (
            all(status is not None and status["state"] == "active" for status in unmeasured)
            and all(status is not None and status["state"] == "suppressed" and status["inhibitedBy"] for status in held)
            and names(am) == (EXPECTED_FIRING - set(DEAD_LETTER_TABLE_ALERTS)) | {"OrpycamcpSignalUnmeasured"}
        )

    wait_for(dlq_inhibited, 60, lambda: alert_states(am))
    assert query(prom, 'orpycamcp_signal_measured{signal="dlq"}')[0]["value"][1] == "0"
    assert query(prom, "orpycamcp_dlq_pending_events") == []
    # The page says why, and so does the alert Alertmanager received.
    failure = query(prom, 'orpycamcp_signal_failure_info{signal="dlq"}')
    assert [series["metric"]["reason"] for series in failure] == ["missing_table"]
    (unmeasured,) = [
        alert
        for alert in active_alerts(am)
        if alert["labels"]["alertname"] == "OrpycamcpSignalUnmeasured" and alert["labels"].get("signal") == "dlq"
    ]
    assert "Reason now: missing_table" in unmeasured["annotations"]["description"]

    # 5. Restored (the tenant's table is back, empty): the signals are measured
    #    again, the unmeasured alerts and the dlq value alerts resolve; globex's
    #    purges are still stopped.
    asyncio.run(
        platform.execute("SELECT public.orpycamcp_create_tenant_schema('acme'), public.orpycamcp_grant_tenant('acme')")
    )

    def dlq_resolved() -> bool:
        current = names(am) | names(am, "suppressed")
        return (
            "OrpycamcpSignalUnmeasured" not in current
            and not current & DLQ_VALUE_ALERTS
            and names(am) == EXPECTED_FIRING - DLQ_VALUE_ALERTS
        )

    wait_for(dlq_resolved, 90, lambda: alert_states(am))
