"""A Redis Cluster as an operator meets it: nodes closing idle connections
(`timeout`), a URL that names no reachable node or a server without cluster
mode, and the cluster ACL with each right removed in turn, `ASKING` included.
Every failure is a reason that says what to do, never `internal_error`."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio.cluster import ClusterNode, RedisCluster

from devkit.redis_cluster import LocalCluster, start_cluster
from devkit.servers import REDIS_HINT, LocalRedis, free_port, serving, start_redis
from exporter.reasons import Reason
from exporter.signals.base import Source
from exporter.tools.hints import hint
from registry.reasons import REDIS_ACL, REDIS_CLUSTER_RIGHTS
from registry.values import DEADLETTER_STREAMS
from tests.redis_streams import counts_of, expected_values, failure_of, measure_streams, streams_source, write_backlog
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

PASSWORD = "acl-Pw5"
PREFIX = "ACL SETUSER orpycamcp_exporter on >PASSWORD "


@pytest.fixture(scope="module")
def cluster() -> Iterator[LocalCluster]:
    with serving(lambda: start_cluster(masters=3), REDIS_HINT) as started:
        yield started


@pytest.fixture
async def plain(cluster: LocalCluster) -> AsyncIterator[RedisCluster]:
    client = RedisCluster(startup_nodes=[ClusterNode("127.0.0.1", port) for port in cluster.ports])
    await client.flushall()
    await write_backlog(client, 3)
    yield client
    await client.aclose()
    for port in cluster.ports:
        with cluster.client(port) as node:
            node.config_set("timeout", 0)
            for user in node.acl_users():
                if user != "default":
                    node.acl_deluser(user)


def urls(cluster: LocalCluster, user: str = "") -> str:
    userinfo = f"{user}:{PASSWORD}@" if user else ""
    return f"redis+cluster://{userinfo}" + ",".join(f"127.0.0.1:{port}" for port in cluster.ports)


def exporter_client_ids(cluster: LocalCluster) -> set[tuple[int, int]]:
    ids: set[tuple[int, int]] = set()
    for port in cluster.ports:
        with cluster.client(port) as node:
            ids |= {(port, int(c["id"])) for c in node.client_list() if c.get("name") == "orpycamcp-exporter"}
    return ids


async def test_nodes_closing_idle_connections_cost_no_measurement(cluster: LocalCluster, plain: RedisCluster) -> None:
    """`timeout 1` on every node: each refresh finds the connections of the last one
    closed by the server, and reconnects before sending rather than failing."""
    for port in cluster.ports:
        with cluster.client(port) as node:
            node.config_set("timeout", 1)
    expected = await expected_values(plain)
    source = streams_source(urls(cluster))
    try:
        for _ in range(4):
            assert counts_of(await measure_streams(source)) == expected
            held = exporter_client_ids(cluster)
            assert held

            async def closed(held: set[tuple[int, int]] = held) -> bool:
                return not exporter_client_ids(cluster) & held

            # The nodes close them past their timeout (checked about every 100 ms): waited for,
            # so each refresh finds the last one's connections closed by the server. Then one
            # turn of the event loop, whatever its length, reads the close on the exporter's
            # sockets, as it has for any scrape that comes later than the close; a scrape in
            # the very turn the close arrives still reads a ready connection (docs/testing.md).
            assert await wait_until(closed, 60, 0.1), "the nodes never closed the idle connections"
            await asyncio.sleep(0.01)
    finally:
        await source.close()


async def test_a_cluster_url_naming_no_reachable_node_is_a_connection_error() -> None:
    ports = [free_port(), free_port()]
    source = streams_source("redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in ports))
    try:
        failure = failure_of(await measure_streams(source))
    finally:
        await source.close()
    assert failure.reason is Reason.CONNECTION_ERROR
    assert failure.detail.startswith("ConnectionError: no node of the URL answered: ")


async def test_a_cluster_url_at_a_standalone_server_says_to_use_a_plain_url() -> None:
    server: LocalRedis = start_redis()
    try:
        source = streams_source(f"redis+cluster://127.0.0.1:{server.port}")
        try:
            failure = failure_of(await measure_streams(source))
        finally:
            await source.close()
    finally:
        server.remove()
    assert failure.reason is Reason.NOT_A_CLUSTER
    assert "cluster support disabled" in failure.detail
    assert "redis://" in failure.detail
    assert "redis://HOST:PORT" in hint(Reason.NOT_A_CLUSTER, Source.REDIS)


def set_user_everywhere(cluster: LocalCluster, user: str, rules: str) -> None:
    for port in cluster.ports:
        with cluster.client(port) as node:
            node.execute_command("ACL", "SETUSER", user, "reset", "on", f">{PASSWORD}", *rules.split())


def cluster_rules() -> str:
    return f"{REDIS_ACL.removeprefix(PREFIX)} {REDIS_CLUSTER_RIGHTS}"


async def test_the_documented_cluster_acl_reads_exactly_and_each_right_is_needed(
    cluster: LocalCluster, plain: RedisCluster
) -> None:
    assert REDIS_ACL.startswith(PREFIX)
    set_user_everywhere(cluster, "orpycamcp_exporter", cluster_rules())
    source = streams_source(urls(cluster, "orpycamcp_exporter"))
    try:
        assert counts_of(await measure_streams(source)) == await expected_values(plain)
    finally:
        await source.close()
    refused = {
        "xpending": "XPENDING",
        "xinfo|consumers": "XINFO CONSUMERS",
        "xinfo|groups": "XINFO GROUPS",
        "xlen": "XLEN",
        "xrange": "XRANGE",
        "cluster|slots": "CLUSTER SLOTS",
        "client|setname": "",
    }
    for right, command in refused.items():
        set_user_everywhere(cluster, "narrower", cluster_rules().replace(f" +{right}", ""))
        narrower = streams_source(urls(cluster, "narrower"))
        try:
            failure = failure_of(await measure_streams(narrower))
        finally:
            await narrower.close()
        assert failure.reason is Reason.PERMISSION_DENIED, (right, failure)
        assert command in failure.detail, (right, failure)


async def test_a_refused_asking_is_permission_denied(cluster: LocalCluster, plain: RedisCluster) -> None:
    """A slot half migrated, its key already on the importing node: reading it there
    takes ASKING, which the ACL must allow."""
    expected = await expected_values(plain)
    set_user_everywhere(cluster, "noasking", cluster_rules().replace(" +asking", ""))
    set_user_everywhere(cluster, "orpycamcp_exporter", cluster_rules())
    moving = DEADLETTER_STREAMS[0]
    slot = cluster.keyslot(moving)
    target = next(port for port in cluster.ports if port != cluster.slot_owner(slot))
    owner = cluster.begin_migration(slot, target)
    try:
        assert cluster.migrate_keys(slot, owner, target) == [moving]
        source = streams_source(urls(cluster, "noasking"))
        allowed = streams_source(urls(cluster, "orpycamcp_exporter"))
        try:
            failure = failure_of(await measure_streams(source))
            assert counts_of(await measure_streams(allowed)) == expected
        finally:
            await source.close()
            await allowed.close()
        assert failure.reason is Reason.PERMISSION_DENIED, failure
        assert failure.detail.startswith("Redis refused ASKING to the exporter's ACL user: NOPERM"), failure
    finally:
        cluster.end_migration(slot, owner, target)
        cluster.wait_ok()
