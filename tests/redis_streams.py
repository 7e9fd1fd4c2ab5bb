"""What the tests of every Redis deployment kind (standalone, Sentinel, Cluster)
share: data written with a plain client, the values it implies computed from
that client's own replies, and one measurement of the streams signal through
the exporter's source."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster

from devkit.streams import create_stream_groups
from exporter.measure import measure
from exporter.outcomes import Failure, Outcome
from exporter.signals.streams import SIGNAL
from exporter.sources import Sources
from exporter.sources.redis.source import RedisSettings, RedisStreams
from exporter.sources.redis.tls import NO_TLS, RedisTls
from exporter.timeouts import Timeouts
from registry import BUILTIN
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

PENDING = "orpycamcp_stream_pending_messages"
DL_ENTRIES = "orpycamcp_deadletter_stream_entries"

Values = dict[tuple[str, tuple[str, ...]], float]


@asynccontextmanager
async def emptied_with_groups(url: str) -> AsyncIterator[Redis]:
    """A client of the Redis at `url`, emptied, with the built-in consumer groups;
    emptied again when done (a test's large streams are not left to the next)."""
    client = Redis.from_url(url, decode_responses=True)
    await client.flushall()
    await create_stream_groups(client)
    try:
        yield client
    finally:
        await client.flushall()
        await client.aclose()


async def write_backlog(client: Redis | RedisCluster, round_: int) -> None:
    """More pending messages and dead letters, different for each round: every group
    of the registry exists, the first reads `round_` new messages without acking
    them, each dead-letter stream gets `round_` entries more."""
    await create_stream_groups(client)
    stream, group = STREAM_GROUPS[0]
    for index in range(round_):
        await client.xadd(stream, {"n": str(index)})
    await client.xreadgroup(group, "consumer-1", {stream: ">"}, count=round_)
    for position, deadletter in enumerate(DEADLETTER_STREAMS):
        for index in range(round_ + position):
            await client.xadd(deadletter, {"n": str(index)})


async def expected_values(client: Redis | RedisCluster) -> Values:
    """The counts as Redis reports them to a plain client: XPENDING's count and XLEN."""
    values: Values = {}
    for stream, group in STREAM_GROUPS:
        summary = await client.xpending(stream, group)
        values[(PENDING, (stream, group))] = float(summary["pending"])
    for stream in DEADLETTER_STREAMS:
        values[(DL_ENTRIES, (stream,))] = float(await client.xlen(stream))
    return values


def counts_of(outcome: Outcome) -> Values:
    """The measured counts (the families expected_values computes)."""
    assert outcome.samples is not None, outcome.failure
    return {(s.family, s.labels): s.value for s in outcome.samples if s.family in (PENDING, DL_ENTRIES)}


def streams_source(
    url: str, tls: RedisTls = NO_TLS, deadline: float = 2.0, sentinel_majority: str = "configured"
) -> RedisStreams:
    settings = RedisSettings(url, tls=tls, replica_max_staleness=60, sentinel_majority=sentinel_majority)
    return RedisStreams(settings, Timeouts(deadline))


async def measure_streams(source: RedisStreams, deadline: float = 2.0) -> Outcome:
    return await measure(SIGNAL, Sources(redis=source), Timeouts(deadline), BUILTIN)


def failure_of(outcome: Outcome) -> Failure:
    """Why the measurement failed; it must have."""
    assert outcome.failure is not None, f"measured: {outcome.samples}"
    assert outcome.samples is None
    return outcome.failure


async def failure_reading(url: str, tls: RedisTls = NO_TLS) -> Failure:
    """Why one measurement through a new source for `url` fails; it must."""
    source = streams_source(url, tls)
    try:
        return failure_of(await measure_streams(source))
    finally:
        await source.close()
