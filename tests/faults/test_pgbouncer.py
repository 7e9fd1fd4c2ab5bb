"""The fault matrix through a pooler (Debian's PgBouncer in front of a real
PostgreSQL): the pooler restarted, the pooler paused with PAUSE / RESUME on its
admin console, and PostgreSQL restarted behind the pooler. Same checks as every
fault: the scrape answers in time, the PostgreSQL signals are unmeasured while
it lasts (no value series, last success kept), Redis stays measured, all come
back within one TTL, nothing is leaked or written."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from devkit.pgbouncer import LocalPgBouncer, pgbouncer_server
from devkit.servers import PostgresServer, RedisServer
from exporter.tools.demo import EXPORTER_ROLE
from tests.clock import FakeClock
from tests.faults.kit import (
    DEADLINE,
    POSTGRES_SIGNALS,
    TTL,
    assert_page,
    capture,
    exercise_fault,
    reasons,
    settled_sessions,
    timed_scrape,
)
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import make_exporter

pytestmark = pytest.mark.anyio

OPTIONS = {"ttl": f"{TTL:g}", "deadline": f"{DEADLINE:g}"}


@pytest.fixture(params=["session", "transaction"])
def bouncer(request: pytest.FixtureRequest, platform: Platform) -> Iterator[LocalPgBouncer]:
    """A PgBouncer in `request.param` pooling in front of the test's PostgreSQL."""
    with pgbouncer_server(platform.server.port, request.param, {EXPORTER_ROLE: EXPORTER_PASSWORD}) as started:
        yield started


async def seeded(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
    await platform.add_retry("acme", "a1", "document", "fixity", "exhausted")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


def through(bouncer: LocalPgBouncer, platform: Platform) -> str:
    return bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)


async def test_pgbouncer_restarted(
    platform: Platform, bouncer: LocalPgBouncer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """Stopped (every client connection dropped), then started again on the same port."""
    capture(caplog)
    await seeded(platform)
    clock = FakeClock()
    exporter = make_exporter(
        through(bouncer, platform), streams_redis.url, clock.clock, database_pool_mode=bouncer.pool_mode, **OPTIONS
    )

    async def inject() -> None:
        await asyncio.to_thread(bouncer.stop)

    async def clear() -> None:
        await asyncio.to_thread(bouncer.start)

    try:
        run = await exercise_fault(platform, exporter, clock, POSTGRES_SIGNALS, inject, clear)
        assert run.after.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        assert reasons(caplog) == {"connection_error"}
    finally:
        await exporter.close()


@pytest.mark.parametrize("bouncer", ["transaction"], indirect=True)
async def test_pgbouncer_paused(
    platform: Platform, bouncer: LocalPgBouncer, streams_redis: RedisServer, caplog: pytest.LogCaptureFixture
) -> None:
    """PAUSE holds every new transaction until RESUME: cut at the deadline, then measured again.
    (Transaction pooling: in session pooling PAUSE waits for the clients to disconnect.)"""
    capture(caplog)
    await seeded(platform)
    clock = FakeClock()
    exporter = make_exporter(
        through(bouncer, platform), streams_redis.url, clock.clock, database_pool_mode="transaction", **OPTIONS
    )

    async def inject() -> None:
        await bouncer.admin("PAUSE")

    async def clear() -> None:
        await bouncer.admin("RESUME")

    try:
        run = await exercise_fault(platform, exporter, clock, POSTGRES_SIGNALS, inject, clear)
        assert run.after.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="fixity") == 1
        assert reasons(caplog) == {"timeout"}
    finally:
        await exporter.close()


@pytest.mark.parametrize("pool_mode", ["session", "transaction"])
async def test_postgres_restarted_behind_pgbouncer_costs_no_measurement(
    own_pg: PostgresServer, streams_redis: RedisServer, pool_mode: str, caplog: pytest.LogCaptureFixture
) -> None:
    """The server sessions behind the pooler are replaced: in session pooling the pooler
    drops the client connection (replaced on the next use), in transaction pooling
    it lends a new session; neither is mistaken for a pooler that does not keep sessions."""
    capture(caplog)
    platform = await create_platform(own_pg)
    await seeded(platform)
    with pgbouncer_server(own_pg.port, pool_mode, {EXPORTER_ROLE: EXPORTER_PASSWORD}) as bouncer:
        clock = FakeClock()
        exporter = make_exporter(
            through(bouncer, platform), streams_redis.url, clock.clock, database_pool_mode=pool_mode, **OPTIONS
        )
        try:
            assert_page(await timed_scrape(exporter), ())
            await asyncio.to_thread(own_pg.stop)
            await asyncio.to_thread(own_pg.start)
            clock.advance(TTL + 0.1)
            page = await timed_scrape(exporter)
            assert_page(page, ())
            assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
            assert reasons(caplog) == set()
        finally:
            await exporter.close()
    assert await settled_sessions(platform, 0) == 0
