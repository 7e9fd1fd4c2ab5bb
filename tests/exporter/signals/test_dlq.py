from __future__ import annotations

from datetime import timedelta

import pytest

from exporter.contract.tables import DLQ
from exporter.errors import InvalidTenantSlug, SourceNotConfigured
from exporter.signals import backlog
from exporter.sources import Sources
from registry.values import ORIGIN_GROUPS
from tests.exporter.signals.violations import violation
from tests.platform import Platform, at
from tests.scrapes import DLQ_PREFIX, make_exporter, scrape_once, value_series

pytestmark = pytest.mark.anyio


async def test_sums_and_oldest_per_origin_group_over_active_tenants(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")  # still measured
    await platform.add_tenant("initech", provisioning_status="provisioning")  # skipped
    await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter("acme", "e2", "signature-service", "pending", at("2026-11-02 10:00:00"))
    await platform.add_dead_letter("acme", "e3", "workflow-service", "resolved", at("2026-10-01 10:00:00"))
    await platform.add_dead_letter("globex", "e1", "signature-service", "pending", at("2026-10-30 08:00:00"))
    await platform.add_dead_letter("globex", "e2", "knowledge-service", "pending", at("2026-11-03 00:00:00"))
    await platform.add_dead_letter("globex", "e3", "notification-service", "discarded", at("2026-09-01 00:00:00"))
    await platform.add_dead_letter("initech", "e1", "workflow-service", "pending", at("2026-01-01 00:00:00"))

    page = await scrape_once(platform.exporter_url, signals="dlq")

    assert page.measured("dlq") == 1
    assert page.family("orpycamcp_dlq_pending_events") == {
        (("origin_group", "signature-service"),): 3,
        (("origin_group", "workflow-service"),): 0,
        (("origin_group", "notification-service"),): 0,
        (("origin_group", "knowledge-service"),): 1,
    }
    assert page.family("orpycamcp_dlq_oldest_pending_timestamp_seconds") == {
        (("origin_group", "signature-service"),): at("2026-10-30 08:00:00").timestamp(),
        (("origin_group", "knowledge-service"),): at("2026-11-03 00:00:00").timestamp(),
    }


async def test_no_tenant_is_a_true_zero(platform: Platform) -> None:
    page = await scrape_once(platform.exporter_url, signals="dlq")
    assert page.measured("dlq") == 1
    assert len(page.family("orpycamcp_dlq_pending_events")) == len(ORIGIN_GROUPS)
    assert set(page.family("orpycamcp_dlq_pending_events").values()) == {0}
    assert page.family("orpycamcp_dlq_oldest_pending_timestamp_seconds") == {}


async def test_unknown_origin_group_makes_the_signal_unmeasured(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter("acme", "e2", "billing-service", "pending", at("2026-11-01 10:00:00"))
    page = await scrape_once(platform.exporter_url)
    assert page.measured("dlq") == 0
    assert value_series(page, DLQ_PREFIX) == []
    assert page.measured("preservation") == 1
    assert page.measured("audit_chain") == 1


async def test_one_tenant_missing_its_table_leaves_no_partial_sum(platform: Platform) -> None:
    for slug in ("a", "b", "c"):
        await platform.add_tenant(slug)
        await platform.add_dead_letter(slug, "e1", "workflow-service", "pending", at("2026-11-01 10:00:00"))
    await platform.execute('DROP TABLE "tenant_b".evento_dead_letter')
    page = await scrape_once(platform.exporter_url)
    assert page.measured("dlq") == 0
    assert value_series(page, DLQ_PREFIX) == []
    assert page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq") is None
    assert page.measured("preservation") == 1
    assert page.measured("audit_chain") == 1


@pytest.mark.parametrize("oldest_tenant", [2, 16, 29])  # in the first batch, a middle one, the last one
async def test_tenants_beyond_one_batch_are_all_counted_and_the_oldest_kept(
    platform: Platform, oldest_tenant: int
) -> None:
    await platform.execute(
        "INSERT INTO public.tenants (slug) SELECT 't' || g FROM generate_series(1, 30) g;"
        "SELECT public.orpycamcp_create_tenant_schema(slug), public.orpycamcp_grant_tenant(slug) FROM public.tenants;"
    )
    # Every tenant's letter an hour apart, in no order the batches follow; one a month older.
    created = {n: at("2026-11-01 00:00:00") + timedelta(hours=(n * 7) % 30) for n in range(1, 31)}
    created[oldest_tenant] = at("2026-10-01 00:00:00")
    for n, when in created.items():
        await platform.add_dead_letter(f"t{n}", "e", "notification-service", "pending", when)
    page = await scrape_once(platform.exporter_url, signals="dlq", database_batch_size="7")
    assert page.get("orpycamcp_dlq_pending_events", origin_group="notification-service") == 30
    oldest = page.get("orpycamcp_dlq_oldest_pending_timestamp_seconds", origin_group="notification-service")
    assert oldest == min(created.values()).timestamp() == at("2026-10-01 00:00:00").timestamp()


@pytest.mark.parametrize(
    ("column", "value", "problem"),
    [
        ("origin_group", None, "NULL in a row read"),
        ("created_at", None, "NULL in a pending row"),
        ("created_at", "'infinity'", "infinite timestamp"),
        ("created_at", "now() + interval '2 days'", "timestamp "),
    ],
)
async def test_a_pending_event_out_of_contract_names_its_column(
    platform: Platform, column: str, value: str | None, problem: str
) -> None:
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 10:00:00"))
    await platform.execute(f'ALTER TABLE "tenant_acme".evento_dead_letter ALTER {column} DROP NOT NULL')
    await platform.execute(f'UPDATE "tenant_acme".evento_dead_letter SET {column} = {value or "NULL"}')
    raised = await violation(platform, "dlq")
    assert (raised.signal, raised.where) == ("dlq", f"evento_dead_letter.{column}")
    assert raised.problem.startswith(problem), raised.problem


async def test_without_a_database_dlq_names_itself_unconfigured() -> None:
    with pytest.raises(SourceNotConfigured) as raised:
        await backlog.measure(DLQ, Sources())
    assert raised.value.signal == "dlq"


async def test_a_tenant_that_cannot_name_a_schema_is_refused_for_dlq(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.execute("INSERT INTO public.tenants (slug) VALUES ($1)", "x" * 80)
    exporter = make_exporter(platform.exporter_url, signals="dlq")
    try:
        with pytest.raises(InvalidTenantSlug) as raised:
            await backlog.measure(DLQ, exporter.sources)
    finally:
        await exporter.close()
    assert raised.value.signal == "dlq"
