"""The streams signal read from a Redis replica: measured, with how far behind
it may be, while its link to its master holds or has been down for less than
--redis.replica-max-staleness; unmeasured with `replica_stale` past it (never
its stale values shown as current); exact again once the link is mended."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
import redis

from devkit.redis_cluster import ReplicaPair, start_redis_with, start_replica_pair
from devkit.servers import REDIS_HINT, free_port, serving
from devkit.streams import create_stream_groups_at
from exporter.errors import ReplicaStale
from exporter.reasons import Reason
from exporter.sources.redis.source import StreamsQuery
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.clock import FakeClock
from tests.redis_streams import streams_source
from tests.scrapes import STREAMS_PREFIX, make_exporter, scrape, value_series
from tests.waits import wait_until_sync

pytestmark = pytest.mark.anyio

LAG = "orpycamcp_redis_replica_lag_seconds"
ENTRIES = "orpycamcp_deadletter_stream_entries"
BOUND = 5  # seconds: --redis.replica-max-staleness for these tests (a loaded machine's scrape falls within it)
TTL = 100.0  # seconds on the tests' clock: no real time passes for it
STREAM = DEADLETTER_STREAMS[0]


@pytest.fixture(scope="module")
def pair() -> Iterator[ReplicaPair]:
    with serving(start_replica_pair, REDIS_HINT) as started:
        yield started


def url(port: int) -> str:
    return f"redis://127.0.0.1:{port}/0"


def master_length(pair: ReplicaPair) -> int:
    with redis.Redis(host="127.0.0.1", port=pair.master.port, decode_responses=True) as client:
        length: int = client.xlen(STREAM)
        return length


def add_entries(pair: ReplicaPair, count: int) -> None:
    with redis.Redis(host="127.0.0.1", port=pair.master.port, decode_responses=True) as client:
        for n in range(count):
            client.xadd(STREAM, {"failed": str(n)})


def link_seconds(pair: ReplicaPair, field: str) -> int:
    value = pair.link()[field]
    assert isinstance(value, int), pair.link()
    return value


async def test_a_replica_is_measured_within_the_bound_and_unmeasured_past_it(pair: ReplicaPair) -> None:
    await create_stream_groups_at(url(pair.master.port))
    add_entries(pair, 3)
    pair.wait_link_up()
    clock = FakeClock()
    exporter = make_exporter(
        None,
        url(pair.replica.port),
        clock.clock,
        ttl=f"{TTL:g}",
        deadline="10",
        redis_replica_max_staleness=f"{BOUND}",
    )
    try:
        # Linked: the master's values, and how long since the replica last heard from it.
        before = link_seconds(pair, "master_last_io_seconds_ago")
        page = await scrape(exporter)
        after = link_seconds(pair, "master_last_io_seconds_ago")
        assert page.measured("streams") == 1
        assert page.get(ENTRIES, stream=STREAM) == master_length(pair) == 3
        lag = page.get(LAG)
        assert lag is not None
        assert min(before, after) <= lag <= max(before, after)

        # Cut: the master takes two more entries the replica never receives.
        pair.cut()
        add_entries(pair, 2)
        assert master_length(pair) == 5
        clock.advance(TTL)
        before = link_seconds(pair, "master_link_down_since_seconds")
        page = await scrape(exporter)
        after = link_seconds(pair, "master_link_down_since_seconds")
        assert after < BOUND, "the scrape must fall within the bound for this step"
        # Within the bound: what the replica has, and the gauge saying how old it may be.
        assert page.measured("streams") == 1
        assert page.get(ENTRIES, stream=STREAM) == 3
        lag = page.get(LAG)
        assert lag is not None
        assert before <= lag <= after

        # Past the bound: unmeasured, no value series; the gauge and the reason say why.
        assert wait_until_sync(lambda: link_seconds(pair, "master_link_down_since_seconds") > BOUND, 3 * BOUND)
        clock.advance(TTL)
        before = link_seconds(pair, "master_link_down_since_seconds")
        page = await scrape(exporter)
        after = link_seconds(pair, "master_link_down_since_seconds")
        assert page.measured("streams") == 0
        assert value_series(page, STREAMS_PREFIX) == []
        lag = page.get(LAG)
        assert lag is not None
        assert BOUND < before <= lag <= after
        failure = exporter.caches["streams"].last
        assert failure is not None
        assert failure.failure is not None
        assert failure.failure.reason is Reason.REPLICA_STALE
        assert "link to its master down for" in failure.failure.detail
        assert "--redis.replica-max-staleness" in failure.failure.detail

        # Mended: caught up, exact again.
        pair.mend()
        clock.advance(TTL)
        page = await scrape(exporter)
        assert page.measured("streams") == 1
        assert page.get(ENTRIES, stream=STREAM) == master_length(pair) == 5
        assert page.get(LAG) is not None
    finally:
        await exporter.close()


async def test_a_master_has_no_replica_gauge(pair: ReplicaPair) -> None:
    await create_stream_groups_at(url(pair.master.port))
    exporter = make_exporter(None, url(pair.master.port))
    try:
        page = await scrape(exporter)
        assert page.measured("streams") == 1
        assert page.get(ENTRIES, stream=STREAM) == master_length(pair)
        assert page.family(LAG) == {}
    finally:
        await exporter.close()


async def test_a_replica_that_never_synchronised_is_unmeasured_at_once() -> None:
    orphan = start_redis_with(("--replicaof", "127.0.0.1", str(free_port())))
    try:
        assert orphan_link(orphan.port).get("master_link_down_since_seconds") == -1
        exporter = make_exporter(None, url(orphan.port))
        try:
            page = await scrape(exporter)
            assert page.measured("streams") == 0
            assert page.family(LAG) == {}
            last = exporter.caches["streams"].last
            assert last is not None
            assert last.failure is not None
            assert last.failure.reason is Reason.REPLICA_STALE
            assert "never synchronised" in last.failure.detail
            assert f"Redis replica 127.0.0.1:{orphan.port}: " in last.failure.detail
        finally:
            await exporter.close()
        # The reader names the signal it reads for (a declared stream signal has its own name).
        source = streams_source(url(orphan.port))
        try:
            with pytest.raises(ReplicaStale) as raised:
                await source.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS), signal="payments")
            assert raised.value.signal == "payments"
        finally:
            await source.close()
    finally:
        orphan.remove()


def orphan_link(port: int) -> dict[str, object]:
    with redis.Redis(host="127.0.0.1", port=port, decode_responses=True) as client:
        info: dict[str, object] = client.info("replication")
        return info
