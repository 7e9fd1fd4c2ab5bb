"""A lifecycle that ends: closing the exporter cancels and awaits what is in
flight (measurements, the replay lag, the passes over the tenants), ends every
connection and client, and a use after close is a `Closed` error that opens
nothing (counted on the server: pg_stat_activity). Redis: tests/exporter/sources/redis/test_source.py."""

from __future__ import annotations

import asyncio

import pytest

from exporter.errors import Closed
from exporter.loading import load
from exporter.replay_lag import ReplayLag
from exporter.service import postgres_settings
from exporter.sources.postgres.source import Postgres
from exporter.timeouts import Timeouts
from tests.platform import Platform
from tests.scrapes import make_exporter, meta_reader, scrape
from tests.waits import wait_until

pytestmark = pytest.mark.anyio


async def sleeping(platform: Platform) -> bool:
    rows = await platform.fetch(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE datname = $1 AND wait_event = 'PgSleep'", platform.database
    )
    return bool(rows[0]["n"])


def measuring() -> set[str]:
    return {task.get_name() for task in asyncio.all_tasks() if task.get_name().startswith("measure-")}


async def test_close_cancels_the_measurements_in_flight_and_ends_every_session(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.put_dead_letters_to_sleep("acme")
    exporter = make_exporter(platform.exporter_url, signals="dlq,preservation", ttl="60", deadline="40")
    try:
        page = await scrape(exporter, 0.5)  # answers without the sleeping signal; its measurement goes on
        assert page.measured("dlq") == 0
        assert await wait_until(lambda: sleeping(platform), 10)
        assert "measure-dlq" in measuring()
    finally:
        await exporter.close()
    assert measuring() == set()
    assert await platform.exporter_sessions() == 0
    for cache in exporter.caches.values():
        with pytest.raises(Closed, match=f"the cache of signal {cache.signal.name} is closed"):
            await cache.get(1)
    with pytest.raises(Closed):
        await exporter.scrape(1)
    assert await platform.exporter_sessions() == 0


async def test_the_replay_lag_reader_closes_with_the_exporter(platform: Platform) -> None:
    await platform.add_tenant("acme")
    exporter = make_exporter(platform.exporter_url, signals="dlq")
    replay_lag = meta_reader(exporter, ReplayLag)
    await scrape(exporter)
    await exporter.close()
    with pytest.raises(Closed, match="the replay-lag reader is closed"):
        await replay_lag.scraped(1)
    assert await platform.exporter_sessions() == 0


async def test_a_closed_postgres_reader_never_connects_again(platform: Platform) -> None:
    await platform.add_tenant("acme")
    settings = load({"database_url": platform.exporter_url, "deadline": 5}, {})
    postgres = Postgres(postgres_settings(settings), Timeouts(deadline=5))
    assert await postgres.active_tenant_slugs() == ["acme"]
    assert await platform.exporter_sessions() == 1
    await postgres.close()
    assert await platform.exporter_sessions() == 0
    for use in (
        lambda: postgres.fetch("SELECT 1"),
        postgres.active_tenant_slugs,
        lambda: postgres.fetch_tenant_batches("dlq", lambda schemas: "SELECT 1"),
        postgres.probe_session,
        lambda: postgres.narrowed(["acme"]).fetch("SELECT 1"),
    ):
        with pytest.raises(Closed, match="the PostgreSQL reader is closed"):
            await use()
    assert await platform.exporter_sessions() == 0
