"""Redis Streams access: one pipelined round trip for every known key.

The streams and groups are known (closed registry), so there is never a KEYS
or SCAN; a failure is not retried here: the cache's TTL is the retry.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence
from dataclasses import dataclass, field

import redis.asyncio
import redis.exceptions
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from exporter.lifecycle import CLOSE_SECONDS, Lifecycle
from exporter.timeouts import Timeouts


@dataclass(frozen=True)
class RedisSettings:
    url: str = field(repr=False)  # it may hold the password
    client_name: str = "orpycamcp-exporter"


@dataclass(frozen=True)
class StreamsReading:
    """The replies as Redis gave them; the streams signal checks their shape."""

    pending: tuple[object, ...]  # XPENDING summaries, one per (stream, group)
    lengths: tuple[object, ...]  # XLEN, one per dead-letter stream
    first_entries: tuple[object, ...]  # XRANGE - + COUNT 1, one per dead-letter stream


class RedisStreams:
    """Reads consumer-group pending lists and dead-letter streams."""

    def __init__(self, settings: RedisSettings, timeouts: Timeouts) -> None:
        self.settings = settings
        self.timeouts = timeouts
        self._client: redis.asyncio.Redis | None = None
        self._life = Lifecycle("the Redis reader")

    def _get_client(self) -> redis.asyncio.Redis:
        self._life.ensure_open()
        if self._client is None:
            self._client = redis.asyncio.Redis.from_url(
                self.settings.url,
                socket_timeout=self.timeouts.deadline,
                socket_connect_timeout=self.timeouts.connect,
                # Never retried: a failure is reported, and the next measurement tries again.
                retry=Retry(NoBackoff(), 0),
                # RESP2: under RESP3, recent clients turn maintenance notifications on, which
                # skips the check that replaces a pooled connection the server has closed; a
                # Redis restart between two measurements would then fail the next one.
                protocol=2,
                decode_responses=True,
                client_name=self.settings.client_name,
            )
        return self._client

    async def read(self, groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str]) -> StreamsReading:
        async with self._get_client().pipeline(transaction=False) as pipe:
            for stream, group in groups:
                pipe.xpending(stream, group)
            for stream in deadletter_streams:
                pipe.xlen(stream)
                pipe.xrange(stream, count=1)
            # Errors come back in place rather than raised: raising would first
            # rewrite the message ("Command # 1 (...) of pipeline caused error:
            # ..."), hiding the server's error code (NOGROUP, WRONGTYPE, ...).
            replies = await pipe.execute(raise_on_error=False)
        for reply in replies:
            if isinstance(reply, redis.exceptions.ResponseError):
                raise reply
        pending = tuple(replies[: len(groups)])
        rest = replies[len(groups) :]
        return StreamsReading(pending=pending, lengths=tuple(rest[0::2]), first_entries=tuple(rest[1::2]))

    async def close(self) -> None:
        self._life.close()
        if self._client is not None:
            client, self._client = self._client, None
            async with asyncio.timeout(CLOSE_SECONDS):
                await client.aclose()
