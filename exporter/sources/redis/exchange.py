"""One pipelined exchange with one Redis server on one connection: every
command sent, then every reply read, in one round trip, the event loop handed
back along the way (exporter/pacing.py: packing 200,000 commands or parsing
their replies in one go would hold it for seconds). An error reply is kept in
its place, as the exception redis-py makes of it, and its position is noted;
any other failure is raised, and the connection, which may hold replies not
read, is closed.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple

import redis.exceptions
from redis.asyncio.connection import AbstractConnection

from exporter.pacing import Pacer

STEP = 64  # commands packed at a time
Parse = Callable[..., Awaitable[object]]  # (connection, command name): redis-py's parse_response


def parse_options(command: Sequence[str]) -> dict[str, bool]:
    """What redis-py's callback of `command` needs to be told: XPENDING's
    extended form (with a range) is parsed as entries only when asked to."""
    return {"parse_detail": True} if command[0] == "XPENDING" and len(command) > 3 else {}


class Exchanged(NamedTuple):
    replies: list[object]  # one per command, in order; an error reply as redis-py's exception
    errors: list[int]  # the positions of the error replies, in order


async def exchange(connection: AbstractConnection, commands: Sequence[Sequence[str]], parse: Parse) -> Exchanged:
    """The replies to `commands` (name, arguments), in order; `parse` reads one (redis-py's callbacks)."""
    pacer = Pacer()
    try:
        for start in range(0, len(commands), STEP):
            if pacer.due():
                await pacer.hand_back()
            # Sent without waiting for replies: Redis queues them, and the round trip is one.
            await connection.send_packed_command(connection.pack_commands(commands[start : start + STEP]))
        replies: list[object] = []
        errors: list[int] = []
        for position, command in enumerate(commands):
            if pacer.due():
                await pacer.hand_back()
            try:
                replies.append(await parse(connection, command[0], **parse_options(command)))
            except redis.exceptions.ResponseError as exc:
                errors.append(position)
                replies.append(exc)
        return Exchanged(replies, errors)
    except BaseException:
        await connection.disconnect()
        raise
