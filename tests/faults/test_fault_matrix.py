"""The fault matrix: for each fault, the scrape answers within the scrape timeout,
only the affected signals are unmeasured (no value series, last success kept),
the others stay measured, the same exporter measures them again within one TTL
of the fault clearing, no connection is leaked and nothing is written.

Real PostgreSQL and Redis servers throughout; faults are made by stopping,
killing, pausing, locking, proxying and editing them, never by mocking."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import AsyncIterator

import asyncpg
import pytest
import redis.asyncio

from devkit.servers import LocalPostgres, PostgresServer, RedisServer, free_port, start_postgres
from exporter.scrape import Exporter
from tests.faults.kit import (
    DEADLINE,
    LAST_SUCCESS,
    MAX_CONNECTIONS,
    POSTGRES_SIGNALS,
    TTL,
    StallProxy,
    assert_page,
    assert_role_cannot_write,
    capture,
    eventually,
    exercise_fault,
    last_successes,
    reasons,
    row_writes,
    settled_sessions,
    timed_scrape,
)
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import make_exporter

pytestmark = pytest.mark.anyio

OPTIONS = {"ttl": f"{TTL:g}", "deadline": f"{DEADLINE:g}"}


async def seeded(platform: Platform, *slugs: str) -> None:
    """Tenants with a pending dead letter, an exhausted retry each, and one complete audit run."""
    for slug in slugs:
        await platform.add_tenant(slug)
        await platform.add_dead_letter(slug, "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
        await platform.add_retry(slug, "a1", "document", "fixity", "exhausted")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


async def exporter_waiting_on_a_lock(platform: Platform) -> bool:
    rows = await platform.fetch(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = 'orpycamcp_exporter' AND wait_event_type = 'Lock'"
    )
    waiting: int = rows[0]["n"]
    return waiting > 0


# --- 1. PostgreSQL down when the exporter starts ------------------------------------------------------------------


async def test_postgres_down_when_the_exporter_starts(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme")
    own_pg.stop()
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        page = await timed_scrape(exporter)
        assert_page(page, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))  # never measured: no last success
        assert reasons(caplog) == {"connection_error"}
        own_pg.start()
        assert await platform.exporter_sessions() == 0
        await asyncio.sleep(TTL + 0.1)
        page = await timed_scrape(exporter)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0
    await assert_role_cannot_write(platform)


# --- 2. PostgreSQL killed during a measurement --------------------------------------------------------------------


async def test_postgres_killed_while_a_measurement_is_in_flight(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme")
    deadline, ttl = 5.0, 6.0
    exporter = make_exporter(platform.exporter_url, streams_redis.url, ttl=f"{ttl:g}", deadline=f"{deadline:g}")
    locker = await asyncpg.connect(platform.admin_url)
    try:
        await locker.execute('BEGIN; LOCK TABLE "tenant_acme".evento_dead_letter IN ACCESS EXCLUSIVE MODE')
        started = time.monotonic()
        scraping = asyncio.create_task(timed_scrape(exporter, timeout=deadline + 1))
        assert await eventually(lambda: exporter_waiting_on_a_lock(platform), deadline / 2)

        async def others_done() -> bool:
            return all(exporter.caches[name].last is not None for name in ("preservation", "audit_chain", "streams"))

        await eventually(others_done, 1.0)
        own_pg.stop(signal.SIGKILL)  # the dlq statement is in flight, blocked on the lock
        page = await scraping
        assert time.monotonic() - started < deadline, "the killed connection was not noticed before the deadline"
        assert_page(page, ("dlq",), kept={"dlq": None})
        assert reasons(caplog, "dlq") == {"connection_error"}
    finally:
        locker.terminate()
    try:
        own_pg.start()
        await asyncio.sleep(ttl + 0.1)
        page = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


# --- 3. PostgreSQL restarted between scrapes (stale pooled connections) -------------------------------------------


@pytest.mark.parametrize("mode", [signal.SIGINT, signal.SIGKILL], ids=["fast-shutdown", "crash"])
async def test_postgres_restarted_between_scrapes_costs_no_measurement(
    own_pg: PostgresServer, streams_redis: RedisServer, mode: signal.Signals, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme", "globex")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        first = await timed_scrape(exporter)
        assert_page(first, ())
        assert await platform.exporter_sessions() >= 1  # connections kept for the next refresh
        own_pg.stop(mode)
        own_pg.start()
        await asyncio.sleep(TTL + 0.1)
        # The database is up when the next measurement runs: the stale connections are
        # replaced, not reported as a failure.
        page = await timed_scrape(exporter)
        assert_page(page, ())
        assert reasons(caplog) == set()
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 2
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


# --- 4. A table locked ACCESS EXCLUSIVE by another session --------------------------------------------------------


@pytest.mark.parametrize(
    ("table", "affected"),
    [
        ('"tenant_acme".preservation_retry', ("preservation",)),
        ('"tenant_acme".evento_dead_letter', ("dlq",)),
        ("public.audit_chain_runs", ("audit_chain",)),
    ],
    ids=["preservation", "dlq", "audit_chain"],
)
async def test_a_locked_table_is_a_statement_timeout_for_its_signal_only(
    platform: Platform,
    streams_redis: RedisServer,
    table: str,
    affected: tuple[str, ...],
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    locker = await asyncpg.connect(platform.admin_url)

    async def inject() -> None:
        await locker.execute(f"BEGIN; LOCK TABLE {table} IN ACCESS EXCLUSIVE MODE")

    async def clear() -> None:
        await locker.execute("ROLLBACK")

    try:
        await exercise_fault(platform, exporter, affected, inject, clear)
        assert reasons(caplog) <= {"lock_timeout", "statement_timeout", "timeout"}
        assert {r for s in affected for r in reasons(caplog, s)}
    finally:
        await locker.close()
        await exporter.close()


async def test_both_tenant_tables_locked_leave_audit_chain_measured(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """A migration holding every tenant table must not starve the signal of another table."""
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    locker = await asyncpg.connect(platform.admin_url)

    async def inject() -> None:
        await locker.execute(
            'BEGIN; LOCK TABLE "tenant_acme".evento_dead_letter, "tenant_acme".preservation_retry'
            " IN ACCESS EXCLUSIVE MODE"
        )

    async def clear() -> None:
        await locker.execute("ROLLBACK")

    try:
        await exercise_fault(platform, exporter, ("dlq", "preservation"), inject, clear)
    finally:
        await locker.close()
        await exporter.close()


# --- 5. A network stall between the exporter and PostgreSQL -------------------------------------------------------


@pytest.fixture
async def stalled(platform: Platform, streams_redis: RedisServer) -> AsyncIterator[tuple[StallProxy, Exporter]]:
    """An exporter that reaches PostgreSQL through a TCP proxy the test can stall."""
    await seeded(platform, "acme")
    proxy = StallProxy(platform.server.port)
    await proxy.start()
    proxied = platform.exporter_url.replace(f":{platform.server.port}/", f":{proxy.port}/")
    exporter = make_exporter(proxied, streams_redis.url, **OPTIONS)
    try:
        yield proxy, exporter
    finally:
        proxy.resume()
        await exporter.close()
        await proxy.close()


async def test_a_stalled_network_is_cut_at_the_deadline_and_recovers(
    platform: Platform, stalled: tuple[StallProxy, Exporter], caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    proxy, exporter = stalled

    async def inject() -> None:
        proxy.stall()

    async def clear() -> None:
        proxy.resume()

    await exercise_fault(platform, exporter, POSTGRES_SIGNALS, inject, clear)
    assert reasons(caplog) == {"timeout"}


async def test_a_connection_attempt_into_a_stall_is_cut_at_the_deadline(
    platform: Platform, stalled: tuple[StallProxy, Exporter], caplog: pytest.LogCaptureFixture
) -> None:
    """Stalled before the first connection: the handshake itself hangs."""
    capture(caplog)
    proxy, exporter = stalled

    async def inject() -> None:
        proxy.stall()

    async def clear() -> None:
        proxy.resume()

    await inject()
    run = await exercise_fault(platform, exporter, POSTGRES_SIGNALS, inject, clear, warm=False)
    assert_page(run.before, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))
    assert proxy.accepted >= 1
    assert reasons(caplog) == {"timeout"}


# --- 6. too many clients ------------------------------------------------------------------------------------------


@pytest.fixture
def tiny_pg() -> LocalPostgres:
    return start_postgres({"max_connections": "5", "superuser_reserved_connections": "0"})


async def test_too_many_clients(
    tiny_pg: LocalPostgres, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    hogs: list[asyncpg.Connection] = []
    try:
        platform = await create_platform(tiny_pg)
        await seeded(platform, "acme")
        exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
        try:
            first = await timed_scrape(exporter)
            assert_page(first, ())
            kept = last_successes(first)
            await exporter.close()  # its connections go: the server's 5 slots are for the other clients
            assert await settled_sessions(platform, 0) == 0
            writes = await row_writes(platform)
            while True:
                try:
                    hogs.append(await asyncpg.connect(platform.admin_url))
                except asyncpg.exceptions.TooManyConnectionsError:
                    break
            assert len(hogs) == 5
            await asyncio.sleep(TTL + 0.1)
            page = await timed_scrape(exporter)
            assert_page(page, POSTGRES_SIGNALS, kept=kept)
            assert reasons(caplog) == {"too_many_connections"}
            assert "too many clients" in caplog.text
            while hogs:
                await hogs.pop().close()
            await asyncio.sleep(TTL + 0.1)
            assert_page(await timed_scrape(exporter), ())
            assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
        finally:
            await exporter.close()
        assert await settled_sessions(platform, 0) == 0
        assert await row_writes(platform) == writes
        await assert_role_cannot_write(platform)
    finally:
        for hog in hogs:
            hog.terminate()
        tiny_pg.remove()


# --- 7. A tenant's schema dropped between listing and counting; never created --------------------------------------


async def test_a_schema_dropped_between_tenant_listing_and_counting(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme", "bygone")
    deadline, ttl = 5.0, 6.0
    exporter = make_exporter(platform.exporter_url, streams_redis.url, ttl=f"{ttl:g}", deadline=f"{deadline:g}")
    dropper = await asyncpg.connect(platform.admin_url)
    try:
        first = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(first, ())
        kept = {s: first.get(LAST_SUCCESS, signal=s) for s in ("dlq", "preservation", "audit_chain", "streams")}
        await dropper.execute(
            'BEGIN; LOCK TABLE "tenant_bygone".evento_dead_letter, "tenant_bygone".preservation_retry'
            " IN ACCESS EXCLUSIVE MODE"
        )
        await asyncio.sleep(ttl + 0.1)
        scraping = asyncio.create_task(timed_scrape(exporter, timeout=deadline + 1))
        # The tenants are listed; the count of bygone's table waits for the lock ...
        assert await eventually(lambda: exporter_waiting_on_a_lock(platform), deadline / 2)
        # ... while its schema goes away.
        await dropper.execute('DROP SCHEMA "tenant_bygone" CASCADE; COMMIT')
        page = await scraping
        assert_page(page, ("dlq", "preservation"), kept=kept)
        assert reasons(caplog) == {"missing_table"}

        await platform.execute("UPDATE public.tenants SET provisioning_status = 'deprovisioning' WHERE slug = 'bygone'")
        await asyncio.sleep(ttl + 0.1)
        page = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await dropper.close()
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


async def test_a_tenant_whose_schema_never_existed(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        await platform.execute("INSERT INTO public.tenants (slug) VALUES ('ghost')")

    async def clear() -> None:
        await platform.execute("SELECT public.orpycamcp_create_tenant_schema('ghost')")
        await platform.execute("SELECT public.orpycamcp_grant_tenant('ghost')")

    try:
        await exercise_fault(platform, exporter, ("dlq", "preservation"), inject, clear)
        assert reasons(caplog) == {"missing_table"}
    finally:
        await exporter.close()


async def test_a_revoked_grant_is_permission_denied_for_its_signal_only(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        await platform.execute('REVOKE SELECT ON "tenant_acme".preservation_retry FROM orpycamcp_exporter')

    async def clear() -> None:
        await platform.execute("SELECT public.orpycamcp_grant_tenant('acme')")

    try:
        await exercise_fault(platform, exporter, ("preservation",), inject, clear)
        assert reasons(caplog) == {"permission_denied"}
    finally:
        await exporter.close()


# --- 8. A value outside the registry ------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("affected", "insert", "delete"),
    [
        (
            "dlq",
            'INSERT INTO "tenant_acme".evento_dead_letter (event_id, origin_group, status, created_at)'
            " VALUES ('x1', 'billing-service', 'pending', now())",
            "DELETE FROM \"tenant_acme\".evento_dead_letter WHERE event_id = 'x1'",
        ),
        (
            "preservation",
            'INSERT INTO "tenant_acme".preservation_retry (artifact_id, artifact, phase, status)'
            " VALUES ('x1', 'hologram', 'fixity', 'exhausted')",
            "DELETE FROM \"tenant_acme\".preservation_retry WHERE artifact_id = 'x1'",
        ),
        (
            "preservation",
            'INSERT INTO "tenant_acme".preservation_retry (artifact_id, artifact, phase, status)'
            " VALUES ('x1', 'document', 'teleport', 'exhausted')",
            "DELETE FROM \"tenant_acme\".preservation_retry WHERE artifact_id = 'x1'",
        ),
    ],
    ids=["unknown-origin-group", "unknown-artifact", "unknown-phase"],
)
async def test_a_value_outside_the_registry(
    platform: Platform,
    streams_redis: RedisServer,
    affected: str,
    insert: str,
    delete: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        await platform.execute(insert)

    async def clear() -> None:
        await platform.execute(delete)

    try:
        await exercise_fault(platform, exporter, (affected,), inject, clear)
        assert reasons(caplog) == {"unregistered_value"}
        assert "outside the registry" in caplog.text
    finally:
        await exporter.close()


async def test_unknown_values_in_rows_not_counted_do_not_matter(platform: Platform, streams_redis: RedisServer) -> None:
    await seeded(platform, "acme")
    await platform.execute(
        'INSERT INTO "tenant_acme".evento_dead_letter (event_id, origin_group, status, created_at)'
        " VALUES ('x1', 'billing-service', 'resolved', now())"
    )
    await platform.execute(
        'INSERT INTO "tenant_acme".preservation_retry (artifact_id, artifact, phase, status)'
        " VALUES ('x1', 'hologram', 'teleport', 'retrying')"
    )
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        assert_page(await timed_scrape(exporter), ())
    finally:
        await exporter.close()


# --- 9. NULLs and out-of-range values where the contract says otherwise --------------------------------------------

DL = '"tenant_acme".evento_dead_letter'
PR = '"tenant_acme".preservation_retry'
RUNS = "public.audit_chain_runs"


@pytest.mark.parametrize(
    ("affected", "setup", "insert", "delete"),
    [
        (
            "dlq",
            f"ALTER TABLE {DL} ALTER created_at DROP NOT NULL",
            f"INSERT INTO {DL} (event_id, origin_group, status, created_at)"
            " VALUES ('x1', 'workflow-service', 'pending', NULL)",
            f"DELETE FROM {DL} WHERE event_id = 'x1'",
        ),
        (
            "dlq",
            f"ALTER TABLE {DL} ALTER origin_group DROP NOT NULL",
            f"INSERT INTO {DL} (event_id, origin_group, status, created_at) VALUES ('x1', NULL, 'pending', now())",
            f"DELETE FROM {DL} WHERE event_id = 'x1'",
        ),
        (
            "dlq",
            "",
            f"INSERT INTO {DL} (event_id, origin_group, status, created_at)"
            " VALUES ('x1', 'workflow-service', 'pending', '-infinity')",
            f"DELETE FROM {DL} WHERE event_id = 'x1'",
        ),
        (
            "dlq",
            "",
            f"INSERT INTO {DL} (event_id, origin_group, status, created_at)"
            " VALUES ('x1', 'knowledge-service', 'pending', 'infinity')",
            f"DELETE FROM {DL} WHERE event_id = 'x1'",
        ),
        (
            "dlq",
            "",
            f"INSERT INTO {DL} (event_id, origin_group, status, created_at)"
            " VALUES ('x1', 'knowledge-service', 'pending', '1900-01-01 00:00:00+00')",
            f"DELETE FROM {DL} WHERE event_id = 'x1'",
        ),
        (
            "preservation",
            f"ALTER TABLE {PR} ALTER artifact DROP NOT NULL",
            f"INSERT INTO {PR} (artifact_id, artifact, phase, status) VALUES ('x1', NULL, 'fixity', 'exhausted')",
            f"DELETE FROM {PR} WHERE artifact_id = 'x1'",
        ),
        (
            "audit_chain",
            "",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES ('2026-12-01', 'complete', NULL, 0, true)",
            f"DELETE FROM {RUNS} WHERE finished_at = '2026-12-01'",
        ),
        (
            "audit_chain",
            "",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES ('2026-12-01', 'complete', 0, 0, NULL)",
            f"DELETE FROM {RUNS} WHERE finished_at = '2026-12-01'",
        ),
        (
            "audit_chain",
            "",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES ('2026-12-01', 'complete', -3, 0, false)",
            f"DELETE FROM {RUNS} WHERE finished_at = '2026-12-01'",
        ),
        (
            "audit_chain",
            "",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES ('2026-12-01', 'complete', 0, -1, true)",
            f"DELETE FROM {RUNS} WHERE finished_at = '2026-12-01'",
        ),
        (
            "audit_chain",
            f"ALTER TABLE {RUNS} ALTER finished_at DROP NOT NULL",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES (NULL, 'complete', 0, 0, true)",
            f"DELETE FROM {RUNS} WHERE finished_at IS NULL",
        ),
        (
            "audit_chain",
            "",
            f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok)"
            " VALUES ('infinity', 'complete', 0, 0, true)",
            f"DELETE FROM {RUNS} WHERE finished_at = 'infinity'",
        ),
    ],
    ids=[
        "dlq-null-created_at",
        "dlq-null-origin_group",
        "dlq-minus-infinity-created_at",
        "dlq-infinity-created_at",
        "dlq-created_at-before-1970",
        "preservation-null-artifact",
        "audit-null-breaks",
        "audit-null-verification_ok",
        "audit-negative-breaks",
        "audit-negative-declared_breaks",
        "audit-null-finished_at",
        "audit-infinity-finished_at",
    ],
)
async def test_a_value_the_contract_rules_out(
    platform: Platform,
    streams_redis: RedisServer,
    affected: str,
    setup: str,
    insert: str,
    delete: str,
    caplog: pytest.LogCaptureFixture,
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    if setup:
        await platform.execute(setup)
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        await platform.execute(insert)

    async def clear() -> None:
        await platform.execute(delete)

    try:
        await exercise_fault(platform, exporter, (affected,), inject, clear)
        assert reasons(caplog) <= {"contract_violation", "invalid_value"}
        assert reasons(caplog)
    finally:
        await exporter.close()


# --- 10. audit_chain_runs missing ---------------------------------------------------------------------------------


async def test_audit_chain_runs_missing(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        await platform.execute("ALTER TABLE public.audit_chain_runs RENAME TO audit_chain_runs_away")

    async def clear() -> None:
        await platform.execute("ALTER TABLE public.audit_chain_runs_away RENAME TO audit_chain_runs")

    try:
        await exercise_fault(platform, exporter, ("audit_chain",), inject, clear)
        assert reasons(caplog) == {"missing_table"}
    finally:
        await exporter.close()


# --- 11. Redis down, stalled, a consumer group missing ------------------------------------------------------------


async def test_redis_down(own_redis: RedisServer, platform: Platform, caplog: pytest.LogCaptureFixture) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, own_redis.url, **OPTIONS)

    async def inject() -> None:
        own_redis.stop()

    async def clear() -> None:
        own_redis.start()
        from tests.faults.kit import create_stream_groups

        create_stream_groups(own_redis.url)  # nothing persisted across the restart

    try:
        await exercise_fault(platform, exporter, ("streams",), inject, clear)
        assert reasons(caplog) == {"connection_error"}
    finally:
        await exporter.close()


async def test_redis_stalled(own_redis: RedisServer, platform: Platform, caplog: pytest.LogCaptureFixture) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, own_redis.url, **OPTIONS)

    async def inject() -> None:
        own_redis.pause()

    async def clear() -> None:
        own_redis.resume()

    try:
        await exercise_fault(platform, exporter, ("streams",), inject, clear)
        assert reasons(caplog) == {"timeout"}
    finally:
        own_redis.resume()
        await exporter.close()


async def test_a_consumer_group_missing(
    own_redis: RedisServer, platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme")
    exporter = make_exporter(platform.exporter_url, own_redis.url, **OPTIONS)
    client = redis.asyncio.Redis.from_url(own_redis.url, decode_responses=True)

    async def inject() -> None:
        await client.xgroup_destroy("orpycamcp.workflow.events", "notification-service")

    async def clear() -> None:
        await client.xgroup_create("orpycamcp.workflow.events", "notification-service", id="0", mkstream=True)

    try:
        await exercise_fault(platform, exporter, ("streams",), inject, clear)
        assert reasons(caplog) == {"missing_group"}
    finally:
        await client.aclose()
        await exporter.close()


# --- 12. Wrong password, unknown host -----------------------------------------------------------------------------


async def test_wrong_password_is_named_and_never_logged(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme")
    rotated = "Rotated-Secret-71x"
    url = platform.exporter_url.replace(EXPORTER_PASSWORD, rotated)
    exporter = make_exporter(url, streams_redis.url, **OPTIONS)

    async def inject() -> None:
        pass  # the exporter already holds the password the database does not know yet

    async def clear() -> None:
        # The DBA finishes the rotation: the same exporter gets in at its next refresh.
        await platform.execute(f"ALTER ROLE orpycamcp_exporter PASSWORD '{rotated}'")

    try:
        writes = await row_writes(platform)
        run = await exercise_fault(platform, exporter, POSTGRES_SIGNALS, inject, clear, warm=False, role_url=url)
        assert_page(run.before, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))
        assert reasons(caplog) == {"authentication_failed"}
        assert rotated not in caplog.text
        assert EXPORTER_PASSWORD not in caplog.text
        assert await row_writes(platform) == writes
    finally:
        await exporter.close()


async def test_unknown_host_is_named_and_the_password_never_logged(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    url = f"postgresql://orpycamcp_exporter:{EXPORTER_PASSWORD}@no-such-host.invalid:{free_port()}/{platform.database}"
    exporter = make_exporter(url, streams_redis.url, **OPTIONS)
    try:
        for _ in range(2):
            page = await timed_scrape(exporter)
            assert_page(page, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))
            await asyncio.sleep(TTL + 0.1)
        assert reasons(caplog) == {"connection_error"}
        assert EXPORTER_PASSWORD not in caplog.text
    finally:
        await exporter.close()
