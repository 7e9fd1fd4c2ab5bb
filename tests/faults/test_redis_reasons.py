"""Redis's own refusals, each on a real server, each its own reason with a hint
about Redis (never a PostgreSQL setting), the same in `diagnose`: ACL users
(a command, a key, exactly the documented rights), a plain URL on a cluster
node (MOVED), a cluster not serving a slot (CLUSTERDOWN), a server loading its
data (LOADING), a replica cut from its master (MASTERDOWN), a missing group."""

from __future__ import annotations

import signal
from collections.abc import AsyncIterator, Iterator

import pytest
from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from devkit.servers import LocalRedis, ServerUnavailable, free_port
from exporter.loading import load
from exporter.reasons import Reason
from exporter.signals.base import Source
from exporter.tools import throwaway
from exporter.tools.diagnose import diagnose
from exporter.tools.hints import hint
from registry.reasons import REDIS_ACL
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.redis_streams import (
    counts_of,
    expected_values,
    failure_of,
    failure_reading,
    measure_streams,
    streams_source,
    write_backlog,
)
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

POSTGRES_WORDS = ("target_session_attrs", "pg_locks", "SQLSTATE", "GRANT", "pg_hba")
USER_PASSWORD = "acl-Pw3"


# A cluster node's bus listens 10000 ports above its own.
HIGHEST_CLUSTER_PORT = 65535 - 10000


def cluster_port() -> int:
    return next(port for port in iter(free_port, 0) if port <= HIGHEST_CLUSTER_PORT)


def started(*args: str, port: int | None = None) -> LocalRedis:
    try:
        return throwaway.start_redis(LocalRedis, ("--enable-debug-command", "local", *args), port)
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install Redis 7 (apt-get install redis-server).", pytrace=False)


@pytest.fixture(scope="module")
def server() -> Iterator[LocalRedis]:
    own = started()
    yield own
    own.remove()


@pytest.fixture
async def admin(server: LocalRedis) -> AsyncIterator[Redis]:
    client = Redis(port=server.port, decode_responses=True)
    await client.flushall()
    await write_backlog(client, 3)
    yield client
    for user in await client.acl_users():
        if user != "default":
            await client.acl_deluser(str(user))
    await client.aclose()


async def diagnosed(url: str) -> list[str]:
    lines: list[str] = []
    code = await diagnose(load({"redis_url": url, "deadline": "2"}, {}), lines.append)
    assert code in (0, 1)
    return lines


def assert_redis_hint(reason: Reason) -> None:
    text = hint(reason, Source.REDIS)
    assert not [word for word in POSTGRES_WORDS if word in text], text


async def assert_diagnosed(url: str, reason: Reason, *words: str) -> None:
    """diagnose's line for the streams signal, and its hint, say the same."""
    lines = await diagnosed(url)
    status = next(line for line in lines if line.startswith(("ok   streams", "FAIL streams")))
    assert status.startswith(f"FAIL streams: not measurable: {reason}: "), lines
    for word in words:
        assert word in status, lines
    hint_line = lines[lines.index(status) + 1]
    assert hint_line == f"     hint: {hint(reason, Source.REDIS)}"


def acl_url(server: LocalRedis, user: str) -> str:
    return f"redis://{user}:{USER_PASSWORD}@127.0.0.1:{server.port}/0"


async def set_user(admin: Redis, user: str, rules: str) -> None:
    await admin.execute_command("ACL", "SETUSER", user, "on", f">{USER_PASSWORD}", *rules.split())  # type: ignore[no-untyped-call]


async def test_the_documented_acl_user_reads_exactly(server: LocalRedis, admin: Redis) -> None:
    prefix = "ACL SETUSER orpycamcp_exporter on >PASSWORD "
    assert REDIS_ACL.startswith(prefix)
    await set_user(admin, "orpycamcp_exporter", REDIS_ACL.removeprefix(prefix))
    source = streams_source(acl_url(server, "orpycamcp_exporter"))
    try:
        assert counts_of(await measure_streams(source)) == await expected_values(admin)
    finally:
        await source.close()
    # Exactly: the same user without any one of its command rights is refused.
    for command in (
        "xpending",
        "xinfo|groups",
        "xinfo|stream",
        "xinfo|consumers",
        "xlen",
        "xrange",
        "info",
        "client|setname",
    ):
        await set_user(admin, "narrower", REDIS_ACL.removeprefix(prefix).replace(f"+{command}", ""))
        narrower = streams_source(acl_url(server, "narrower"))
        try:
            assert failure_of(await measure_streams(narrower)).reason is Reason.PERMISSION_DENIED, command
        finally:
            await narrower.close()


async def test_a_user_lacking_a_command_is_denied_naming_it_and_the_key(server: LocalRedis, admin: Redis) -> None:
    await set_user(
        admin,
        "noxpending",
        "resetkeys %R~orpycamcp.* -@all +xinfo|groups +xinfo|stream +xinfo|consumers +xlen +xrange +info"
        " +client|setname",
    )
    url = acl_url(server, "noxpending")
    failure = await failure_reading(url)
    stream, _group = STREAM_GROUPS[0]
    assert failure.reason is Reason.PERMISSION_DENIED
    assert failure.detail.startswith(f"Redis refused XPENDING on key {stream!r} to the exporter's ACL user: NOPERM")
    assert "'xpending' command" in failure.detail
    assert_redis_hint(Reason.PERMISSION_DENIED)
    await assert_diagnosed(url, Reason.PERMISSION_DENIED, "XPENDING", stream)


async def test_a_user_lacking_a_key_is_denied_naming_the_key(server: LocalRedis, admin: Redis) -> None:
    # Every key the exporter reads but the dead-letter streams.
    await set_user(
        admin,
        "nodeadletters",
        "resetkeys %R~orpycamcp.*.events -@all +xpending +xinfo|groups +xinfo|stream +xinfo|consumers +xlen +xrange"
        " +info +client|setname",
    )
    failure = await failure_reading(acl_url(server, "nodeadletters"))
    assert failure.reason is Reason.PERMISSION_DENIED
    assert failure.detail.startswith(f"Redis refused XLEN on key {DEADLETTER_STREAMS[0]!r}")
    assert "keys" in failure.detail


async def test_a_plain_url_on_a_cluster_node_names_the_cluster_url() -> None:
    nodes = [started("--cluster-enabled", "yes", port=cluster_port()) for _ in range(2)]
    try:
        first, second = (Redis(port=node.port, decode_responses=True) for node in nodes)
        await first.execute_command("CLUSTER", "ADDSLOTSRANGE", 0, 8191)  # type: ignore[no-untyped-call]
        await second.execute_command("CLUSTER", "ADDSLOTSRANGE", 8192, 16383)  # type: ignore[no-untyped-call]
        await first.execute_command("CLUSTER", "MEET", "127.0.0.1", nodes[1].port)  # type: ignore[no-untyped-call]

        async def cluster_ok() -> bool:
            infos = [await client.execute_command("CLUSTER", "INFO") for client in (first, second)]  # type: ignore[no-untyped-call]
            return all("cluster_state:ok" in info for info in infos)

        assert await wait_until(cluster_ok, 20, 0.2), "the two nodes never formed a cluster"
        slots = [await first.execute_command("CLUSTER", "KEYSLOT", stream) for stream, _ in STREAM_GROUPS]  # type: ignore[no-untyped-call]
        assert any(slot >= 8192 for slot in slots), "no stream lives on the second node"
        url = f"redis://127.0.0.1:{nodes[0].port}/0"
        failure = await failure_reading(url)
        assert failure.reason is Reason.CLUSTER_REDIRECT
        assert f"is served by 127.0.0.1:{nodes[1].port}" in failure.detail
        assert "redis+cluster://" in failure.detail
        assert "redis+cluster://" in hint(Reason.CLUSTER_REDIRECT, Source.REDIS)
        await assert_diagnosed(url, Reason.CLUSTER_REDIRECT, "Redis Cluster")
        # The URL it names reads the same data, exactly.
        plain = RedisCluster(host="127.0.0.1", port=nodes[0].port, decode_responses=True)
        await write_backlog(plain, 3)
        cluster = streams_source(f"redis+cluster://127.0.0.1:{nodes[0].port},127.0.0.1:{nodes[1].port}")
        try:
            assert counts_of(await measure_streams(cluster)) == await expected_values(plain)
        finally:
            await cluster.close()
            await plain.aclose()
        await first.aclose()
        await second.aclose()
    finally:
        for node in nodes:
            node.remove()


async def test_a_cluster_node_serving_no_slot_is_cluster_down() -> None:
    node = started("--cluster-enabled", "yes", port=cluster_port())
    try:
        url = f"redis://127.0.0.1:{node.port}/0"
        failure = await failure_reading(url)
        assert failure.reason is Reason.CLUSTER_DOWN
        assert failure.detail.startswith("Redis answered CLUSTERDOWN ")
        assert_redis_hint(Reason.CLUSTER_DOWN)
        await assert_diagnosed(url, Reason.CLUSTER_DOWN, "CLUSTERDOWN")
    finally:
        node.remove()


async def test_a_server_loading_its_data_is_server_loading() -> None:
    node = started()
    try:
        client = Redis(port=node.port, decode_responses=True)
        await write_backlog(client, 3)
        # Enough data, loaded slowly enough, for a refresh to land while it loads.
        await client.execute_command("DEBUG", "POPULATE", 20000, "filler")  # type: ignore[no-untyped-call]
        await client.save()
        await client.aclose()
        node.stop()
        node.extra_args = (
            *node.extra_args,
            "--key-load-delay",
            "100",
            "--loading-process-events-interval-bytes",
            "1024",
        )
        node.start()
        source = streams_source(node.url)
        try:
            failure = failure_of(await measure_streams(source))
            assert failure.reason is Reason.SERVER_LOADING
            assert failure.detail.startswith("Redis answered LOADING ")
            assert_redis_hint(Reason.SERVER_LOADING)
        finally:
            await source.close()
    finally:
        node.remove()


async def test_a_replica_cut_from_its_master_is_master_down() -> None:
    master = started()
    replica = started("--replicaof", "127.0.0.1", "0", "--replica-serve-stale-data", "no")
    try:
        replica_client = Redis(port=replica.port, decode_responses=True)
        await replica_client.replicaof("127.0.0.1", master.port)
        master_client = Redis(port=master.port, decode_responses=True)
        await write_backlog(master_client, 3)
        assert await master_client.wait(1, 5000) == 1
        await master_client.aclose()
        url = replica.url
        source = streams_source(url)
        try:
            assert counts_of(await measure_streams(source)) == await expected_values(replica_client)
            master.stop(signal.SIGKILL)

            async def link_down() -> bool:
                return bool((await replica_client.info("replication"))["master_link_status"] == "down")

            assert await wait_until(link_down, 10)
            failure = failure_of(await measure_streams(source))
        finally:
            await source.close()
            await replica_client.aclose()
        assert failure.reason is Reason.MASTER_DOWN
        assert failure.detail.startswith("Redis answered MASTERDOWN ")
        assert_redis_hint(Reason.MASTER_DOWN)
        await assert_diagnosed(url, Reason.MASTER_DOWN, "MASTERDOWN")
    finally:
        master.remove()
        replica.remove()


async def test_a_missing_group_names_the_stream_and_the_group(server: LocalRedis, admin: Redis) -> None:
    stream, group = STREAM_GROUPS[-1]
    await admin.xgroup_destroy(stream, group)
    failure = await failure_reading(server.url)
    assert failure.reason is Reason.MISSING_GROUP
    assert failure.detail == f"stream {stream!r} has no consumer group {group!r} (or the stream does not exist)"


# Reasons only a PostgreSQL measurement gives.
POSTGRES_ONLY = frozenset(
    {
        Reason.TENANT_LIST_UNREADABLE,
        Reason.MISSING_TABLE,
        Reason.STATEMENT_TIMEOUT,
        Reason.LOCK_TIMEOUT,
        Reason.SQL_ERROR,
        Reason.TRANSACTION_POOLER,
        Reason.STATEMENT_POOLER,
        Reason.CONNECT_NOT_GRANTED,
        Reason.TOO_MANY_CONNECTIONS,
        Reason.INVALID_TENANT,
    }
)


def test_no_redis_hint_speaks_of_postgresql() -> None:
    for reason in set(Reason) - POSTGRES_ONLY:
        assert_redis_hint(reason)


def test_the_timeout_hint_on_redis_is_about_redis() -> None:
    assert "SLOWLOG" in hint(Reason.TIMEOUT, Source.REDIS)
