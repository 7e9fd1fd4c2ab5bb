"""Redis Streams access: one pipelined round trip for every known key.

The streams and groups are known (closed registry), so there is never a KEYS
or SCAN; a failure is not retried here: the cache's TTL is the retry.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import redis.exceptions

from exporter.sources.redis_clients import RedisClient, RedisRoad, build_road
from exporter.sources.redis_errors import translated
from exporter.sources.redis_tls import NO_TLS, RedisTls
from exporter.sources.redis_url import RedisTarget, parse_redis_url
from exporter.timeouts import Timeouts


@dataclass(frozen=True)
class RedisSettings:
    url: str = field(repr=False)  # it may hold the password
    client_name: str = "orpycamcp-exporter"
    tls: RedisTls = NO_TLS

    @property
    def target(self) -> RedisTarget:
        return parse_redis_url(self.url)


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
        self._road: RedisRoad | None = None

    def _get_road(self) -> RedisRoad:
        if self._road is None:
            self._road = build_road(self.settings.target, self.settings.tls, self.settings.client_name, self.timeouts)
        return self._road

    def _get_client(self) -> RedisClient:
        return self._get_road().client

    async def read(self, groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str]) -> StreamsReading:
        try:
            return await self._read(groups, deadletter_streams)
        except redis.exceptions.RedisError as exc:
            typed = translated(exc)
            if typed is exc:
                raise
            raise typed from exc

    async def _read(self, groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str]) -> StreamsReading:
        await self._get_road().before_read()
        # What each reply answers, to name the command and key of a refusal.
        calls: list[tuple[str, str, str | None]] = []
        async with self._get_client().pipeline(transaction=False) as pipe:
            for stream, group in groups:
                pipe.xpending(stream, group)
                calls.append(("XPENDING", stream, group))
            for stream in deadletter_streams:
                pipe.xlen(stream)
                pipe.xrange(stream, count=1)
                calls += [("XLEN", stream, None), ("XRANGE", stream, None)]
            # Errors come back in place rather than raised: raising would first
            # rewrite the message ("Command # 1 (...) of pipeline caused error:
            # ..."), hiding the server's error code (NOGROUP, WRONGTYPE, ...).
            replies = await pipe.execute(raise_on_error=False)
        for reply, (command, key, group_of_call) in zip(replies, calls, strict=True):
            if isinstance(reply, redis.exceptions.ResponseError):
                typed = translated(reply, command, key, group_of_call)
                raise typed from (None if typed is reply else reply)
        pending = tuple(replies[: len(groups)])
        rest = replies[len(groups) :]
        return StreamsReading(pending=pending, lengths=tuple(rest[0::2]), first_entries=tuple(rest[1::2]))

    async def where_reads_go(self) -> str | None:
        """For diagnose: where the reads go, asked of the sentinels when there are some."""
        try:
            return await self._get_road().where_reads_go()
        except redis.exceptions.RedisError as exc:
            typed = translated(exc)
            if typed is exc:
                raise
            raise typed from exc

    async def close(self) -> None:
        if self._road is not None:
            road, self._road = self._road, None
            await road.aclose()
