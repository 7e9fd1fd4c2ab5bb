"""One tenant the server refuses (its table missing, its grant revoked) leaves
the other tenants' signals warm: the same backends and the same prepared
statements from one refresh to the next, the other lanes and signals measured
exactly, and the broken signal unmeasured naming the tenant's schema.

The counts come from the server: the backends from pg_stat_activity, the
prepared statements (name and prepare time) from pg_prepared_statements,
which each backend reports for itself."""

from __future__ import annotations

import asyncpg
import pytest

from exporter.exporter import Exporter
from exporter.sources.postgres.pool_mode import PoolMode
from exporter.sources.postgres.source import APPLICATION_NAME, Postgres
from exporter.tools.demo import EXPORTER_ROLE
from registry.values import ORIGIN_GROUPS
from tests.platform import Platform, at
from tests.scrapes import make_exporter, scrape, value_series

pytestmark = pytest.mark.anyio

TENANTS = ("acme", "globex", "initech", "umbrella", "wonka", "zorg")
BROKEN = "initech"  # in the middle: the lane reading it has batches before and after it
REFRESHES = 5
APPLICATION = APPLICATION_NAME  # the exporter's name for itself, when the URL names none

Prepared = frozenset[tuple[int, str, object]]  # (backend pid, name, prepare time)


async def seed(platform: Platform) -> dict[str, int]:
    """Each tenant a different number of pending dead letters and exhausted retries."""
    pending: dict[str, int] = {}
    for number, slug in enumerate(TENANTS, start=1):
        await platform.add_tenant(slug)
        for row in range(number):
            group = ORIGIN_GROUPS[(number + row) % len(ORIGIN_GROUPS)]
            await platform.add_dead_letter(slug, f"e{row}", group, "pending", at("2026-11-01 00:00:00"))
            pending[group] = pending.get(group, 0) + 1
            await platform.add_retry(slug, f"a{row}", "document", "fixity", "exhausted")
    return pending


EXHAUSTED = sum(range(1, len(TENANTS) + 1))  # tenant k has k exhausted retries


async def backends(platform: Platform) -> frozenset[int]:
    rows = await platform.fetch(
        "SELECT pid FROM pg_stat_activity WHERE application_name = $1 AND datname = $2",
        APPLICATION,
        platform.database,
    )
    return frozenset(row["pid"] for row in rows)


async def prepared_statements(postgres: Postgres) -> Prepared:
    """The batch statements each of the exporter's backends holds prepared, as it reports them itself."""
    held: set[tuple[int, str, object]] = set()
    for lane in postgres._lanes:
        async with lane.lock:
            connection: asyncpg.Connection | None = lane.connection
            if connection is None:
                continue
            pid = connection.get_server_pid()
            # The batch statements of the tenant signals; a single statement (the tenant
            # list) runs on whichever lane is free first, so comes to be prepared on each.
            rows = await connection.fetch(
                "SELECT name, prepare_time FROM pg_prepared_statements WHERE strpos(statement, 'tenant_') > 0"
            )
            held.update((pid, row["name"], row["prepare_time"]) for row in rows)
    return frozenset(held)


def refreshing(exporter: Exporter) -> Postgres:
    for cache in exporter.caches.values():
        cache.ttl = 0
    postgres = exporter.sources.postgres
    assert postgres is not None
    return postgres


# What breaks the tenant, the reason, and what the detail names (the server names
# the schema of a missing table, only the table of a refused one).
BREAKS = {
    "table missing": (
        "ALTER TABLE tenant_{slug}.evento_dead_letter RENAME TO evento_dead_letter_away",
        "missing_table",
        f'"tenant_{BROKEN}.evento_dead_letter"',
    ),
    "grant revoked": (
        "REVOKE SELECT ON tenant_{slug}.evento_dead_letter FROM " + EXPORTER_ROLE,
        "permission_denied",
        "evento_dead_letter",
    ),
}


@pytest.mark.parametrize("fault", list(BREAKS))
async def test_a_broken_tenant_keeps_the_backends_and_the_prepared_statements(platform: Platform, fault: str) -> None:
    pending = await seed(platform)
    # One tenant per statement: three statements per signal on each of the two lanes.
    exporter = make_exporter(platform.exporter_url, signals="dlq,preservation", database_batch_size="1")
    postgres = refreshing(exporter)
    try:
        page = await scrape(exporter)
        assert page.measured("dlq") == 1
        for group in ORIGIN_GROUPS:
            assert page.get("orpycamcp_dlq_pending_events", origin_group=group) == pending.get(group, 0)
        healthy_backends = await backends(platform)
        healthy_prepared = await prepared_statements(postgres)
        assert len(healthy_backends) == 2
        assert {pid for pid, _, _ in healthy_prepared} == healthy_backends
        assert len(healthy_prepared) == 2 * len(TENANTS)

        sql, reason, named = BREAKS[fault]
        await platform.execute(sql.format(slug=BROKEN))
        for refresh in range(REFRESHES):
            page = await scrape(exporter)
            assert page.measured("dlq") == 0, refresh
            assert value_series(page, ("orpycamcp_dlq_",)) == []
            outcome = exporter.caches["dlq"].last
            assert outcome is not None
            assert outcome.failure is not None
            assert outcome.failure.reason == reason
            assert named in outcome.failure.detail
            assert page.measured("preservation") == 1
            exhausted = page.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="fixity")
            assert exhausted == EXHAUSTED
            assert await backends(platform) == healthy_backends, refresh
            prepared = await prepared_statements(postgres)
            # Nothing planned anew; at most the broken tenant's statement is gone.
            assert prepared <= healthy_prepared, refresh
            assert len(healthy_prepared - prepared) <= 1, refresh
    finally:
        await exporter.close()


@pytest.mark.parametrize("mode", list(PoolMode))
async def test_the_tenant_repaired_is_measured_again_on_the_same_backends(platform: Platform, mode: PoolMode) -> None:
    pending = await seed(platform)
    exporter = make_exporter(
        platform.exporter_url, signals="dlq,preservation", database_batch_size="1", database_pool_mode=mode.value
    )
    refreshing(exporter)
    try:
        await platform.execute(BREAKS["table missing"][0].format(slug=BROKEN))
        page = await scrape(exporter)
        assert page.measured("dlq") == 0
        assert page.measured("preservation") == 1
        broken_backends = await backends(platform)
        assert len(broken_backends) == 2
        await platform.execute(f"ALTER TABLE tenant_{BROKEN}.evento_dead_letter_away RENAME TO evento_dead_letter")
        page = await scrape(exporter)
        assert page.measured("dlq") == 1
        for group in ORIGIN_GROUPS:
            assert page.get("orpycamcp_dlq_pending_events", origin_group=group) == pending.get(group, 0)
        assert await backends(platform) == broken_backends
    finally:
        await exporter.close()


async def test_a_connection_the_server_ends_is_replaced(platform: Platform) -> None:
    """The one failure that ends a session still drops it, and only it."""
    await seed(platform)
    exporter = make_exporter(platform.exporter_url, signals="preservation", database_batch_size="1")
    refreshing(exporter)
    try:
        assert (await scrape(exporter)).measured("preservation") == 1
        first, second = sorted(await backends(platform))
        await platform.execute("SELECT pg_terminate_backend($1)", first)
        await scrape(exporter)  # may fail on the ended session
        page = await scrape(exporter)
        assert page.measured("preservation") == 1
        now = await backends(platform)
        assert second in now
        assert first not in now
        assert len(now) == 2
    finally:
        await exporter.close()
