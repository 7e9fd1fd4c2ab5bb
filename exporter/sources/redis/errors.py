"""The Redis source's typed errors (each a SourceError of exporter.errors, carrying
its reason; a refused Redis URL a ConfigError), and redis-py's exceptions
translated into them where the source catches them: nothing
downstream reads a Redis error string. The server's words pass through the
source's mask (exporter.sources.url_secrets.server_mask), as PostgreSQL's do:
a Redis-compatible server or proxy may quote what the URL gave (a user name
that is a password put in the user's place)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import redis.exceptions

from exporter.errors import ConfigError, SourceError
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


# The Redis source's typed errors, each with its reason.
class ClusterChanged(SourceError):
    """A Redis Cluster node redirected a command (MOVED; an ASK where it is not
    followed) or asked for it again (TRYAGAIN): the slot map the measurement was
    routed by is no longer the cluster's, so none of its replies is kept."""

    reason = Reason.CLUSTER_CHANGED

    def __init__(self, node: str, command: str, redirect: str) -> None:
        self.node = node
        self.command = command
        self.redirect = redirect
        super().__init__(
            f"node {node} answered {redirect} to {command}: a slot moved since the slot map was read;"
            " it is read again for the next measurement"
        )


class InvalidRedisUrl(ConfigError):
    """The Redis URL asks for something the exporter refuses; names the parameter when
    one is at fault, never its value when that may be a secret, never the password."""

    def __init__(self, setting: str, shown_url: str, problem: str, parameter: str | None = None) -> None:
        self.shown_url = shown_url
        self.parameter = parameter
        super().__init__(setting, f"{shown_url}: {problem}")


class RedisPermissionDenied(SourceError):
    """NOPERM: the ACL user may not run a command, or not on a key."""

    reason = Reason.PERMISSION_DENIED

    def __init__(self, command: str, key: str | None, server_message: str) -> None:
        self.command = command
        self.key = key
        self.server_message = server_message
        on = f" on key {key!r}" if key is not None else ""
        super().__init__(f"Redis refused {command}{on} to the exporter's ACL user: NOPERM {server_message}")


class RedisGroupMissing(SourceError):
    """NOGROUP: a consumer group the registry declares does not exist on its stream."""

    reason = Reason.MISSING_GROUP

    def __init__(self, stream: str, group: str) -> None:
        self.stream = stream
        self.group = group
        super().__init__(f"stream {stream!r} has no consumer group {group!r} (or the stream does not exist)")


class RedisClusterRedirect(SourceError):
    """MOVED or ASK on a client that does not follow them: the URL names one node of a cluster."""

    reason = Reason.CLUSTER_REDIRECT

    def __init__(self, key: str | None, slot: int, node: str) -> None:
        self.key = key
        self.slot = slot
        self.node = node
        which = f"key {key!r}" if key is not None else "a key"
        super().__init__(
            f"the server is a node of a Redis Cluster: {which} (slot {slot}) is served by {node};"
            " use a redis+cluster:// URL (rediss+cluster:// with TLS)"
        )


class RedisUnavailable(SourceError):
    """The server answered with a state in which it cannot serve the read, and the
    reason its code means (exporter.sources.redis.errors.UNAVAILABLE_CODES)."""

    def __init__(self, code: str, server_message: str, reason: Reason) -> None:
        self.code = code
        self.server_message = server_message
        self.reason = reason
        super().__init__(f"Redis answered {code} {server_message}")


class SentinelServiceUnknown(SourceError):
    """The sentinels answered, and none of them monitors the URL's service name."""

    reason = Reason.UNKNOWN_SENTINEL_SERVICE

    def __init__(self, service: str, known: Sequence[str]) -> None:
        self.service = service
        self.known = tuple(known)
        names = ", ".join(repr(name) for name in self.known) or "none"
        super().__init__(f"no sentinel monitors a service named {service!r} (they monitor: {names})")


class SentinelNoMaster(SourceError):
    """The sentinels monitor the service but name no master up: down, or a failover in progress."""

    reason = Reason.MASTER_DOWN

    def __init__(self, service: str, states: Sequence[str]) -> None:
        self.service = service
        self.states = tuple(states)
        seen = "; ".join(self.states) or "no sentinel answered with a state"
        super().__init__(f"the sentinels name no master up for service {service!r} ({seen})")


class SentinelsDisagree(SourceError):
    """The sentinels that answered name different masters for the service, none by a majority of them."""

    reason = Reason.SENTINELS_DISAGREE

    def __init__(self, service: str, votes: Sequence[tuple[str, str]]) -> None:
        """`votes`: each sentinel and what it said ("names HOST:PORT", "did not answer (...)")."""
        self.service = service
        self.votes = tuple(votes)
        named = "; ".join(f"{sentinel} {answer}" for sentinel, answer in self.votes)
        super().__init__(
            f"the sentinels disagree on the master of service {service!r}, none named by a majority"
            f" ({named}): nothing is read until a majority agrees"
        )


class SentinelsTooFew(SourceError):
    """One master named, by fewer than a strict majority of the sentinels the URL
    configures, the others not answering: it would be trusted on too few words."""

    reason = Reason.SENTINELS_TOO_FEW

    def __init__(self, service: str, configured: int, answers: Sequence[tuple[str, str]]) -> None:
        self.service = service
        self.configured = configured
        self.answers = tuple(answers)
        said = "; ".join(f"{sentinel} {answer}" for sentinel, answer in self.answers)
        super().__init__(
            f"too few sentinels answered to trust a master of service {service!r}: a strict majority of the"
            f" {configured} configured must name it ({said}); nothing is read until they do"
        )


class NotACluster(SourceError):
    """A redis+cluster:// URL names servers that are not Redis Cluster nodes."""

    reason = Reason.NOT_A_CLUSTER

    def __init__(self, server_message: str) -> None:
        self.server_message = server_message
        super().__init__(
            f"the Redis URL is redis+cluster:// but the server is not a cluster node ({server_message}):"
            " use redis:// (or redis+sentinel://) for it"
        )


class RedisTooOld(SourceError):
    """The server lacks a field the exporter reads (XINFO GROUPS `lag` is Redis 7.0+)."""

    reason = Reason.REDIS_TOO_OLD

    def __init__(self, command: str, missing: str, version: str) -> None:
        self.command = command
        self.missing = missing
        self.version = version
        super().__init__(f"{command} answered without {missing!r}: the streams signal needs Redis {version} or later")


class SentinelsUnreachable(SourceError):
    """No sentinel of the URL answered; says, sentinel by sentinel, why."""

    reason = Reason.CONNECTION_ERROR
    summary = "no sentinel answered"

    def __init__(self, service: str, attempts: Sequence[tuple[str, str]]) -> None:
        self.service = service
        self.attempts = tuple(attempts)
        tried = "; ".join(f"{node}: {problem}" for node, problem in self.attempts) or "no sentinel was tried"
        super().__init__(f"{self.summary} for service {service!r}: {tried}")


class SentinelsRefusedCredentials(SentinelsUnreachable):
    """Every sentinel refused the exporter's credentials for them (?sentinel_username=, ?sentinel_password=)."""

    reason = Reason.AUTHENTICATION_FAILED
    summary = "every sentinel refused the credentials given for the sentinels"
