"""One pipelined exchange with one Redis server on one connection: every
command sent, then every reply read, in one round trip, the event loop handed
back whenever SLICE seconds of work have passed (packing 200,000 commands or
parsing their replies in one go would hold it for seconds: no health check,
no cached scrape meanwhile; a time rather than a count, since a reply's cost
varies with its size and the machine's load). An error reply is kept in its place, as the exception
redis-py makes of it; any other failure is raised, and the connection, which
may hold replies not read, is closed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable, Sequence

import redis.exceptions
from redis.asyncio.connection import AbstractConnection

STEP = 64  # commands packed at a time
SLICE = 0.005  # seconds of packing or parsing between two hand-backs of the event loop
Parse = Callable[..., Awaitable[object]]  # (connection, command name): redis-py's parse_response


async def exchange(connection: AbstractConnection, commands: Sequence[Sequence[str]], parse: Parse) -> list[object]:
    """The replies to `commands` (name, arguments), in order; `parse` reads one (redis-py's callbacks)."""
    handed_back = time.perf_counter()
    try:
        for start in range(0, len(commands), STEP):
            if time.perf_counter() - handed_back > SLICE:
                await asyncio.sleep(0)
                handed_back = time.perf_counter()
            # Sent without waiting for replies: Redis queues them, and the round trip is one.
            await connection.send_packed_command(connection.pack_commands(commands[start : start + STEP]))
        replies: list[object] = []
        for command in commands:
            if time.perf_counter() - handed_back > SLICE:
                await asyncio.sleep(0)
                handed_back = time.perf_counter()
            try:
                replies.append(await parse(connection, command[0]))
            except redis.exceptions.ResponseError as exc:
                replies.append(exc)
        return replies
    except BaseException:
        await connection.disconnect()
        raise
