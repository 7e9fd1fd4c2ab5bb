"""The streams signal on a real 3-master Redis Cluster (redis-cli --cluster
create): each key read on the master owning its slot, values checked against
a plain client asking every node; a slot migrated before, during and after a
reading (exact or unmeasured, never a mix, then exact again); a node down."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
import redis
import redis.exceptions
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from devkit.redis_cluster import LocalCluster, start_cluster
from devkit.round_trips import RoundTripProxy
from devkit.servers import REDIS_HINT, serving
from exporter.measure import measure
from exporter.outcomes import Outcome
from exporter.reasons import Reason
from exporter.signals import streams
from exporter.sources import Sources
from exporter.sources.redis.errors import RedisClusterRedirect
from exporter.sources.redis.source import RedisSettings, RedisStreams, StreamsQuery
from exporter.timeouts import Timeouts
from registry import BUILTIN
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS, UNDELIVERED_UNKNOWN_REASONS

pytestmark = pytest.mark.anyio

Values = dict[tuple[str, tuple[str, ...]], float]
TIMEOUTS = Timeouts(5.0)
CLUSTER_SETTINGS = RedisSettings("redis+cluster://", replica_max_staleness=60, sentinel_majority="configured")
BASE_MS = 1_764_600_000_000  # entry IDs the test chooses: their times are known


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with serving(lambda: start_cluster(masters=3), REDIS_HINT) as running:
        seed(running)
        yield running


def owner_client(cluster: LocalCluster, key: str) -> redis.Redis:
    """A plain client of the node holding `key`, found by asking each node (no slot map)."""
    for port in cluster.ports:
        client = cluster.client(port)
        try:
            client.xlen(key)
            return client
        except redis.exceptions.MovedError:
            client.close()
    raise AssertionError(f"no node serves {key}")


def seed(cluster: LocalCluster) -> None:
    """Groups with pending entries of known IDs, and dead-letter streams of known length."""
    for index, (stream, group) in enumerate(STREAM_GROUPS):
        with owner_client(cluster, stream) as client:
            client.xgroup_create(stream, group, id="0", mkstream=True)
            for n in range(index + 1):
                client.xadd(stream, {"n": str(n)}, id=f"{BASE_MS + 1000 * index + n}-{len(group)}")
            client.xreadgroup(group, "consumer-1", {stream: ">"}, count=index + 1)
    for index, stream in enumerate(DEADLETTER_STREAMS[:-1]):  # the last one is never made: a true 0
        with owner_client(cluster, stream) as client:
            for n in range(2 * index + 1):
                client.xadd(stream, {"failed": str(n)}, id=f"{BASE_MS + 7_000 + 10 * index + n}-0")


def independent_values(cluster: LocalCluster) -> Values:
    """What the signal must report, read with plain clients, each key on the node that answers for it."""
    values: Values = {}
    for stream, group in STREAM_GROUPS:
        with owner_client(cluster, stream) as client:
            summary = client.execute_command("XPENDING", stream, group)
            (info,) = (group_info for group_info in client.xinfo_groups(stream) if group_info["name"] == group)
            consumers = client.xinfo_consumers(stream, group)
        values[("orpycamcp_stream_pending_messages", (stream, group))] = summary["pending"]
        values[("orpycamcp_stream_undelivered_entries", (stream, group))] = info["lag"]
        values[("orpycamcp_stream_consumers", (stream, group))] = len(consumers)
        if summary["pending"]:
            oldest_ms = int(summary["min"].split("-")[0])
            values[("orpycamcp_stream_oldest_pending_timestamp_seconds", (stream, group))] = oldest_ms / 1000
            with owner_client(cluster, stream) as client:
                (oldest,) = client.xpending_range(stream, group, min="-", max="+", count=1)
            values[("orpycamcp_stream_oldest_pending_deliveries", (stream, group))] = oldest["times_delivered"]
    # The seeded groups read what was added, trimming nothing: Redis counts them right.
    values.update(
        {("orpycamcp_stream_undelivered_unknown_groups", (reason,)): 0 for reason in UNDELIVERED_UNKNOWN_REASONS}
    )
    for stream in DEADLETTER_STREAMS:
        with owner_client(cluster, stream) as client:
            length = client.xlen(stream)
            values[("orpycamcp_deadletter_stream_entries", (stream,))] = length
            if length:
                first = client.xrange(stream, count=101)
                first_ms = int(first[0][0].split("-")[0])
                values[("orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds", (stream,))] = first_ms / 1000
                if len(first) == 101:
                    ms_101 = int(first[100][0].split("-")[0])
                    values[("orpycamcp_deadletter_stream_entry_101_timestamp_seconds", (stream,))] = ms_101 / 1000
    return values


def cluster_client(cluster: LocalCluster) -> RedisCluster:
    return RedisCluster(
        startup_nodes=[ClusterNode("127.0.0.1", port) for port in cluster.ports],
        decode_responses=False,  # as the exporter's own: replies are bytes
        protocol=2,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=TIMEOUTS.deadline,
        socket_connect_timeout=TIMEOUTS.connect,
        client_name="orpycamcp-exporter",
    )


@pytest.fixture
async def source(cluster: LocalCluster) -> AsyncIterator[RedisStreams]:
    streams_source = RedisStreams(
        RedisSettings("redis+cluster://", replica_max_staleness=60, sentinel_majority="configured"),
        TIMEOUTS,
        client=cluster_client(cluster),
    )
    try:
        yield streams_source
    finally:
        await streams_source.close()


async def measured(source: RedisStreams) -> Outcome:
    return await measure(streams.SIGNAL, Sources(redis=source), TIMEOUTS, BUILTIN)


TIME_VARYING = "orpycamcp_stream_consumer_idle_seconds"  # grows between two readings


def values_of(outcome: Outcome) -> Values:
    assert outcome.samples is not None, outcome.failure
    return {(sample.family, sample.labels): sample.value for sample in outcome.samples if sample.family != TIME_VARYING}


def reason_of(outcome: Outcome) -> Reason | None:
    return None if outcome.failure is None else outcome.failure.reason


def detail_of(outcome: Outcome) -> str:
    return "" if outcome.failure is None else outcome.failure.detail


def assert_exact_or_unmeasured(outcome: Outcome, expected: Values, reasons: set[Reason]) -> None:
    if outcome.measured:
        assert values_of(outcome) == expected
    else:
        assert outcome.failure is not None
        assert outcome.failure.reason in reasons, outcome.failure


def nodes_holding(cluster: LocalCluster) -> set[int]:
    keys = {stream for stream, _ in STREAM_GROUPS} | set(DEADLETTER_STREAMS)
    return {cluster.slot_owner(cluster.keyslot(key)) for key in keys}


async def test_every_key_read_on_its_own_master_matches_plain_clients_on_each_node(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    assert len(nodes_holding(cluster)) == 3, "the streams must spread over the three masters"
    expected = independent_values(cluster)
    assert expected[("orpycamcp_stream_pending_messages", STREAM_GROUPS[3])] == 4
    assert expected[("orpycamcp_deadletter_stream_entries", (DEADLETTER_STREAMS[1],))] == 3
    assert expected[("orpycamcp_deadletter_stream_entries", (DEADLETTER_STREAMS[2],))] == 0
    for _ in range(2):
        assert values_of(await measured(source)) == expected


async def test_each_node_runs_its_own_keys_commands_once_per_reading(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    await measured(source)  # connections opened, slot map read

    def calls() -> dict[int, int]:
        # XPENDING and XLEN, as each node counts them.
        counts: dict[int, int] = {}
        for port in cluster.ports[: cluster.masters]:
            with cluster.client(port) as client:
                stats = client.info("commandstats")
            counts[port] = sum(int(stats.get(f"cmdstat_{name}", {}).get("calls", 0)) for name in ("xpending", "xlen"))
        return counts

    # Per group two XPENDING (the summary, and its oldest entry's delivery count); per dead-letter stream one XLEN.
    keys_by_node = dict.fromkeys(cluster.ports[: cluster.masters], 0)
    for key, commands in [(stream, 2) for stream, _ in STREAM_GROUPS] + [(stream, 1) for stream in DEADLETTER_STREAMS]:
        keys_by_node[cluster.slot_owner(cluster.keyslot(key))] += commands
    before = calls()
    await measured(source)
    after = calls()
    assert {port: after[port] - before[port] for port in after} == keys_by_node


async def test_a_slot_moved_since_the_last_reading_is_unmeasured_once_then_exact(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    expected = independent_values(cluster)
    assert values_of(await measured(source)) == expected  # the slot map is read now
    moving = DEADLETTER_STREAMS[1]
    slot = cluster.keyslot(moving)
    target = next(port for port in cluster.ports if port != cluster.slot_owner(slot))
    cluster.migrate_slot(slot, target)
    assert cluster.slot_owner(slot) == target
    assert independent_values(cluster) == expected  # the data moved with its slot

    stale = await measured(source)
    assert not stale.measured
    assert reason_of(stale) is Reason.CLUSTER_CHANGED
    assert f"MOVED {slot} 127.0.0.1:{target}" in detail_of(stale)
    assert moving in detail_of(stale)
    assert values_of(await measured(source)) == expected


async def test_a_slot_stuck_half_migrated_is_read_where_each_key_lives(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    """Importing on one node, migrating on the other, the key already moved: the owner
    answers ASK, and the key is read on the importing node (ASKING) in a second round."""
    expected = independent_values(cluster)
    assert values_of(await measured(source)) == expected
    moving = DEADLETTER_STREAMS[0]
    slot = cluster.keyslot(moving)
    target = next(port for port in cluster.ports if port != cluster.slot_owner(slot))
    owner = cluster.begin_migration(slot, target)
    # Importing and migrating, the key still on its owner: read there as before.
    assert values_of(await measured(source)) == expected
    assert cluster.migrate_keys(slot, owner, target) == [moving]
    with cluster.client(owner) as client, pytest.raises(redis.exceptions.AskError):
        client.xlen(moving)  # the owner no longer answers for it
    for _ in range(2):  # however long the migration stays unfinished
        assert values_of(await measured(source)) == expected
    cluster.end_migration(slot, owner, target)
    cluster.wait_ok()
    assert cluster.slot_owner(slot) == target
    moved = await measured(source)  # the slot map still names the old owner: one MOVED, then exact
    assert reason_of(moved) is Reason.CLUSTER_CHANGED
    assert f"MOVED {slot} 127.0.0.1:{target}" in detail_of(moved)
    assert values_of(await measured(source)) == expected


async def test_a_slot_moved_while_a_reading_waits_on_another_node_is_exact_or_unmeasured(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    """One node is paused while the reading is in flight; meanwhile a slot of another
    node moves and its stream grows. The reading must be the state before (exact at
    the time each node answered), or unmeasured: never the grown stream beside the rest."""
    expected = independent_values(cluster)
    assert values_of(await measured(source)) == expected
    moving = DEADLETTER_STREAMS[1]
    slot = cluster.keyslot(moving)
    owner = cluster.slot_owner(slot)
    paused = next(port for port in nodes_holding(cluster) if port != owner)
    target = next(port for port in cluster.ports if port not in (owner, paused))
    cluster.node_of_port(paused).pause()
    try:
        served_before = stream_commands_served(cluster, owner)
        reading = asyncio.create_task(measured(source))
        # The owner answered its part (the moving stream's state before the move);
        # the paused node has not answered.
        while stream_commands_served(cluster, owner) == served_before:
            assert not reading.done()
            await asyncio.sleep(0.02)
        assert not reading.done()
        cluster.begin_migration(slot, target, source=owner)
        cluster.migrate_keys(slot, owner, target)
        cluster.end_migration(slot, owner, target)
        with cluster.client(target) as client:
            client.xadd(moving, {"failed": "late"}, id=f"{BASE_MS + 9_000}-0")
    finally:
        cluster.node_of_port(paused).resume()
    outcome = await reading
    assert_exact_or_unmeasured(outcome, expected, {Reason.CLUSTER_CHANGED})
    cluster.wait_ok()
    grown = independent_values(cluster)
    assert (
        grown[("orpycamcp_deadletter_stream_entries", (moving,))]
        == expected[("orpycamcp_deadletter_stream_entries", (moving,))] + 1
    )
    again = await measured(source)
    if not again.measured:  # routed by the slot map from before the move: one redirect, then exact
        assert reason_of(again) is Reason.CLUSTER_CHANGED, again.failure
        again = await measured(source)
    assert values_of(again) == grown
    with cluster.client(target) as client:
        client.xdel(moving, f"{BASE_MS + 9_000}-0")


def stream_commands_served(cluster: LocalCluster, port: int) -> int:
    """How many stream commands (XLEN, XINFO, XPENDING...) the node at `port` has run."""
    with cluster.client(port) as client:
        stats = client.info("commandstats")
    return sum(int(stat["calls"]) for name, stat in stats.items() if name.startswith("cmdstat_x"))


async def test_a_node_down_is_unmeasured_until_it_is_back_then_exact(
    cluster: LocalCluster, source: RedisStreams
) -> None:
    expected = independent_values(cluster)
    assert values_of(await measured(source)) == expected
    down = cluster.slot_owner(cluster.keyslot(STREAM_GROUPS[0][0]))
    with cluster.client(down) as client:
        client.save()  # its keys come back with it
    cluster.stop_node(down)
    try:
        unreachable = await measured(source)
        assert reason_of(unreachable) is Reason.CONNECTION_ERROR, unreachable.failure
        assert f"127.0.0.1:{down}" in detail_of(unreachable)
        cluster.wait_down()
        failed = await measured(source)
        assert not failed.measured
        assert failed.failure is not None
        assert failed.failure.reason in {Reason.CONNECTION_ERROR, Reason.REDIS_ERROR}, failed.failure
    finally:
        cluster.start_node(down)
    cluster.wait_ok()
    assert values_of(await measured(source)) == expected


async def test_a_plain_url_at_a_cluster_node_surfaces_the_redirect(cluster: LocalCluster) -> None:
    # A node that does not serve the first command's key: it answers MOVED.
    port = next(port for port in cluster.ports if port != cluster.slot_owner(cluster.keyslot(STREAM_GROUPS[0][0])))
    plain = RedisStreams(
        RedisSettings(f"redis://127.0.0.1:{port}/0", replica_max_staleness=60, sentinel_majority="configured"), TIMEOUTS
    )
    try:
        with pytest.raises(RedisClusterRedirect, match=r"use a redis\+cluster:// URL"):
            await plain.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
    finally:
        await plain.close()


async def test_one_round_trip_per_node_per_reading(cluster: LocalCluster) -> None:
    """Through a counting relay in front of each node (the nodes announce the relays' ports)."""
    holding = nodes_holding(cluster)  # by the nodes' own ports, before they announce the relays'
    expected = independent_values(cluster)
    relays = {port: RoundTripProxy(port) for port in cluster.ports}
    for relay in relays.values():
        await relay.start()
    cluster.announce({port: relay.port for port, relay in relays.items()})
    relayed = RedisStreams(
        RedisSettings("redis+cluster://", replica_max_staleness=60, sentinel_majority="configured"),
        TIMEOUTS,
        client=cluster_client(cluster),
    )
    try:
        assert values_of(await measured(relayed)) == expected  # connects, reads the slot map
        before = {port: relay.round_trips for port, relay in relays.items()}
        for _ in range(3):
            await measured(relayed)
        trips = {port: relays[port].round_trips - before[port] for port in relays}
        assert trips == {port: 3 if port in holding else 0 for port in relays}
        assert len(holding) >= 2  # the earlier tests may have gathered some keys on one node
    finally:
        await relayed.close()
        cluster.announce({})
        for relay in relays.values():
            await relay.close()
