"""redis-py's exceptions, translated where the Redis source catches them into the
exporter's typed errors (exporter.errors), each carrying its reason: nothing
downstream reads a Redis error string."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import redis.exceptions

from exporter.errors import (
    RedisClusterRedirect,
    RedisGroupMissing,
    RedisPermissionDenied,
    RedisUnavailable,
)
from exporter.reasons import Reason

# Redis's error codes for a server that cannot serve now, and the reason each is.
UNAVAILABLE_CODES: dict[str, Reason] = {
    "CLUSTERDOWN": Reason.CLUSTER_DOWN,
    "READONLY": Reason.READ_ONLY_REPLICA,
    "LOADING": Reason.SERVER_LOADING,
    "MASTERDOWN": Reason.MASTER_DOWN,
}


def translated(
    exc: BaseException, command: str | None = None, key: str | None = None, group: str | None = None
) -> BaseException:
    """The typed error for `exc`, raised by `command` on `key` when known; `exc` itself
    when the exporter has nothing to add (timeouts, refused connections, ...)."""
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return RedisPermissionDenied(command or "a command", key, str(exc))
    if isinstance(exc, redis.exceptions.AskError):  # MOVED is a kind of ASK
        return RedisClusterRedirect(key, exc.slot_id, f"{exc.host}:{exc.port}")
    if isinstance(exc, redis.exceptions.RedisError) and exc.status_code in UNAVAILABLE_CODES:
        return RedisUnavailable(exc.status_code, str(exc), UNAVAILABLE_CODES[exc.status_code])
    if isinstance(exc, redis.exceptions.ResponseError) and str(exc).startswith("NOGROUP") and key and group:
        return RedisGroupMissing(key, group)
    return exc


GROUP_COMMANDS = frozenset({"XPENDING", "XINFO CONSUMERS"})  # name, stream, group


def reply_error(reply: BaseException, command: Sequence[str]) -> BaseException:
    """The typed error for the refusal of `command` (name, key, arguments), a reply read
    in place in a pipeline; the reply itself when the exporter has nothing to add."""
    name = command[0]
    key = command[1] if len(command) > 1 else None
    group = command[2] if name in GROUP_COMMANDS and len(command) > 2 else None
    typed = translated(reply, name, key, group)
    if typed is not reply:
        typed.__cause__ = reply
    return typed


@contextmanager
def translating() -> Iterator[None]:
    """Raises what the block raises, as its typed error when there is one."""
    try:
        yield
    except redis.exceptions.RedisError as exc:
        typed = translated(exc)
        if typed is exc:
            raise
        raise typed from exc
