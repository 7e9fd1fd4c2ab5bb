"""The cache: lazy, one measurement in flight, failures cached, TTL honoured,
and a scrape that cannot wait reports the signal as not measured."""

from __future__ import annotations

import asyncio
import time

import asyncpg
import pytest

from tests.clock import FakeClock
from tests.platform import Platform, at
from tests.scrapes import DATABASE_SIGNALS, DLQ_PREFIX, make_exporter, scrape, value_series

pytestmark = pytest.mark.anyio


async def test_nothing_is_measured_before_a_scrape(platform: Platform) -> None:
    exporter = make_exporter(platform.exporter_url)
    try:
        await asyncio.sleep(0.2)  # real time on purpose: no timer or background task measures on its own
        assert all(cache.measurements == 0 for cache in exporter.caches.values())
        assert await platform.exporter_sessions() == 0
    finally:
        await exporter.close()


async def test_fifty_concurrent_scrapes_share_one_measurement_per_signal(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
    exporter = make_exporter(platform.exporter_url, ttl="30")
    try:
        pages = await asyncio.gather(*(scrape(exporter) for _ in range(50)))
        assert {cache.signal.name: cache.measurements for cache in exporter.caches.values()} == dict.fromkeys(
            DATABASE_SIGNALS, 1
        )
        assert all(page.raw == pages[0].raw for page in pages)
        assert pages[0].get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
        # Served from cache: still one measurement each.
        await scrape(exporter)
        assert [cache.measurements for cache in exporter.caches.values()] == [1] * len(DATABASE_SIGNALS)
    finally:
        await exporter.close()


async def test_ttl_expiry_measures_again_and_sees_new_data(platform: Platform) -> None:
    await platform.add_tenant("acme")
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, None, clock.clock, signals="dlq", ttl="100", deadline="30")
    try:
        first = await scrape(exporter)
        await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
        clock.advance(99)
        cached = await scrape(exporter)
        assert cached.raw == first.raw  # still within the TTL
        assert exporter.caches["dlq"].measurements == 1
        clock.advance(1)
        fresh = await scrape(exporter)
        assert exporter.caches["dlq"].measurements == 2
        assert fresh.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
    finally:
        await exporter.close()


async def test_failure_is_cached_for_the_ttl_and_last_success_kept(platform: Platform) -> None:
    await platform.add_tenant("acme")
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, None, clock.clock, signals="dlq", ttl="100", deadline="30")
    try:
        good = await scrape(exporter)
        last_success = good.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq")
        assert last_success == clock.wall()
        await platform.execute('DROP TABLE "tenant_acme".evento_dead_letter')
        clock.advance(110)
        failed = await scrape(exporter)
        clock.advance(89)
        again = await scrape(exporter)
        assert exporter.caches["dlq"].measurements == 2  # the failure was served from cache
        for page in (failed, again):
            assert page.measured("dlq") == 0
            assert value_series(page, DLQ_PREFIX) == []
            assert page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq") == last_success
        assert failed.get("orpycamcp_signal_measurement_duration_seconds", signal="dlq") is not None
    finally:
        await exporter.close()


async def test_statement_timeout_on_a_locked_table_within_the_deadline(platform: Platform) -> None:
    await platform.add_tenant("acme")
    locker = await asyncpg.connect(platform.admin_url)
    # A deadline a loaded machine's first refresh (connect, identity, every signal) keeps:
    # at 1 s, load 6-11 made every signal time out, the unlocked ones too.
    exporter = make_exporter(platform.exporter_url, ttl="10", deadline="4")
    try:
        await locker.execute('BEGIN; LOCK TABLE "tenant_acme".preservation_retry IN ACCESS EXCLUSIVE MODE')
        started = time.monotonic()
        page = await scrape(exporter)
        elapsed = time.monotonic() - started
        assert page.measured("preservation") == 0
        assert page.failure_reasons("preservation") == {"lock_timeout"}
        assert page.measured("dlq") == 1
        assert page.measured("audit_chain") == 1
        assert elapsed < 4 + 1.0, f"the scrape waited {elapsed:.2f}s past a 4s deadline"
    finally:
        await locker.close()
        await exporter.close()


async def test_scrape_that_cannot_wait_reports_unmeasured_and_measurement_serves_the_next(
    platform: Platform,
) -> None:
    await platform.add_tenant("acme")
    locker = await asyncpg.connect(platform.admin_url)
    exporter = make_exporter(platform.exporter_url, signals="dlq", ttl="20", deadline="5")
    try:
        await locker.execute('BEGIN; LOCK TABLE "tenant_acme".evento_dead_letter IN ACCESS EXCLUSIVE MODE')
        hurried = await scrape(exporter, wait=0.3)
        assert hurried.measured("dlq") == 0
        assert value_series(hurried, DLQ_PREFIX) == []
        await locker.execute("ROLLBACK")
        patient = await scrape(exporter)
        assert patient.measured("dlq") == 1
        assert exporter.caches["dlq"].measurements == 1  # the same measurement, not a second one
    finally:
        await locker.close()
        await exporter.close()
