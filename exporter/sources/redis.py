"""Redis Streams access: one pipelined round trip for every known key (one per
node on a Redis Cluster, exporter/sources/cluster_read.py).

The streams and groups are known (closed registry), so there is never a KEYS
or SCAN; a failure is not retried here: the cache's TTL is the retry. On a
single server, `INFO replication` rides in the same pipeline, so a replica's
link to its master is checked with every reading (exporter/replication.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff

from exporter.lifecycle import CLOSE_SECONDS, Lifecycle
from exporter.replication import DEFAULT_MAX_STALENESS_SECONDS, ReplicaLink, redis_link, require_fresh
from exporter.sources.cluster_read import ClusterReader, Command
from exporter.timeouts import Timeouts


@dataclass(frozen=True)
class RedisSettings:
    url: str = field(repr=False)  # it may hold the password
    client_name: str = "orpycamcp-exporter"
    replica_max_staleness: float = DEFAULT_MAX_STALENESS_SECONDS


@dataclass(frozen=True)
class StreamsReading:
    """The replies as Redis gave them; the streams signal checks their shape."""

    pending: tuple[object, ...]  # XPENDING summaries, one per (stream, group)
    lengths: tuple[object, ...]  # XLEN, one per dead-letter stream
    first_entries: tuple[object, ...]  # XRANGE - + COUNT 1, one per dead-letter stream
    replica: ReplicaLink | None = None  # the link of the server read, when it is a replica


def stream_commands(groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str]) -> list[Command]:
    """The commands of one reading, in the order StreamsReading takes their replies."""
    commands: list[Command] = [("XPENDING", stream, group) for stream, group in groups]
    for stream in deadletter_streams:
        commands.append(("XLEN", stream))
        commands.append(("XRANGE", stream, "-", "+", "COUNT", "1"))
    return commands


def reading_of(replies: Sequence[object], groups: int, replica: ReplicaLink | None) -> StreamsReading:
    rest = replies[groups:]
    return StreamsReading(
        pending=tuple(replies[:groups]), lengths=tuple(rest[0::2]), first_entries=tuple(rest[1::2]), replica=replica
    )


Client = redis.asyncio.Redis | RedisCluster
MAX_STALENESS_SETTING = "--redis.replica-max-staleness"


class RedisStreams:
    """Reads consumer-group pending lists and dead-letter streams."""

    def __init__(self, settings: RedisSettings, timeouts: Timeouts, client: Client | None = None) -> None:
        self.settings = settings
        self.timeouts = timeouts
        self._client: Client | None = client
        self._cluster: ClusterReader | None = None
        self._life = Lifecycle("the Redis reader")
        # The link of the server the last reading got as far as INFO on: shown as a
        # meta gauge whether or not the streams were measured (exporter/replication.py).
        self.replica_link: ReplicaLink | None = None

    def _get_client(self) -> Client:
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

    async def read(
        self, groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str], signal: str = "streams"
    ) -> StreamsReading:
        """The replies for `signal`; raises ReplicaStale first when the server is a replica
        too far behind its master (what it says, NOGROUP included, is then no news)."""
        commands = stream_commands(groups, deadletter_streams)
        client = self._get_client()
        if isinstance(client, RedisCluster):
            self.replica_link = None
            if self._cluster is None or self._cluster.cluster is not client:
                self._cluster = ClusterReader(client)
            # A cluster's masters are read, never a replica: a node that is one redirects.
            return reading_of(await self._cluster.read(commands), len(groups), None)
        try:
            async with client.pipeline(transaction=False) as pipe:
                pipe.execute_command("INFO", "replication")
                for command in commands:
                    pipe.execute_command(*command)
                # Errors come back in place rather than raised: raising would first
                # rewrite the message ("Command # 1 (...) of pipeline caused error:
                # ..."), hiding the server's error code (NOGROUP, WRONGTYPE, MOVED, ...).
                replies = await pipe.execute(raise_on_error=False)
        except BaseException:
            self.replica_link = None  # not read this time: the gauge is absent, not old
            raise
        info = replies[0]
        if not isinstance(info, Mapping):
            self.replica_link = None
            if isinstance(info, redis.exceptions.ResponseError):
                raise info
            raise redis.exceptions.DataError(f"INFO replication answered {info!r}")
        kwargs = client.connection_pool.connection_kwargs
        server = f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}".rstrip(":")
        link = self.replica_link = redis_link(server, info)
        require_fresh(signal, link, self.settings.replica_max_staleness, MAX_STALENESS_SETTING)
        for reply in replies[1:]:
            if isinstance(reply, redis.exceptions.ResponseError):
                raise reply
        return reading_of(replies[1:], len(groups), link)

    async def close(self) -> None:
        self._life.close()
        if self._client is not None:
            client, self._client = self._client, None
            self._cluster = None
            async with asyncio.timeout(CLOSE_SECONDS):
                await client.aclose()
