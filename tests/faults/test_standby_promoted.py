"""A fault of reading from a hot standby: the standby the exporter reads from is
promoted mid-run. With prefer-standby the signals stay measured, exactly, and
the replay-lag gauge goes away; with standby (and no standby left) they become
unmeasured with a reason naming what each host is, never a stale or partial
value."""

from __future__ import annotations

import pytest

from devkit.servers import LocalPostgres, ServerUnavailable
from devkit.standby import caught_up, promote, start_standby
from exporter.tools.demo import EXPORTER_ROLE
from tests.clock import FakeClock
from tests.faults.kit import POSTGRES_SIGNALS, assert_page, capture, last_successes, reasons, timed_scrape
from tests.platform import EXPORTER_PASSWORD, at, create_platform
from tests.scrapes import make_exporter

pytestmark = pytest.mark.anyio

LAG = "orpycamcp_database_replay_lag_seconds"
TTL = 1.0


async def test_standby_promoted_mid_run(primary_pg: LocalPostgres, caplog: pytest.LogCaptureFixture) -> None:
    primary = primary_pg
    capture(caplog)
    platform = await create_platform(primary)
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
    await platform.add_retry("acme", "a1", "document", "fixity", "exhausted")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)
    try:
        standby = start_standby(primary)
    except ServerUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)
    try:
        await caught_up(platform.admin_url, standby.url(database=platform.database))
        hosts = f"127.0.0.1:{standby.port},127.0.0.1:{primary.port}"
        base = f"postgresql://{EXPORTER_ROLE}:{EXPORTER_PASSWORD}@{hosts}/{platform.database}"
        options = {
            "ttl": f"{TTL:g}",
            "deadline": "0.8",
            "database_idle_close": "0.5",
            "signals": ",".join(POSTGRES_SIGNALS),
        }
        clock = FakeClock()  # the TTL and the idle close pass when the test says so
        preferring = make_exporter(f"{base}?target_session_attrs=prefer-standby", None, clock.clock, **options)
        insisting = make_exporter(f"{base}?target_session_attrs=standby", None, clock.clock, **options)
        try:
            for exporter in (preferring, insisting):
                page = await timed_scrape(exporter)
                assert_page(page, (), POSTGRES_SIGNALS)
                assert page.get(LAG) == 0
                assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
            kept = last_successes(page)

            await promote(standby.url(database=platform.database))
            clock.advance(TTL + 0.1)

            page = await timed_scrape(preferring)
            assert_page(page, (), POSTGRES_SIGNALS)
            assert page.family(LAG) == {}, "a promoted standby is a primary: no replay lag"
            assert page.get("orpycamcp_dlq_pending_events", origin_group="workflow-service") == 1
            assert page.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="fixity") == 1

            page = await timed_scrape(insisting)
            assert_page(page, POSTGRES_SIGNALS, POSTGRES_SIGNALS, kept)
            assert page.family(LAG) == {}
            assert reasons(caplog) == {"connection_error"}
            assert any(
                f"127.0.0.1:{standby.port}: a primary; 127.0.0.1:{primary.port}: a primary" in record.getMessage()
                for record in caplog.records
            )
        finally:
            await preferring.close()
            await insisting.close()
    finally:
        standby.remove()
