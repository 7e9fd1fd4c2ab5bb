"""housekeeping against a real PostgreSQL: the oldest terminal dead letter per
origin_group, the terminal ones without resolved_at and the oldest dedup row,
over every tenant, equal to what the database itself says (its own aggregate
over the same rows, not the exporter's statement)."""

from __future__ import annotations

from datetime import datetime, timedelta

import pytest

from registry.values import ORIGIN_GROUPS
from tests.platform import Platform, at
from tests.scrapes import HOUSEKEEPING_PREFIX, scrape_once, value_series

pytestmark = pytest.mark.anyio

OLDEST = "orpycamcp_housekeeping_dead_letter_oldest_terminal_resolved_timestamp_seconds"
UNDATED = "orpycamcp_housekeeping_dead_letter_terminal_without_resolved_at"
DEDUP = "orpycamcp_housekeeping_notification_dedup_oldest_processed_timestamp_seconds"


async def resolve(platform: Platform, slug: str, event_id: str, status: str, resolved_at: datetime | None) -> None:
    await platform.execute(
        f'UPDATE "tenant_{slug}".evento_dead_letter SET status = $1, resolved_at = $2 WHERE event_id = $3',
        status,
        resolved_at,
        event_id,
    )


async def processed(platform: Platform, slug: str, event_id: str, when: datetime) -> None:
    await platform.execute(
        f'INSERT INTO "tenant_{slug}".notification_processed_events (event_id, processed_at) VALUES ($1, $2)',
        event_id,
        when,
    )


async def truth(platform: Platform, slugs: list[str]) -> tuple[dict[str, float], dict[str, int], float | None]:
    """The database's own answer over the measured tenants' rows."""
    dead = " UNION ALL ".join(f'SELECT * FROM "tenant_{slug}".evento_dead_letter' for slug in slugs)
    rows = await platform.fetch(
        f"SELECT origin_group, extract(epoch FROM min(resolved_at))::float8 AS oldest,"
        f" count(*) FILTER (WHERE resolved_at IS NULL) AS undated FROM ({dead}) AS d"
        " WHERE status <> 'pending' GROUP BY origin_group"
    )
    dedup = " UNION ALL ".join(f'SELECT * FROM "tenant_{slug}".notification_processed_events' for slug in slugs)
    first = await platform.fetch(f"SELECT extract(epoch FROM min(processed_at))::float8 AS t FROM ({dedup}) AS n")
    oldest = {row["origin_group"]: row["oldest"] for row in rows if row["oldest"] is not None}
    undated = {group: 0 for group in ORIGIN_GROUPS} | {row["origin_group"]: row["undated"] for row in rows}
    return oldest, undated, first[0]["t"]


async def test_oldest_terminal_undated_and_dedup_over_tenants_equal_the_database(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_tenant("globex")
    # The purge jobs walk only tenants whose status is 'active' too: a suspended tenant's rows are
    # kept, so they are not read (they would page for a purge that runs).
    await platform.add_tenant("umbrella", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")  # skipped
    created = at("2026-08-01 00:00:00")
    for slug in ("acme", "globex", "umbrella", "initech"):
        for n, group in enumerate(("signature-service", "workflow-service", "notification-service")):
            await platform.add_dead_letter(slug, f"e{n}", group, "pending", created)
            await platform.add_dead_letter(slug, f"p{n}", group, "pending", created)  # stays pending
    await resolve(platform, "acme", "e0", "resolved", at("2026-09-02 10:00:00"))
    await resolve(platform, "globex", "e0", "discarded", at("2026-09-01 08:00:00"))  # the oldest signature one
    await resolve(platform, "acme", "e1", "discarded", at("2026-10-05 00:00:00"))
    await resolve(platform, "globex", "e1", "resolved", None)  # out of the invariant: never purged
    await resolve(platform, "acme", "e2", "resolved", None)
    await resolve(platform, "globex", "e2", "resolved", None)
    await resolve(platform, "umbrella", "e0", "resolved", at("2026-02-01 00:00:00"))  # suspended: not purged
    await resolve(platform, "umbrella", "e2", "resolved", None)
    await resolve(platform, "initech", "e0", "resolved", at("2026-01-01 00:00:00"))  # not an active tenant
    await processed(platform, "acme", "n1", at("2026-11-20 00:00:00"))
    await processed(platform, "globex", "n1", at("2026-11-18 06:00:00"))
    await processed(platform, "umbrella", "n1", at("2026-02-01 00:00:00"))
    await processed(platform, "initech", "n1", at("2026-01-01 00:00:00"))

    page = await scrape_once(platform.exporter_url, signals="housekeeping")

    oldest, undated, dedup = await truth(platform, ["acme", "globex"])
    assert page.measured("housekeeping") == 1
    assert page.family(OLDEST) == {(("origin_group", group),): value for group, value in oldest.items()}
    assert page.family(OLDEST) == {
        (("origin_group", "signature-service"),): at("2026-09-01 08:00:00").timestamp(),
        (("origin_group", "workflow-service"),): at("2026-10-05 00:00:00").timestamp(),
    }
    assert page.family(UNDATED) == {(("origin_group", group),): count for group, count in undated.items()}
    assert page.get(UNDATED, origin_group="notification-service") == 2
    assert page.get(DEDUP) == dedup == at("2026-11-18 06:00:00").timestamp()


async def test_a_tenant_list_without_any_purged_tenant_reads_no_row(platform: Platform) -> None:
    await platform.add_tenant("umbrella", status="suspended")
    await platform.add_dead_letter("umbrella", "e1", "workflow-service", "pending", at("2026-01-01 00:00:00"))
    await resolve(platform, "umbrella", "e1", "resolved", at("2026-01-02 00:00:00"))
    await processed(platform, "umbrella", "n1", at("2026-01-01 00:00:00"))
    page = await scrape_once(platform.exporter_url, signals="housekeeping")
    assert page.measured("housekeeping") == 1
    assert page.family(OLDEST) == {}
    assert page.family(DEDUP) == {}
    assert set(page.family(UNDATED).values()) == {0}


async def test_none_resolved_yet_leaves_the_oldest_times_absent_and_the_count_zero(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 10:00:00"))
    page = await scrape_once(platform.exporter_url, signals="housekeeping")
    assert page.measured("housekeeping") == 1
    assert page.family(OLDEST) == {}
    assert page.family(DEDUP) == {}
    assert len(page.family(UNDATED)) == len(ORIGIN_GROUPS)
    assert set(page.family(UNDATED).values()) == {0}


async def test_tenants_beyond_one_batch_are_all_read(platform: Platform) -> None:
    await platform.execute(
        "INSERT INTO public.tenants (slug) SELECT 't' || g FROM generate_series(1, 20) g;"
        "SELECT public.orpycamcp_create_tenant_schema(slug), public.orpycamcp_grant_tenant(slug) FROM public.tenants;"
    )
    for n in range(1, 21):
        when = at("2026-11-01 00:00:00") - timedelta(days=(n * 7) % 20)
        await platform.add_dead_letter(f"t{n}", "e", "workflow-service", "pending", when)
        await resolve(platform, f"t{n}", "e", "resolved", when)
        await processed(platform, f"t{n}", "e", when)
    page = await scrape_once(platform.exporter_url, signals="housekeeping", database_batch_size="6")
    oldest, _, dedup = await truth(platform, [f"t{n}" for n in range(1, 21)])
    assert page.get(OLDEST, origin_group="workflow-service") == oldest["workflow-service"]
    assert page.get(DEDUP) == dedup == oldest["workflow-service"]


async def test_one_tenant_without_the_dedup_table_leaves_no_partial_value(platform: Platform) -> None:
    for slug in ("a", "b"):
        await platform.add_tenant(slug)
        await processed(platform, slug, "n1", at("2026-11-20 00:00:00"))
    await platform.execute('DROP TABLE "tenant_b".notification_processed_events')
    page = await scrape_once(platform.exporter_url, signals="housekeeping")
    assert page.measured("housekeeping") == 0
    assert page.failure_reasons("housekeeping") != set()
    assert value_series(page, HOUSEKEEPING_PREFIX) == []


async def test_a_dedup_row_without_processed_at_is_a_contract_violation(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await processed(platform, "acme", "n1", at("2026-11-20 00:00:00"))
    await platform.execute('ALTER TABLE "tenant_acme".notification_processed_events ALTER processed_at DROP NOT NULL')
    await platform.execute("""INSERT INTO "tenant_acme".notification_processed_events VALUES ('n2', NULL)""")
    page = await scrape_once(platform.exporter_url, signals="housekeeping")
    assert page.measured("housekeeping") == 0
    assert page.failure_reasons("housekeeping") == {"contract_violation"}
    assert value_series(page, HOUSEKEEPING_PREFIX) == []
