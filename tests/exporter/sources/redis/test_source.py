"""The Redis client of the streams signal: one round trip, no retry, closed when asked."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from devkit.round_trips import RoundTripProxy as Proxy
from devkit.servers import LocalRedis
from devkit.streams import create_stream_groups
from exporter.errors import Closed
from exporter.sources.redis.errors import RedisGroupMissing, RedisPermissionDenied
from exporter.sources.redis.source import RedisSettings, RedisStreams, StreamsQuery
from exporter.timeouts import Timeouts
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

CLIENT_NAME = "orpycamcp-exporter"


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    client = Redis.from_url(redis.url, decode_responses=True)
    await client.flushall()
    await create_stream_groups(client)
    try:
        yield client
    finally:
        await client.aclose()


async def exporter_clients(db: Redis) -> list[dict[str, str]]:
    clients = await db.client_list()
    return [client for client in clients if client.get("name") == CLIENT_NAME]


async def test_one_measurement_is_one_round_trip(redis: LocalRedis, db: Redis) -> None:
    await db.xadd(DEADLETTER_STREAMS[0], {"event": "failed"}, id="1764600000000-0")
    proxy = Proxy(redis.port)
    await proxy.start()
    streams = RedisStreams(
        RedisSettings(proxy.url, replica_max_staleness=60, sentinel_majority="configured"), Timeouts(2.0)
    )
    try:
        await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))  # opens and sets up the connection
        assert proxy.connections == 1
        before = proxy.round_trips
        reading = await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert proxy.round_trips - before == 1
        assert proxy.connections == 1  # the connection is kept between measurements
        assert len(reading.pending) == len(STREAM_GROUPS)
        assert reading.lengths == (1, 0, 0)
        assert reading.first_entries[0] == [(b"1764600000000-0", {b"event": b"failed"})]  # bytes, as Redis sent them
        assert reading.first_entries[1:] == ([], [])
    finally:
        await streams.close()
        await proxy.close()


async def test_a_failed_connection_is_not_retried(redis: LocalRedis) -> None:
    proxy = Proxy(redis.port, drop=True)
    await proxy.start()
    streams = RedisStreams(
        RedisSettings(proxy.url, replica_max_staleness=60, sentinel_majority="configured"), Timeouts(5.0)
    )
    try:
        started = time.monotonic()
        with pytest.raises(RedisConnectionError):
            await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert time.monotonic() - started < 1.0
        assert proxy.connections == 1
        assert streams.replica_link is None  # not read: no replica gauge
    finally:
        await streams.close()
        await proxy.close()


async def test_close_ends_the_connection_and_a_later_read_builds_no_client(redis: LocalRedis, db: Redis) -> None:
    streams = RedisStreams(
        RedisSettings(redis.url, replica_max_staleness=60, sentinel_majority="configured"), Timeouts(2.0)
    )
    try:
        await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert len(await exporter_clients(db)) == 1
        await streams.close()
        await streams.close()  # closing twice is harmless

        async def gone() -> bool:
            return not await exporter_clients(db)

        await wait_until(gone, 30)  # the server notices the closed socket shortly after
        assert await exporter_clients(db) == []

        with pytest.raises(Closed, match="the Redis reader is closed"):
            await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert await exporter_clients(db) == []
    finally:
        await streams.close()


async def test_info_refused_is_redis_refusing_info_in_its_masked_words(redis: LocalRedis, db: Redis) -> None:
    # An ACL user that may read the streams but not INFO: the replica check cannot be made.
    user, password = "streams-only", "no-Info-Pw3"
    await db.acl_setuser(user, enabled=True, passwords=[f"+{password}"], keys=["*"], commands=["+@all", "-info"])
    streams = RedisStreams(
        RedisSettings(
            f"redis://{user}:{password}@127.0.0.1:{redis.port}/0",
            replica_max_staleness=60,
            sentinel_majority="configured",
        ),
        Timeouts(2.0),
    )
    try:
        with pytest.raises(RedisPermissionDenied) as raised:
            await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert raised.value.command == "INFO"
        assert raised.value.key is None
        assert user not in raised.value.server_message  # the user name of the URL, masked
        assert "'info' command" in raised.value.server_message
        assert streams.replica_link is None
        # Allowed INFO, refused XPENDING: the first command's refusal, in place in the replies, masked alike.
        await db.acl_setuser(user, commands=["+info", "-xpending"])
        with pytest.raises(RedisPermissionDenied) as raised:
            await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert (raised.value.command, raised.value.key) == ("XPENDING", STREAM_GROUPS[0][0])
        assert user not in raised.value.server_message
        assert "'xpending' command" in raised.value.server_message
    finally:
        await streams.close()
        await db.acl_deluser(user)


async def test_a_declared_group_missing_is_the_first_error_reply_raised(redis: LocalRedis, db: Redis) -> None:
    (stream, group), *_ = STREAM_GROUPS
    await db.xgroup_destroy(stream, group)
    streams = RedisStreams(
        RedisSettings(redis.url, replica_max_staleness=60, sentinel_majority="configured"), Timeouts(2.0)
    )
    try:
        with pytest.raises(RedisGroupMissing) as raised:
            await streams.read(StreamsQuery(STREAM_GROUPS, DEADLETTER_STREAMS))
        assert (raised.value.stream, raised.value.group) == (stream, group)
    finally:
        await streams.close()
