"""Redis Streams access: one pipelined round trip for every known key (one per
node on a Redis Cluster, exporter/sources/redis/cluster_read.py), the event loop
handed back along the way (exporter/sources/redis/exchange.py).

Replies are bytes, as Redis sent them: payloads are never decoded, and the
names the signal compares (a group in `XINFO GROUPS`) are compared as bytes.

The streams and groups are known (closed registry), so there is never a KEYS
or SCAN; a failure is not retried here: the cache's TTL is the retry. On a
single server, `INFO replication` rides in the same pipeline, so a replica's
link to its master is checked with every reading (exporter/freshness.py).
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import RedisCluster

from exporter.freshness import ReplicaLink, redis_link, require_fresh
from exporter.lifecycle import CLOSE_SECONDS, Lifecycle
from exporter.options import flag_of
from exporter.sources.redis.clients import RedisClient, RedisClients, build_clients
from exporter.sources.redis.cluster_read import ClusterReader, Command
from exporter.sources.redis.errors import reply_error, translating
from exporter.sources.redis.exchange import exchange
from exporter.sources.redis.tls import NO_TLS, RedisTls
from exporter.sources.redis.url import RedisTarget, parse_redis_url
from exporter.sources.url_secrets import server_mask
from exporter.timeouts import Timeouts


@dataclass(frozen=True)
class RedisSettings:
    url: str = field(repr=False)  # it may hold the password
    replica_max_staleness: float = field(kw_only=True)
    client_name: str = "orpycamcp-exporter"
    tls: RedisTls = NO_TLS
    sentinel_majority: str = field(kw_only=True)  # clients.SENTINEL_MAJORITIES

    @property
    def target(self) -> RedisTarget:
        return parse_redis_url(self.url)


@dataclass(frozen=True)
class StreamsReading:
    """The replies as Redis gave them; the streams signal checks their shape."""

    pending: tuple[object, ...]  # XPENDING summaries, one per (stream, group)
    oldest_pending: tuple[object, ...]  # XPENDING <stream> <group> - + 1: the oldest pending entry, one per pair
    consumers: tuple[object, ...]  # XINFO CONSUMERS, one per (stream, group)
    groups: tuple[object, ...]  # XINFO GROUPS, one per distinct stream of the pairs, in first-seen order
    stream_infos: tuple[object, ...]  # XINFO STREAM, one per distinct stream, in the same order
    lengths: tuple[object, ...]  # XLEN, one per dead-letter stream
    first_entries: tuple[object, ...]  # XRANGE - + COUNT 101, one per dead-letter stream
    streams: tuple[str, ...] | None = None  # the stream of each XINFO GROUPS reply, when the query gave them


def streams_of(groups: Sequence[tuple[str, str]]) -> tuple[str, ...]:
    """The distinct streams of the pairs, in first-seen order (one XINFO GROUPS and XINFO STREAM each)."""
    return tuple(dict.fromkeys(stream for stream, _ in groups))


# Read from each dead-letter stream: its first entries, up to the first that
# cannot share the first stream node (Redis's default stream-node-max-entries
# is 100), whose age tells a trim that stopped (docs/streams.md).
FIRST_NODE_ENTRIES = 100


def stream_commands(groups: Sequence[tuple[str, str]], deadletter_streams: Sequence[str]) -> list[Command]:
    """The commands of one reading, in the order StreamsReading takes their replies.
    XPENDING comes first: a missing group is reported as NOGROUP, naming it. Each
    summary is followed by the extended form for the oldest pending entry alone
    (COUNT 1: one entry whatever the size of the pending list)."""
    commands: list[Command] = []
    for stream, group in groups:
        commands += [("XPENDING", stream, group), ("XPENDING", stream, group, "-", "+", "1")]
    # "XINFO CONSUMERS" as one word: redis-py then parses the reply as XINFO's.
    commands += [("XINFO CONSUMERS", stream, group) for stream, group in groups]
    streams = streams_of(groups)
    commands += [("XINFO GROUPS", stream) for stream in streams]
    # Beside its groups' lag, what the stream says of itself (exporter/signals/streams_lag.py).
    commands += [("XINFO STREAM", stream) for stream in streams]
    for stream in deadletter_streams:
        commands.append(("XLEN", stream))
        commands.append(("XRANGE", stream, "-", "+", "COUNT", str(FIRST_NODE_ENTRIES + 1)))
    return commands


@dataclass(frozen=True)
class StreamsQuery:
    """What a reading asks, and its commands: made once, when the signal is built,
    since the pairs are known at start (a hundred thousand of them take a tenth
    of a second to turn into commands, too long to hold the event loop for
    at every reading)."""

    groups: tuple[tuple[str, str], ...] = field(repr=False)
    deadletter_streams: tuple[str, ...] = field(repr=False)
    streams: tuple[str, ...] = field(init=False, repr=False)
    commands: tuple[Command, ...] = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "streams", streams_of(self.groups))
        object.__setattr__(self, "commands", tuple(stream_commands(self.groups, self.deadletter_streams)))


def reading_of(replies: Sequence[object], query: StreamsQuery) -> StreamsReading:
    pairs = len(query.groups)
    streams = len(query.streams)
    rest = replies[3 * pairs + 2 * streams :]
    return StreamsReading(
        pending=tuple(replies[0 : 2 * pairs : 2]),
        oldest_pending=tuple(replies[1 : 2 * pairs : 2]),
        consumers=tuple(replies[2 * pairs : 3 * pairs]),
        groups=tuple(replies[3 * pairs : 3 * pairs + streams]),
        stream_infos=tuple(replies[3 * pairs + streams : 3 * pairs + 2 * streams]),
        lengths=tuple(rest[0::2]),
        first_entries=tuple(rest[1::2]),
        streams=query.streams,
    )


Client = RedisClient
MAX_STALENESS_SETTING = flag_of("redis_replica_max_staleness")


class RedisStreams:
    """Reads consumer-group pending lists and dead-letter streams."""

    def __init__(self, settings: RedisSettings, timeouts: Timeouts, client: Client | None = None) -> None:
        self.settings = settings
        self.timeouts = timeouts
        # A client given here (the tests' cluster behind relays) is read as it is.
        self._clients: RedisClients | None = RedisClients(client) if client is not None else None
        self._cluster: ClusterReader | None = None
        self._life = Lifecycle("the Redis reader")
        # The link of the server the last reading got as far as INFO on: shown as a
        # meta gauge whether or not the streams were measured (exporter/freshness.py).
        self.replica_link: ReplicaLink | None = None
        # The server's words with every echo of a credential of the URL hidden.
        self._mask = server_mask(settings.url, {})

    def _get_clients(self) -> RedisClients:
        self._life.ensure_open()
        if self._clients is None:
            self._clients = build_clients(
                self.settings.target,
                self.settings.tls,
                self.settings.client_name,
                self.timeouts,
                self.settings.sentinel_majority,
            )
        return self._clients

    async def read(self, query: StreamsQuery, signal: str = "streams") -> StreamsReading:
        """The replies for `signal`; raises ReplicaStale first when the server is a replica
        too far behind its master (what it says, NOGROUP included, is then no news).
        Redis's refusals are raised as the exporter's typed errors (exporter.sources.redis.errors)."""
        with translating(self._mask):
            return await self._read(query, signal)

    async def _read(self, query: StreamsQuery, signal: str) -> StreamsReading:
        commands = query.commands
        clients = self._get_clients()
        client = clients.client
        if isinstance(client, RedisCluster):
            self.replica_link = None
            if self._cluster is None or self._cluster.cluster is not client:
                self._cluster = ClusterReader(client, self._mask)
            # A cluster's masters are read, never a replica: a node that is one redirects.
            return reading_of(await self._cluster.read(commands), query)
        try:
            await clients.before_read()  # behind sentinels: the master they name now
            assert isinstance(client, redis.asyncio.Redis)
            pool = client.connection_pool
            # Checked by the pool before it is lent (one closed by the server is replaced).
            connection = await pool.get_connection()  # type: ignore[no-untyped-call]
            try:
                # Errors come back in place rather than raised, with the server's error
                # code (NOGROUP, WRONGTYPE, MOVED, ...) in their message.
                sent = (("INFO", "replication"), *commands)
                replies, errors = await exchange(connection, sent, client.parse_response)
            finally:
                await pool.release(connection)
        except BaseException:
            self.replica_link = None  # not read this time: the gauge is absent, not old
            raise
        info = replies[0]
        if not isinstance(info, Mapping):
            self.replica_link = None
            if isinstance(info, redis.exceptions.ResponseError):
                raise reply_error(info, ("INFO",), self._mask)
            raise redis.exceptions.DataError(f"INFO replication answered {info!r}")
        link = self.replica_link = redis_link(clients.server(), info)
        require_fresh(signal, link, self.settings.replica_max_staleness, MAX_STALENESS_SETTING)
        for position in errors:  # the first error reply, INFO's being checked above
            error = replies[position]
            if position > 0 and isinstance(error, redis.exceptions.ResponseError):
                raise reply_error(error, commands[position - 1], self._mask)
        return reading_of(replies[1:], query)

    async def where_reads_go(self) -> str | None:
        """For diagnose: where the reads go, asked of the sentinels when there are some."""
        with translating(self._mask):
            return await self._get_clients().where_reads_go()

    async def close(self) -> None:
        self._life.close()
        if self._clients is not None:
            clients, self._clients = self._clients, None
            cluster, self._cluster = self._cluster, None
            async with asyncio.timeout(CLOSE_SECONDS):
                if cluster is not None:
                    await cluster.aclose()
                await clients.aclose()
