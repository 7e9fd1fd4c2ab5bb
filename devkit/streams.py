"""The platform's consumer groups on Redis, for the tests and the benchmarks."""

from __future__ import annotations

from collections.abc import Iterable

from redis.asyncio import Redis
from redis.exceptions import ResponseError

from registry.values import STREAM_GROUPS


async def create_stream_groups(client: Redis, groups: Iterable[tuple[str, str]] = STREAM_GROUPS) -> None:
    """Every consumer group given (by default the built-in ones), reading its stream from
    the start (the stream made if missing); a group that exists already is left as it is."""
    for stream, group in groups:
        try:
            await client.xgroup_create(stream, group, id="0", mkstream=True)
        except ResponseError as exc:
            if not str(exc).startswith("BUSYGROUP"):
                raise


async def create_stream_groups_at(url: str, groups: Iterable[tuple[str, str]] = STREAM_GROUPS) -> None:
    """`create_stream_groups` over a connection of its own."""
    client = Redis.from_url(url, decode_responses=True)
    try:
        await create_stream_groups(client, groups)
    finally:
        await client.aclose()
