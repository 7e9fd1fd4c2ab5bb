"""redis-py's exceptions, translated where the Redis source catches them into the
exporter's typed errors (exporter.errors), each carrying its reason: nothing
downstream reads a Redis error string. The server's words pass through the
source's mask (exporter.sources.url_secrets.server_mask), as PostgreSQL's do:
a Redis-compatible server or proxy may quote what the URL gave (a user name
that is a password put in the user's place)."""

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
from exporter.sources.url_secrets import Mask, unmasked

# Redis's error codes for a server that cannot serve now, and the reason each is.
UNAVAILABLE_CODES: dict[str, Reason] = {
    "CLUSTERDOWN": Reason.CLUSTER_DOWN,
    "READONLY": Reason.READ_ONLY_REPLICA,
    "LOADING": Reason.SERVER_LOADING,
    "MASTERDOWN": Reason.MASTER_DOWN,
}


def translated(
    exc: BaseException,
    command: str | None = None,
    key: str | None = None,
    group: str | None = None,
    mask: Mask = unmasked,
) -> BaseException:
    """The typed error for `exc`, raised by `command` on `key` when known, its words
    through `mask`; `exc` itself when the exporter has nothing to add (timeouts,
    refused connections, ...) and the mask hides nothing of it."""
    words = mask(str(exc))
    if isinstance(exc, redis.exceptions.NoPermissionError):
        return RedisPermissionDenied(command or "a command", key, words)
    if isinstance(exc, redis.exceptions.AskError):  # MOVED is a kind of ASK
        return RedisClusterRedirect(key, exc.slot_id, f"{exc.host}:{exc.port}")
    if isinstance(exc, redis.exceptions.RedisError) and exc.status_code in UNAVAILABLE_CODES:
        return RedisUnavailable(exc.status_code, words, UNAVAILABLE_CODES[exc.status_code])
    if isinstance(exc, redis.exceptions.ResponseError) and str(exc).startswith("NOGROUP") and key and group:
        return RedisGroupMissing(key, group)
    if words != str(exc) and isinstance(exc, redis.exceptions.RedisError):
        return _masked_copy(exc, words)
    return exc


def _masked_copy(exc: redis.exceptions.RedisError, words: str) -> redis.exceptions.RedisError:
    """`exc` saying `words`: of its own type (what outcomes.classify reads the reason
    from) when that type is made from a message, else a plain RedisError."""
    try:
        copy = type(exc)(words)
    except Exception:  # a type made from something else than a message
        return redis.exceptions.RedisError(words)
    return copy if str(copy) == words else redis.exceptions.RedisError(words)


GROUP_COMMANDS = frozenset({"XPENDING", "XINFO CONSUMERS"})  # name, stream, group


def reply_error(reply: BaseException, command: Sequence[str], mask: Mask = unmasked) -> BaseException:
    """The typed error for the refusal of `command` (name, key, arguments), a reply read
    in place in a pipeline, its words through `mask`; the reply itself when the
    exporter has nothing to add."""
    name = command[0]
    key = command[1] if len(command) > 1 else None
    group = command[2] if name in GROUP_COMMANDS and len(command) > 2 else None
    typed = translated(reply, name, key, group, mask)
    if typed is not reply and mask(str(reply)) == str(reply):
        typed.__cause__ = reply  # a cause that says what was masked is not kept: a traceback would show it
    return typed


@contextmanager
def translating(mask: Mask = unmasked) -> Iterator[None]:
    """Raises what the block raises, as its typed error when there is one, the
    server's words through `mask`."""
    try:
        yield
    except redis.exceptions.RedisError as exc:
        typed = translated(exc, mask=mask)
        if typed is exc:
            raise
        if mask(str(exc)) != str(exc):
            raise typed from None  # the cause says what was masked
        raise typed from exc
