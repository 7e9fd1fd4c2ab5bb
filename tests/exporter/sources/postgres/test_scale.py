"""At a scale boundary: 2,500 tenants, more tables than one transaction can
lock on a stock server (max_locks_per_transaction = 64), read exactly, for
the built-in tenant signals (housekeeping included) and for a declared
tenant-scope backlog.

Tenants are created by devkit/tenants.py, shared with the benchmark (one DO
block per 250 tenants), whose rows are a pure function of the tenant number,
so the exact totals are known without reading the database back. No timing
is asserted.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from devkit.backlogs import pending_only
from devkit.tenants import (
    Totals,
    create_queues,
    create_tenants,
    expected_queue_totals,
    expected_totals,
    slug,
)
from exporter.exporter import Exporter
from registry.families import HOUSEKEEPING_DEDUP_OLDEST, HOUSEKEEPING_TERMINAL_OLDEST, HOUSEKEEPING_TERMINAL_UNDATED
from tests.platform import Platform
from tests.scrapes import Page, make_exporter, scrape

pytestmark = pytest.mark.anyio

TENANTS = 2_500


def assert_exact(page: Page, totals: Totals) -> None:
    assert page.measured("dlq") == 1
    assert page.measured("preservation") == 1
    pending = page.family("orpycamcp_dlq_pending_events")
    assert {labels[0][1]: value for labels, value in pending.items() if value} == totals.pending
    oldest = page.family("orpycamcp_dlq_oldest_pending_timestamp_seconds")
    assert {labels[0][1]: value for labels, value in oldest.items()} == {
        group: created.timestamp() for group, created in totals.oldest.items()
    }
    exhausted = page.family("orpycamcp_preservation_exhausted_artifacts")
    assert {(labels[0][1], labels[1][1]): value for labels, value in exhausted.items() if value} == totals.exhausted
    # housekeeping: the oldest resolved dead letters and dedup row belong to the lowest tenant numbers.
    assert page.measured("housekeeping") == 1
    resolved = page.family(HOUSEKEEPING_TERMINAL_OLDEST.name)
    assert {labels[0][1]: value for labels, value in resolved.items()} == {
        group: at.timestamp() for group, at in totals.oldest_resolved.items()
    }
    assert set(page.family(HOUSEKEEPING_TERMINAL_UNDATED.name).values()) == {0}
    assert totals.oldest_processed is not None
    assert page.get(HOUSEKEEPING_DEDUP_OLDEST.name) == totals.oldest_processed.timestamp()


def assert_backlog_exact(page: Page, totals: Totals) -> None:
    assert page.measured("kyc_dead_letters") == 1
    pending = page.family("orpycamcp_backlog_pending_items")
    assert {labels[1][1]: value for labels, value in pending.items() if value} == totals.pending
    assert len(pending) == 4  # every declared group, zeros included
    oldest = page.family("orpycamcp_backlog_oldest_pending_timestamp_seconds")
    assert {labels[1][1]: value for labels, value in oldest.items()} == {
        task: created.timestamp() for task, created in totals.oldest.items()
    }


async def refresh(exporter: Exporter) -> Page:
    for cache in exporter.caches.values():
        cache.ttl = 0  # the next scrape measures again
    return await scrape(exporter)


async def test_thousands_of_tenants_are_summed_exactly_and_changes_seen_at_the_next_refresh(
    platform: Platform, tmp_path: Path
) -> None:
    await create_tenants(platform.admin_url, 1, TENANTS)
    await create_queues(platform.admin_url, 1, TENANTS)
    backlogs = tmp_path / "backlogs.yml"
    backlogs.write_text(pending_only("kyc_dead_letters"))
    exporter = make_exporter(
        platform.exporter_url,
        signals="dlq,preservation,audit_chain,housekeeping,kyc_dead_letters",
        backlogs_config_file=str(backlogs),
    )
    try:
        first = await scrape(exporter)
        assert_exact(first, expected_totals(1, TENANTS))
        assert_backlog_exact(first, expected_queue_totals(1, TENANTS))
        assert first.measured("audit_chain") == 1
        assert await platform.exporter_sessions() <= 2  # the default connection limit

        # Steady state: the prepared statements serve the same exact totals.
        steady = await refresh(exporter)
        assert_exact(steady, expected_totals(1, TENANTS))
        assert_backlog_exact(steady, expected_queue_totals(1, TENANTS))

        # A tenant added, one deprovisioned and one deleted, in the middle of
        # the slug order: all seen at the next refresh, nothing counted twice.
        await create_tenants(platform.admin_url, TENANTS + 1, TENANTS + 1)
        await create_queues(platform.admin_url, TENANTS + 1, TENANTS + 1)
        await platform.execute(
            "UPDATE public.tenants SET provisioning_status = 'deprovisioning' WHERE slug = $1", slug(1234)
        )
        await platform.execute("DELETE FROM public.tenants WHERE slug = $1", slug(77))
        await platform.execute(f'DROP SCHEMA "tenant_{slug(77)}" CASCADE')
        totals = expected_totals(1, TENANTS + 1)
        changed = await refresh(exporter)
        without = [expected_totals(number, number) for number in (1234, 77)]
        for gone in without:
            for group, count in gone.pending.items():
                totals.pending[group] -= count
            for key, count in gone.exhausted.items():
                totals.exhausted[key] -= count
        totals.pending = {group: count for group, count in totals.pending.items() if count}
        totals.exhausted = {key: count for key, count in totals.exhausted.items() if count}
        # The oldest pending events belong to the lowest tenant numbers, which stay.
        assert_exact(changed, totals)
        queues = expected_queue_totals(1, TENANTS + 1)
        for number in (1234, 77):
            for task, count in expected_queue_totals(number, number).pending.items():
                queues.pending[task] -= count
        queues.pending = {task: count for task, count in queues.pending.items() if count}
        assert_backlog_exact(changed, queues)
        assert await platform.exporter_sessions() <= 2
    finally:
        await exporter.close()
