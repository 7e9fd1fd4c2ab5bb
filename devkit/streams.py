"""The platform's consumer groups on Redis, for the tests and the benchmarks."""

from __future__ import annotations

from redis.asyncio import Redis
from redis.asyncio.cluster import RedisCluster
from redis.exceptions import ResponseError

from registry.values import STREAM_GROUPS


async def create_stream_groups(client: Redis | RedisCluster) -> None:
    """Every consumer group the registry knows, reading its stream from the start (the
    stream made if missing); a group that exists already is left as it is."""
    for stream, group in STREAM_GROUPS:
        try:
            await client.xgroup_create(stream, group, id="0", mkstream=True)
        except ResponseError as exc:
            if not str(exc).startswith("BUSYGROUP"):
                raise


async def create_stream_groups_at(url: str) -> None:
    """`create_stream_groups` over a connection of its own."""
    client = Redis.from_url(url, decode_responses=True)
    try:
        await create_stream_groups(client)
    finally:
        await client.aclose()
