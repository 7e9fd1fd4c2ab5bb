"""Hostile and odd tenant slugs: measured correctly thanks to identifier quoting,
or the signal unmeasured with a clear log line; never an injection, never a
truncation onto another tenant's schema, never a crash."""

from __future__ import annotations

import pytest

from devkit.servers import RedisServer
from tests.clock import FakeClock
from tests.faults.kit import (
    MAX_CONNECTIONS,
    TTL,
    assert_page,
    assert_role_cannot_write,
    capture,
    last_successes,
    reasons,
    row_writes,
    settled_sessions,
    timed_scrape,
)
from tests.platform import Platform, at
from tests.scrapes import make_exporter

pytestmark = pytest.mark.anyio

OPTIONS = {"ttl": f"{TTL:g}", "deadline": "1"}
TARGET = "public.audit_chain_runs"
CRAFTED = 'x"; DROP TABLE public.audit_chain_runs; --'

HOSTILE = (
    'we"ird',
    '""',
    "o'brien",
    "semi;colon",
    "dash--dash",
    "with space",
    " leading-and-trailing ",
    "UPPER",
    "MiXeD",
    "ünïcødé-ß",
    "日本語",
    "emoji-🦆",
    "back\\slash",
    "%s$1{}",
    "",
    CRAFTED,
    "x'); DROP TABLE public.tenants; --",
    "a" * 56,  # "tenant_" + 56 bytes = 63 bytes, the longest identifier
    "é" * 28,  # 56 bytes in 28 characters
)


async def tables_exist(platform: Platform) -> bool:
    rows = await platform.fetch(
        "SELECT to_regclass('public.audit_chain_runs') IS NOT NULL AND to_regclass('public.tenants') IS NOT NULL AS ok"
    )
    ok: bool = rows[0]["ok"]
    return ok


async def add(platform: Platform, slug: str, number: int) -> None:
    await platform.add_tenant(slug)
    await platform.add_dead_letter(slug, f"e{number}", "signature-service", "pending", at("2026-11-01 00:00:00"))
    await platform.add_retry(slug, f"a{number}", "signature", "sealing", "exhausted")


async def test_hostile_slugs_are_measured_through_quoting(platform: Platform, streams_redis: RedisServer) -> None:
    for number, slug in enumerate(HOSTILE):
        await add(platform, slug, number)
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=2, declared_breaks=1)
    schemas = await platform.fetch("SELECT count(*) AS n FROM pg_namespace WHERE nspname LIKE 'tenant\\_%'")
    assert schemas[0]["n"] == len(HOSTILE)  # every slug has its own schema
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        writes = await row_writes(platform)
        page = await timed_scrape(exporter)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == len(HOSTILE)
        assert page.get("orpycamcp_preservation_exhausted_artifacts", artifact="signature", phase="sealing") == len(
            HOSTILE
        )
        assert page.get("orpycamcp_audit_chain_breaks") == 2  # the crafted slug dropped nothing
        assert await tables_exist(platform)
        assert await row_writes(platform) == writes
        assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0
    await assert_role_cannot_write(platform)


@pytest.mark.parametrize(
    "too_long",
    ["a" * 57, "é" * 29, "a" * 200],
    ids=["64-bytes-truncates-onto-the-56-byte-tenant", "65-bytes-in-29-characters", "207-bytes"],
)
async def test_a_slug_too_long_for_an_identifier_is_unmeasured_never_truncated(
    platform: Platform, streams_redis: RedisServer, too_long: str, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    # The 56-byte tenant exists; PostgreSQL truncates the long slug's schema name onto ... its schema.
    await add(platform, "a" * 56, 1)
    await add(platform, "é" * 28, 2)
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, streams_redis.url, clock.clock, **OPTIONS)
    try:
        good = await timed_scrape(exporter)
        assert_page(good, ())
        assert good.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 2
        kept = last_successes(good)

        await platform.execute("INSERT INTO public.tenants (slug) VALUES ($1)", too_long)
        clock.advance(TTL + 0.1)
        page = await timed_scrape(exporter)
        # Never counted twice through a truncated name: unmeasured, with the reason.
        assert_page(page, ("dlq", "preservation"), kept=kept)
        assert reasons(caplog) == {"invalid_tenant"}
        assert "exceeds 63" in caplog.text
        assert too_long not in caplog.text  # the slug itself is not repeated in logs

        await platform.execute(
            "UPDATE public.tenants SET provisioning_status = 'deprovisioning' WHERE slug = $1", too_long
        )
        clock.advance(TTL + 0.1)
        back = await timed_scrape(exporter)
        assert_page(back, ())
        assert back.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 2
    finally:
        await exporter.close()
    assert await settled_sessions(platform, 0) == 0


async def test_a_crafted_slug_never_reaches_sql(platform: Platform, streams_redis: RedisServer) -> None:
    """Only the crafted tenant: its schema is read as a name, the target table survives."""
    await add(platform, CRAFTED, 1)
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"))
    exporter = make_exporter(platform.exporter_url, streams_redis.url, **OPTIONS)
    try:
        page = await timed_scrape(exporter)
        assert_page(page, ())
        assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 1
        assert page.get("orpycamcp_audit_chain_verification_ok") == 1
    finally:
        await exporter.close()
    assert await tables_exist(platform)
    rows = await platform.fetch(f"SELECT count(*) AS n FROM {TARGET}")
    assert rows[0]["n"] == 1
