"""The database stopped and restarted under a running exporter."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from devkit.servers import PostgresServer, postgres_server
from tests.clock import FakeClock
from tests.platform import create_platform
from tests.scrapes import DLQ_PREFIX, make_exporter, scrape, value_series

pytestmark = pytest.mark.anyio

# The TTL passes on a fake clock; the deadline is real time, with room for a loaded machine.


@pytest.fixture
def own_server() -> Iterator[PostgresServer]:
    with postgres_server() as server:
        yield server


async def test_database_down_then_back_without_restarting_the_exporter(own_server: PostgresServer) -> None:
    platform = await create_platform(own_server)
    await platform.add_tenant("acme")
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, None, clock.clock, ttl="10", deadline="5")
    try:
        good = await scrape(exporter)
        assert [good.measured(s) for s in ("dlq", "preservation", "audit_chain")] == [1, 1, 1]
        last_success = good.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq")

        own_server.stop()
        clock.advance(10.1)  # past the TTL: the next scrape measures
        down = await scrape(exporter)
        assert [down.measured(s) for s in ("dlq", "preservation", "audit_chain")] == [0, 0, 0]
        assert value_series(down, DLQ_PREFIX) == []
        assert down.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq") == last_success

        own_server.start()
        clock.advance(10.1)  # past the TTL: the next scrape measures
        back = await scrape(exporter)
        assert [back.measured(s) for s in ("dlq", "preservation", "audit_chain")] == [1, 1, 1]
        assert back.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq") > last_success  # type: ignore[operator]
    finally:
        await exporter.close()


async def test_database_down_at_start(own_server: PostgresServer) -> None:
    platform = await create_platform(own_server)
    own_server.stop()
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, None, clock.clock, ttl="10", deadline="5")
    try:
        down = await scrape(exporter)
        assert [down.measured(s) for s in ("dlq", "preservation", "audit_chain")] == [0, 0, 0]
        assert down.get("orpycamcp_signal_last_success_timestamp_seconds", signal="dlq") is None
        own_server.start()
        clock.advance(10.1)  # past the TTL: the next scrape measures
        up = await scrape(exporter)
        assert [up.measured(s) for s in ("dlq", "preservation", "audit_chain")] == [1, 1, 1]
    finally:
        await exporter.close()
