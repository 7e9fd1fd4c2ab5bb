"""The fault matrix: for each fault, the scrape answers within the scrape timeout,
only the affected signals are unmeasured (no value series, last success kept),
the others stay measured, the same exporter measures them again within one TTL
of the fault clearing, no connection is leaked and nothing is written.

Real PostgreSQL and Redis servers throughout; faults are made by stopping,
killing, pausing, locking, proxying and editing them, never by mocking. The
faults that follow the common life of `exercise_fault` are rows of one table
(FAULTS); the ones with a life of their own (a server killed mid-statement, a
schema dropped mid-measurement ...) are tests of their own. The caches run on a
FakeClock: a TTL passes when the test moves it, while deadlines stay real."""

from __future__ import annotations

import asyncio
import signal
from collections.abc import AsyncIterator

import asyncpg
import pytest

from devkit.redis_cluster import start_replica_pair
from devkit.servers import LocalPostgres, PostgresServer, RedisServer, free_port, start_postgres
from devkit.streams import create_stream_groups_at
from tests.clock import FakeClock
from tests.faults.kit import (
    DEADLINE,
    LAST_SUCCESS,
    MAX_CONNECTIONS,
    POSTGRES_SIGNALS,
    TTL,
    FaultCase,
    Scene,
    StallProxy,
    Step,
    assert_page,
    assert_role_cannot_write,
    capture,
    exercise_fault,
    last_successes,
    nothing,
    reasons,
    row_writes,
    settled_sessions,
    timed_scrape,
)
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import make_exporter
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

OPTIONS = {"ttl": f"{TTL:g}", "deadline": f"{DEADLINE:g}"}


async def seeded(platform: Platform, *slugs: str) -> None:
    """Tenants with a pending dead letter, an exhausted retry each, and one complete audit run."""
    for slug in slugs:
        await platform.add_tenant(slug)
        await platform.add_dead_letter(slug, "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
        await platform.add_retry(slug, "a1", "document", "fixity", "exhausted")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


# --- Steps of the table ---------------------------------------------------------------------------------------------


def run_sql(statement: str) -> Step:
    async def step(scene: Scene) -> None:
        await scene.platform.execute(statement)

    return step


def lock(tables: str) -> Step:
    """Another session takes ACCESS EXCLUSIVE locks and holds them until `rollback`."""

    async def step(scene: Scene) -> None:
        await (await scene.locker()).execute(f"BEGIN; LOCK TABLE {tables} IN ACCESS EXCLUSIVE MODE")

    return step


async def rollback(scene: Scene) -> None:
    await (await scene.locker()).execute("ROLLBACK")


async def stall(scene: Scene) -> None:
    assert scene.proxy is not None
    scene.proxy.stall()


async def resume_network(scene: Scene) -> None:
    assert scene.proxy is not None
    scene.proxy.resume()


async def stop_redis(scene: Scene) -> None:
    scene.redis.stop()


async def restart_redis(scene: Scene) -> None:
    scene.redis.start()
    await create_stream_groups_at(scene.redis.url)  # nothing persisted across the restart


async def pause_redis(scene: Scene) -> None:
    scene.redis.pause()


async def resume_redis(scene: Scene) -> None:
    scene.redis.resume()


async def destroy_group(scene: Scene) -> None:
    await scene.redis_client().xgroup_destroy("orpycamcp.workflow.events", "notification-service")


async def create_group(scene: Scene) -> None:
    await scene.redis_client().xgroup_create("orpycamcp.workflow.events", "notification-service", id="0", mkstream=True)


async def create_ghost_schema(scene: Scene) -> None:
    await scene.platform.execute("SELECT public.orpycamcp_create_tenant_schema('ghost')")
    await scene.platform.execute("SELECT public.orpycamcp_grant_tenant('ghost')")


# --- The table ------------------------------------------------------------------------------------------------------

LOCK_REASONS = frozenset({"lock_timeout", "statement_timeout", "timeout"})
CONTRACT_REASONS = frozenset({"contract_violation", "invalid_value"})
DL = '"tenant_acme".evento_dead_letter'
PR = '"tenant_acme".preservation_retry'
RUNS = "public.audit_chain_runs"


def locked(name: str, tables: str, affected: tuple[str, ...]) -> FaultCase:
    """A table locked ACCESS EXCLUSIVE by another session: a timeout for its signal only."""
    return FaultCase(name, affected, lock(tables), rollback, LOCK_REASONS, exact=False)


def unregistered(name: str, affected: str, insert: str, delete: str) -> FaultCase:
    """A value outside the registry in a row that counts."""
    return FaultCase(
        name,
        (affected,),
        run_sql(insert),
        run_sql(delete),
        frozenset({"unregistered_value"}),
        in_log=("outside the registry",),
    )


def ruled_out(name: str, affected: str, setup: str, insert: str, delete: str) -> FaultCase:
    """A NULL or out-of-range value where the contract rules it out (`setup` loosens the table first)."""
    return FaultCase(
        name,
        (affected,),
        run_sql(insert),
        run_sql(delete),
        CONTRACT_REASONS,
        exact=False,
        prepare=run_sql(setup) if setup else nothing,
    )


def dead_letter(value_sql: str) -> str:
    return f"INSERT INTO {DL} (event_id, origin_group, status, created_at) VALUES {value_sql}"


def audit_run(value_sql: str) -> str:
    return f"INSERT INTO {RUNS} (finished_at, scope, breaks, declared_breaks, verification_ok) VALUES {value_sql}"


DELETE_DL = f"DELETE FROM {DL} WHERE event_id = 'x1'"
DELETE_PR = f"DELETE FROM {PR} WHERE artifact_id = 'x1'"
DELETE_RUN = f"DELETE FROM {RUNS} WHERE finished_at = '2026-12-01'"

FAULTS = [
    # A table locked by another session.
    locked("locked-preservation", PR, ("preservation",)),
    locked("locked-dlq", DL, ("dlq",)),
    locked("locked-audit_chain", RUNS, ("audit_chain",)),
    # A migration holding every tenant table must not starve the signal of another table.
    locked("locked-both-tenant-tables", f"{DL}, {PR}", ("dlq", "preservation")),
    # A network stall between the exporter and PostgreSQL: cut at the deadline.
    FaultCase("network-stalled", POSTGRES_SIGNALS, stall, resume_network, frozenset({"timeout"}), proxied=True),
    # Stalled before the first connection: the handshake itself hangs.
    FaultCase(
        "connection-into-a-stall",
        POSTGRES_SIGNALS,
        stall,
        resume_network,
        frozenset({"timeout"}),
        proxied=True,
        warm=False,
    ),
    # A tenant listed whose schema was never created, then provisioned.
    FaultCase(
        "schema-never-created",
        ("dlq", "preservation"),
        run_sql("INSERT INTO public.tenants (slug) VALUES ('ghost')"),
        create_ghost_schema,
        frozenset({"missing_table"}),
    ),
    FaultCase(
        "grant-revoked",
        ("preservation",),
        run_sql(f"REVOKE SELECT ON {PR} FROM orpycamcp_exporter"),
        run_sql("SELECT public.orpycamcp_grant_tenant('acme')"),
        frozenset({"permission_denied"}),
    ),
    # A tenant whose provisioning_status is NULL (NOT NULL in the contract): it may be
    # active, so no tenant signal is summed without it.
    FaultCase(
        "tenants-null-provisioning_status",
        ("dlq", "preservation"),
        run_sql("INSERT INTO public.tenants (slug, provisioning_status) VALUES ('ghost', NULL)"),
        run_sql("DELETE FROM public.tenants WHERE slug = 'ghost'"),
        frozenset({"contract_violation"}),
        prepare=run_sql("ALTER TABLE public.tenants ALTER provisioning_status DROP NOT NULL"),
        in_log=("public.tenants.provisioning_status",),
    ),
    # A value outside the registry.
    unregistered(
        "unknown-origin-group",
        "dlq",
        dead_letter("('x1', 'billing-service', 'pending', now())"),
        DELETE_DL,
    ),
    unregistered(
        "unknown-artifact",
        "preservation",
        f"INSERT INTO {PR} (artifact_id, artifact, phase, status) VALUES ('x1', 'hologram', 'fixity', 'exhausted')",
        DELETE_PR,
    ),
    unregistered(
        "unknown-phase",
        "preservation",
        f"INSERT INTO {PR} (artifact_id, artifact, phase, status) VALUES ('x1', 'document', 'teleport', 'exhausted')",
        DELETE_PR,
    ),
    # NULLs and out-of-range values where the contract says otherwise.
    ruled_out(
        "dlq-null-created_at",
        "dlq",
        f"ALTER TABLE {DL} ALTER created_at DROP NOT NULL",
        dead_letter("('x1', 'workflow-service', 'pending', NULL)"),
        DELETE_DL,
    ),
    ruled_out(
        "dlq-null-origin_group",
        "dlq",
        f"ALTER TABLE {DL} ALTER origin_group DROP NOT NULL",
        dead_letter("('x1', NULL, 'pending', now())"),
        DELETE_DL,
    ),
    ruled_out(
        "dlq-minus-infinity-created_at",
        "dlq",
        "",
        dead_letter("('x1', 'workflow-service', 'pending', '-infinity')"),
        DELETE_DL,
    ),
    ruled_out(
        "dlq-infinity-created_at",
        "dlq",
        "",
        dead_letter("('x1', 'knowledge-service', 'pending', 'infinity')"),
        DELETE_DL,
    ),
    ruled_out(
        "dlq-created_at-before-1970",
        "dlq",
        "",
        dead_letter("('x1', 'knowledge-service', 'pending', '1900-01-01 00:00:00+00')"),
        DELETE_DL,
    ),
    ruled_out(
        "preservation-null-artifact",
        "preservation",
        f"ALTER TABLE {PR} ALTER artifact DROP NOT NULL",
        f"INSERT INTO {PR} (artifact_id, artifact, phase, status) VALUES ('x1', NULL, 'fixity', 'exhausted')",
        DELETE_PR,
    ),
    ruled_out(
        "audit-null-breaks", "audit_chain", "", audit_run("('2026-12-01', 'complete', NULL, 0, true)"), DELETE_RUN
    ),
    ruled_out(
        "audit-null-verification_ok",
        "audit_chain",
        "",
        audit_run("('2026-12-01', 'complete', 0, 0, NULL)"),
        DELETE_RUN,
    ),
    ruled_out(
        "audit-negative-breaks", "audit_chain", "", audit_run("('2026-12-01', 'complete', -3, 0, false)"), DELETE_RUN
    ),
    ruled_out(
        "audit-negative-declared_breaks",
        "audit_chain",
        "",
        audit_run("('2026-12-01', 'complete', 0, -1, true)"),
        DELETE_RUN,
    ),
    ruled_out(
        "audit-null-finished_at",
        "audit_chain",
        f"ALTER TABLE {RUNS} ALTER finished_at DROP NOT NULL",
        audit_run("(NULL, 'complete', 0, 0, true)"),
        f"DELETE FROM {RUNS} WHERE finished_at IS NULL",
    ),
    ruled_out(
        "audit-infinity-finished_at",
        "audit_chain",
        "",
        audit_run("('infinity', 'complete', 0, 0, true)"),
        f"DELETE FROM {RUNS} WHERE finished_at = 'infinity'",
    ),
    # audit_chain_runs missing: audit_chain unmeasured only.
    FaultCase(
        "audit_chain_runs-missing",
        ("audit_chain",),
        run_sql(f"ALTER TABLE {RUNS} RENAME TO audit_chain_runs_away"),
        run_sql("ALTER TABLE public.audit_chain_runs_away RENAME TO audit_chain_runs"),
        frozenset({"missing_table"}),
    ),
    # Redis down, stalled, a consumer group missing.
    FaultCase("redis-down", ("streams",), stop_redis, restart_redis, frozenset({"connection_error"}), redis="own"),
    FaultCase("redis-stalled", ("streams",), pause_redis, resume_redis, frozenset({"timeout"}), redis="own"),
    FaultCase(
        "consumer-group-missing", ("streams",), destroy_group, create_group, frozenset({"missing_group"}), redis="own"
    ),
]


@pytest.fixture
async def scene(
    case: FaultCase, request: pytest.FixtureRequest, platform: Platform, streams_redis: RedisServer
) -> AsyncIterator[Scene]:
    """The case's platform (seeded), its Redis, and the stall proxy when the case goes through one."""
    await seeded(platform, "acme")
    redis_server: RedisServer = streams_redis
    if case.redis == "own":
        redis_server = request.getfixturevalue("own_redis")
        await create_stream_groups_at(redis_server.url)
    proxy = None
    if case.proxied:
        proxy = StallProxy(platform.server.port)
        await proxy.start()
    scene = Scene(platform, redis_server, case.redis == "own", proxy)
    try:
        yield scene
    finally:
        scene.unblock()
        await scene.close()
        if proxy is not None:
            await proxy.close()


@pytest.mark.parametrize("case", FAULTS, ids=[case.name for case in FAULTS])
async def test_fault(case: FaultCase, scene: Scene, caplog: pytest.LogCaptureFixture) -> None:
    capture(caplog)
    await case.prepare(scene)
    url = scene.platform.exporter_url
    if scene.proxy is not None:
        url = url.replace(f":{scene.platform.server.port}/", f":{scene.proxy.port}/")
    clock = FakeClock()
    exporter = make_exporter(url, scene.redis.url, clock.clock, **OPTIONS)
    try:
        if not case.warm:
            await case.inject(scene)
        await exercise_fault(
            scene.platform,
            exporter,
            clock,
            case.affected,
            lambda: case.inject(scene),
            lambda: case.clear(scene),
            warm=case.warm,
        )
    finally:
        scene.unblock()
        await exporter.close()
    logged = reasons(caplog)
    if case.exact:
        assert logged == case.reasons
    else:
        assert logged <= case.reasons
        assert {reason for signal in case.affected for reason in reasons(caplog, signal)}
    for text in case.in_log:
        assert text in caplog.text
    if scene.proxy is not None:
        assert scene.proxy.accepted >= 1


# --- PostgreSQL down when the exporter starts -----------------------------------------------------------------------


async def test_postgres_down_when_the_exporter_starts(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme")
    own_pg.stop()
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, streams_redis.url, clock.clock, **OPTIONS)
    try:
        page = await timed_scrape(exporter)
        assert_page(page, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))  # never measured: no last success
        assert reasons(caplog) == {"connection_error"}
        own_pg.start()
        assert await platform.exporter_sessions() == 0
        clock.advance(TTL + 0.1)
        page = await timed_scrape(exporter)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0
    await assert_role_cannot_write(platform)


# --- PostgreSQL killed during a measurement -------------------------------------------------------------------------


async def test_postgres_killed_while_a_measurement_is_in_flight(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme")
    deadline, ttl = 5.0, 6.0
    clock = FakeClock()
    exporter = make_exporter(
        platform.exporter_url, streams_redis.url, clock.clock, ttl=f"{ttl:g}", deadline=f"{deadline:g}"
    )
    locker = await asyncpg.connect(platform.admin_url)
    try:
        await locker.execute(f"BEGIN; LOCK TABLE {DL} IN ACCESS EXCLUSIVE MODE")
        scraping = asyncio.create_task(timed_scrape(exporter, timeout=deadline + 1))
        assert await wait_until(platform.exporter_waiting_on_a_lock, deadline / 2)

        async def others_done() -> bool:
            return all(exporter.caches[name].last is not None for name in ("preservation", "audit_chain", "streams"))

        await wait_until(others_done, 1.0)
        own_pg.stop(signal.SIGKILL)  # the dlq statement is in flight, blocked on the lock
        page = await scraping
        assert_page(page, ("dlq",), kept={"dlq": None})
        # Noticed before the deadline: a statement the deadline cut would read `timeout`.
        assert reasons(caplog, "dlq") == {"connection_error"}
    finally:
        locker.terminate()
    try:
        own_pg.start()
        clock.advance(ttl + 0.1)
        page = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


# --- PostgreSQL restarted between scrapes (stale pooled connections) ------------------------------------------------


@pytest.mark.parametrize("mode", [signal.SIGINT, signal.SIGKILL], ids=["fast-shutdown", "crash"])
async def test_postgres_restarted_between_scrapes_costs_no_measurement(
    own_pg: PostgresServer, streams_redis: RedisServer, mode: signal.Signals, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform, "acme", "globex")
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, streams_redis.url, clock.clock, **OPTIONS)
    try:
        first = await timed_scrape(exporter)
        assert_page(first, ())
        assert await platform.exporter_sessions() >= 1  # connections kept for the next refresh
        # Off the event loop, as in production: the exporter's loop runs while the server
        # goes down and up, and sees its connections close.
        await asyncio.to_thread(own_pg.stop, mode)
        await asyncio.to_thread(own_pg.start)
        clock.advance(TTL + 0.1)
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


# --- too many clients -----------------------------------------------------------------------------------------------


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
        clock = FakeClock()
        exporter = make_exporter(platform.exporter_url, streams_redis.url, clock.clock, **OPTIONS)
        try:
            first = await timed_scrape(exporter)
            assert_page(first, ())
            kept = last_successes(first)
            # Unused for 3 TTLs, its connections are closed: the server's 5 slots go to other clients.
            clock.advance(3 * TTL + 0.1)
            assert await settled_sessions(platform, 0) == 0
            writes = await row_writes(platform)
            while True:
                try:
                    hogs.append(await asyncpg.connect(platform.admin_url))
                except asyncpg.exceptions.TooManyConnectionsError:
                    break
            assert len(hogs) == 5
            clock.advance(TTL + 0.1)
            page = await timed_scrape(exporter)
            assert_page(page, POSTGRES_SIGNALS, kept=kept)
            assert reasons(caplog) == {"too_many_connections"}
            assert "too many clients" in caplog.text
            while hogs:
                await hogs.pop().close()
            clock.advance(TTL + 0.1)
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


# --- A tenant's schema dropped between listing and counting ---------------------------------------------------------


async def test_a_schema_dropped_between_tenant_listing_and_counting(
    platform: Platform, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await seeded(platform, "acme", "bygone")
    deadline, ttl = 5.0, 6.0
    clock = FakeClock()
    exporter = make_exporter(
        platform.exporter_url, streams_redis.url, clock.clock, ttl=f"{ttl:g}", deadline=f"{deadline:g}"
    )
    dropper = await asyncpg.connect(platform.admin_url)
    try:
        first = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(first, ())
        kept = {s: first.get(LAST_SUCCESS, signal=s) for s in ("dlq", "preservation", "audit_chain", "streams")}
        await dropper.execute(
            'BEGIN; LOCK TABLE "tenant_bygone".evento_dead_letter, "tenant_bygone".preservation_retry'
            " IN ACCESS EXCLUSIVE MODE"
        )
        clock.advance(ttl + 0.1)
        scraping = asyncio.create_task(timed_scrape(exporter, timeout=deadline + 1))
        # The tenants are listed; the count of bygone's table waits for the lock ...
        assert await wait_until(platform.exporter_waiting_on_a_lock, deadline / 2)
        # ... while its schema goes away.
        await dropper.execute('DROP SCHEMA "tenant_bygone" CASCADE; COMMIT')
        page = await scraping
        assert_page(page, ("dlq", "preservation"), kept=kept)
        assert reasons(caplog) == {"missing_table"}

        await platform.execute("UPDATE public.tenants SET provisioning_status = 'deprovisioning' WHERE slug = 'bygone'")
        clock.advance(ttl + 0.1)
        page = await timed_scrape(exporter, timeout=deadline + 1)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await dropper.close()
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


# --- Values outside the registry in rows that are not counted -------------------------------------------------------


async def test_unknown_values_in_rows_not_counted_do_not_matter(platform: Platform, streams_redis: RedisServer) -> None:
    await seeded(platform, "acme")
    await platform.execute(dead_letter("('x1', 'billing-service', 'resolved', now())"))
    await platform.execute(
        f"INSERT INTO {PR} (artifact_id, artifact, phase, status) VALUES ('x1', 'hologram', 'teleport', 'retrying')"
    )
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        assert_page(await timed_scrape(exporter), ())
    finally:
        await exporter.close()


# --- Wrong password, unknown host -----------------------------------------------------------------------------------


async def test_wrong_password_is_named_and_never_logged(
    own_pg: PostgresServer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    platform = await create_platform(own_pg)  # the role's password is the cluster's: a server of its own
    await seeded(platform, "acme")
    rotated = "Rotated-Secret-71x"
    url = platform.exporter_url.replace(EXPORTER_PASSWORD, rotated)
    clock = FakeClock()
    exporter = make_exporter(url, streams_redis.url, clock.clock, **OPTIONS)

    async def inject() -> None:
        pass  # the exporter already holds the password the database does not know yet

    async def clear() -> None:
        # The DBA finishes the rotation: the same exporter gets in at its next refresh.
        await platform.execute(f"ALTER ROLE orpycamcp_exporter PASSWORD '{rotated}'")

    try:
        writes = await row_writes(platform)
        await exercise_fault(platform, exporter, clock, POSTGRES_SIGNALS, inject, clear, warm=False, role_url=url)
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
    clock = FakeClock()
    exporter = make_exporter(url, streams_redis.url, clock.clock, **OPTIONS)
    try:
        for _ in range(2):
            page = await timed_scrape(exporter)
            assert_page(page, POSTGRES_SIGNALS, kept=dict.fromkeys(POSTGRES_SIGNALS))
            clock.advance(TTL + 0.1)
        assert reasons(caplog) == {"connection_error"}
        assert EXPORTER_PASSWORD not in caplog.text
        assert exporter.caches["dlq"].measurements == 2  # measured again after the TTL, failing again
    finally:
        await exporter.close()


# --- A Redis replica cut from its master -----------------------------------------------------------------------------


async def test_a_redis_replica_cut_from_its_master_past_the_bound(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    """Read from a replica whose link goes down: streams unmeasured with replica_stale once
    the link has been down longer than --redis.replica-max-staleness, the database signals
    measured throughout, and the streams exact again once the link is mended."""
    capture(caplog)
    await seeded(platform, "acme")
    pair = start_replica_pair()
    try:
        await create_stream_groups_at(pair.master.url)
        pair.wait_link_up()
        clock = FakeClock()
        exporter = make_exporter(
            platform.exporter_url, pair.replica.url, clock.clock, redis_replica_max_staleness="1", **OPTIONS
        )

        async def cut() -> None:
            pair.cut()
            down = await wait_until(
                lambda: asyncio.to_thread(lambda: int(str(pair.link()["master_link_down_since_seconds"])) > 1), 10
            )
            assert down

        async def mend() -> None:
            await asyncio.to_thread(pair.mend)

        run = await exercise_fault(platform, exporter, clock, ("streams",), cut, mend)
        assert run.during.get("orpycamcp_redis_replica_lag_seconds") is not None
        assert reasons(caplog) == {"replica_stale"}
    finally:
        pair.remove()
