"""The Redis client of the streams signal: one round trip, no retry, closed when asked."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis
from redis.exceptions import ConnectionError as RedisConnectionError

from devkit.servers import LocalRedis
from devkit.streams import create_stream_groups
from exporter.errors import Closed
from exporter.sources.redis import RedisSettings, RedisStreams
from exporter.timeouts import Timeouts
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

CLIENT_NAME = "orpycamcp-exporter"


class Proxy:
    """A TCP relay in front of a real Redis that counts connections and round trips.

    A round trip starts whenever the client sends after the server has answered
    (or first on a connection). With `drop`, every connection is closed at once.
    """

    def __init__(self, target_port: int, drop: bool = False) -> None:
        self.target_port = target_port
        self.drop = drop
        self.connections = 0
        self.round_trips = 0
        self._server: asyncio.Server | None = None
        self._handlers: set[asyncio.Task[None]] = set()

    @property
    def url(self) -> str:
        assert self._server is not None
        port: int = self._server.sockets[0].getsockname()[1]
        return f"redis://127.0.0.1:{port}/0"

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)

    async def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        task = asyncio.current_task()
        assert task is not None
        self._handlers.add(task)
        try:
            if self.drop:
                return
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
            client_turn = [False]  # True while the client is sending
            try:
                await asyncio.gather(
                    self._pump(reader, up_writer, client_turn, from_client=True),
                    self._pump(up_reader, writer, client_turn, from_client=False),
                )
            finally:
                up_writer.close()
                with contextlib.suppress(OSError):
                    await up_writer.wait_closed()
        finally:
            writer.close()
            with contextlib.suppress(OSError):
                await writer.wait_closed()
            self._handlers.discard(task)

    async def _pump(
        self, source: asyncio.StreamReader, sink: asyncio.StreamWriter, client_turn: list[bool], from_client: bool
    ) -> None:
        with contextlib.suppress(OSError):
            while data := await source.read(65536):
                if from_client and not client_turn[0]:
                    self.round_trips += 1
                client_turn[0] = from_client
                sink.write(data)
                await sink.drain()
        if sink.can_write_eof():
            with contextlib.suppress(OSError):
                sink.write_eof()

    async def close(self) -> None:
        assert self._server is not None
        self._server.close()
        await self._server.wait_closed()
        for task in list(self._handlers):
            with contextlib.suppress(asyncio.TimeoutError):
                await asyncio.wait_for(asyncio.shield(task), timeout=5)


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
    streams = RedisStreams(RedisSettings(proxy.url), Timeouts(2.0))
    try:
        await streams.read(STREAM_GROUPS, DEADLETTER_STREAMS)  # opens and sets up the connection
        assert proxy.connections == 1
        before = proxy.round_trips
        reading = await streams.read(STREAM_GROUPS, DEADLETTER_STREAMS)
        assert proxy.round_trips - before == 1
        assert proxy.connections == 1  # the connection is kept between measurements
        assert len(reading.pending) == len(STREAM_GROUPS)
        assert reading.lengths == (1, 0, 0)
        assert reading.first_entries[0] == [("1764600000000-0", {"event": "failed"})]
        assert reading.first_entries[1:] == ([], [])
    finally:
        await streams.close()
        await proxy.close()


async def test_a_failed_connection_is_not_retried(redis: LocalRedis) -> None:
    proxy = Proxy(redis.port, drop=True)
    await proxy.start()
    streams = RedisStreams(RedisSettings(proxy.url), Timeouts(5.0))
    try:
        started = time.monotonic()
        with pytest.raises(RedisConnectionError):
            await streams.read(STREAM_GROUPS, DEADLETTER_STREAMS)
        assert time.monotonic() - started < 1.0
        assert proxy.connections == 1
    finally:
        await streams.close()
        await proxy.close()


async def test_close_ends_the_connection_and_a_later_read_builds_no_client(redis: LocalRedis, db: Redis) -> None:
    streams = RedisStreams(RedisSettings(redis.url), Timeouts(2.0))
    try:
        await streams.read(STREAM_GROUPS, DEADLETTER_STREAMS)
        assert len(await exporter_clients(db)) == 1
        await streams.close()
        await streams.close()  # closing twice is harmless

        async def gone() -> bool:
            return not await exporter_clients(db)

        await wait_until(gone, 5)  # the server notices the closed socket shortly after
        assert await exporter_clients(db) == []

        with pytest.raises(Closed, match="the Redis reader is closed"):
            await streams.read(STREAM_GROUPS, DEADLETTER_STREAMS)
        assert await exporter_clients(db) == []
    finally:
        await streams.close()
