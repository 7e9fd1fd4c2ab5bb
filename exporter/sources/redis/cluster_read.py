"""Reading keys on a Redis Cluster: each command sent to the master owning its
key's slot, one pipeline (one round trip) per node, all nodes at once.

The replies of one measurement all come from one slot map. A MOVED (the map
is not the cluster's any more), a TRYAGAIN, a CLUSTERDOWN or a node that
cannot be reached makes the whole reading fail, and the slot map is read
again before the next one. An ASK is the one redirect followed: the slot is
being migrated and the key is already on the node importing it, which
answers for it (after ASKING) in a second round, one pipeline per such node;
each key is still read where it lives, whole, so a slot stuck half-migrated
leaves the signal measured. Anything but an answer there fails the reading.

redis-py's own cluster pipeline is not used for this: it re-sends redirected
commands one by one (following MOVED too, from a map it may read again), and
retries a pipeline after a connection error keeping the replies the first
attempt got, so one reading could hold replies from before and after a slot
moved. Nor does it check a pooled connection before using it, as the
standalone pool does: a connection the server closed while idle (its
`timeout`, a load balancer, `CLIENT KILL`) is replaced here before it is used.
"""

from __future__ import annotations

import asyncio
from collections.abc import Iterator, Sequence
from contextlib import contextmanager

import redis.exceptions
from redis.asyncio.cluster import ClusterNode, PipelineCommand, RedisCluster
from redis.asyncio.connection import Connection

from exporter.pacing import Pacer
from exporter.reasons import Reason
from exporter.sources.redis.errors import (
    ClusterChanged,
    NotACluster,
    RedisPermissionDenied,
    RedisUnavailable,
    reply_error,
)
from exporter.sources.redis.exchange import exchange
from exporter.sources.url_secrets import Mask, unmasked

Command = tuple[str, ...]  # name, key, arguments
Pipelines = list[tuple[ClusterNode, list[PipelineCommand]]]
# Per node: the commands sent, with their results, and those whose result is an error.
Answered = list[tuple[ClusterNode, list[PipelineCommand], list[PipelineCommand]]]

REDIRECTS: tuple[tuple[type[redis.exceptions.ResponseError], str], ...] = (
    (redis.exceptions.MovedError, "MOVED"),
    (redis.exceptions.AskError, "ASK"),
    (redis.exceptions.TryAgainError, "TRYAGAIN"),
)


class ClusterReader:
    """Routes commands by slot over one RedisCluster client; reads its slot map
    again after any reading that failed."""

    def __init__(self, cluster: RedisCluster, mask: Mask = unmasked) -> None:
        self.cluster = cluster
        self._mask = mask  # the server's words through it (exporter.sources.redis.errors)
        self._mapped = False
        self._map_stale = False

    async def read(self, commands: Sequence[Command]) -> list[object]:
        """The replies to `commands`, in order; raises on the first failure of any node."""
        if self._map_stale or not self._mapped:
            # The slot map alone (CLUSTER SLOTS): RedisCluster.initialize would also
            # send COMMAND, for a routing of commands this reader does itself.
            with slot_map_errors(self._mask):
                await self.cluster.nodes_manager.initialize()
            self._mapped = True
            self._map_stale = False
        try:
            with slot_map_errors(self._mask):
                return await self._read(commands)
        except BaseException:
            self._map_stale = True
            raise

    async def aclose(self) -> None:
        """The nodes' connections (RedisCluster.aclose closes them only after its own initialize)."""
        await self.cluster.nodes_manager.aclose()
        await self.cluster.nodes_manager.aclose("startup_nodes")

    async def _read(self, commands: Sequence[Command]) -> list[object]:
        pacer = Pacer()
        by_node: dict[str, tuple[ClusterNode, list[PipelineCommand]]] = {}
        for position, command in enumerate(commands):
            if pacer.due():
                await pacer.hand_back()  # routing 200,000 commands takes a while: the loop gets its turns
            node = self.cluster.nodes_manager.get_node_from_slot(self.cluster.keyslot(command[1]))
            by_node.setdefault(node.name, (node, []))[1].append(PipelineCommand(position, *command))
        first = await _round(list(by_node.values()))
        _refuse_redirects(first, follow_ask=True)
        asked: dict[str, tuple[ClusterNode, list[PipelineCommand]]] = {}
        for node, _, failed in first:
            for pipelined in failed:
                if isinstance(pipelined.result, redis.exceptions.AskError):
                    target = self._asked_node(node, pipelined, pipelined.result)
                    entry = asked.setdefault(target.name, (target, []))
                    entry[1].append(PipelineCommand(-1, "ASKING"))  # lets the next command in
                    entry[1].append(PipelineCommand(pipelined.position, *pipelined.args))
        second = await _round(list(asked.values())) if asked else []
        for node, _, failed in second:
            for pipelined in failed:
                if pipelined.position < 0:  # NOPERM: the ACL lacks +asking
                    raise _naming(node, reply_error(pipelined.result, ("ASKING",), self._mask))
        _refuse_redirects(second, follow_ask=False)
        errors = [
            (pipelined.position, _naming(node, reply_error(pipelined.result, commands[pipelined.position], self._mask)))
            for node, _, failed in first + second
            for pipelined in failed
            if pipelined.position >= 0 and not isinstance(pipelined.result, redis.exceptions.AskError)
        ]
        if errors:
            raise min(errors, key=lambda error: error[0])[1]
        replies: list[object] = [None] * len(commands)
        for _, sent, _ in first + second:
            # Taken off as they are placed: freed in one go when the reading
            # returns, a hundred thousand commands hold the loop for tens of ms.
            while sent:
                if pacer.due():
                    await pacer.hand_back()
                pipelined = sent.pop()
                # ASKING's OK and an ASK answered in the second round are not replies.
                if pipelined.position >= 0 and not isinstance(pipelined.result, redis.exceptions.AskError):
                    replies[pipelined.position] = pipelined.result
        return replies

    def _asked_node(self, node: ClusterNode, pipelined: PipelineCommand, ask: redis.exceptions.AskError) -> ClusterNode:
        target = self.cluster.nodes_manager.get_node(host=ask.host, port=ask.port)
        if target is None:  # a node the slot map does not know: the map is behind
            raise ClusterChanged(node.name, _shown(pipelined), f"ASK {ask}")
        return target


async def _round(nodes: Pipelines) -> Answered:
    """One pipeline per node, all at once; raises the first node's failure, if any."""
    # Every node's pipeline runs to its end (or its timeout) before any failure is
    # reported: none is left mid-reply on a connection that goes back to the pool.
    done = await asyncio.gather(*(_pipeline(node, sent) for node, sent in nodes), return_exceptions=True)
    answered: Answered = []
    for (node, sent), outcome in zip(nodes, done, strict=True):
        if isinstance(outcome, BaseException):
            raise _naming(node, outcome)
        answered.append((node, sent, outcome))
    return answered


async def _checked(connection: Connection) -> None:
    """Connected, and not closed by the server since it was last used: what the
    standalone pool does before lending a connection (ConnectionPool.ensure_connection).
    A connection the server closed reads as ready (EOF) and is reconnected."""
    await connection.connect()  # type: ignore[no-untyped-call]
    try:
        if await connection.can_read():
            raise redis.exceptions.ConnectionError("Connection has data")
    except (redis.exceptions.ConnectionError, redis.exceptions.TimeoutError, OSError):
        await connection.disconnect()
        await connection.connect()  # type: ignore[no-untyped-call]
        if await connection.can_read():
            raise redis.exceptions.ConnectionError("Connection not ready") from None


async def _pipeline(node: ClusterNode, commands: list[PipelineCommand]) -> list[PipelineCommand]:
    """`commands` on one of the node's connections, checked first, in one exchange;
    each command's reply (or the error Redis answered) in its `result`; returns
    the commands answered with an error."""
    connection = node.acquire_connection()
    try:
        await _checked(connection)
        replies, errors = await exchange(connection, [command.args for command in commands], node.parse_response)
        for command, reply in zip(commands, replies, strict=True):
            command.result = reply
        return [commands[position] for position in errors]
    finally:
        node.release(connection)


def _causes(error: BaseException) -> Iterator[BaseException]:
    seen: BaseException | None = error
    while seen is not None:
        yield seen
        seen = seen.__cause__ or seen.__context__


@contextmanager
def slot_map_errors(mask: Mask = unmasked) -> Iterator[None]:
    """redis-py's RedisClusterException (untyped: a message and a chain of causes) as the
    exporter's typed error telling the operator what to do, the server's words through `mask`."""
    try:
        yield
    except redis.exceptions.RedisClusterException as exc:
        causes = list(_causes(exc))
        for cause in causes:
            if isinstance(cause, redis.exceptions.NoPermissionError):
                raise RedisPermissionDenied("CLUSTER SLOTS", None, mask(str(cause))) from exc
        for cause in causes:
            if isinstance(cause, redis.exceptions.ResponseError) and "cluster support disabled" in str(cause):
                raise NotACluster(mask(str(cause))) from exc
        for cause in causes:
            if isinstance(cause, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError | OSError):
                raise redis.exceptions.ConnectionError(f"no node of the URL answered: {mask(str(cause))}") from exc
        if isinstance(exc, redis.exceptions.SlotNotCoveredError) or "not covered" in str(exc):
            raise RedisUnavailable("CLUSTERDOWN", mask(str(exc)), Reason.CLUSTER_DOWN) from exc
        for cause in causes[1:]:
            if isinstance(cause, redis.exceptions.ResponseError):
                raise cause from exc  # translated by the caller, as any error reply
        raise redis.exceptions.RedisError(f"Redis Cluster: {mask(str(exc))}") from exc


def _naming(node: ClusterNode, error: BaseException) -> BaseException:
    """A connection error that says which node it came from (redis-py's do not always)."""
    if isinstance(error, redis.exceptions.ConnectionError) and node.name not in str(error):
        named = type(error)(f"node {node.name}: {error}")
        named.__cause__ = error
        return named
    return error


def _refuse_redirects(nodes: Answered, follow_ask: bool) -> None:
    """ClusterChanged for the first redirect (an ASK only when it is not to be followed)."""
    for node, _, failed in nodes:
        for pipelined in failed:
            for error_type, word in REDIRECTS:
                if isinstance(pipelined.result, error_type) and not (follow_ask and word == "ASK"):
                    raise ClusterChanged(node.name, _shown(pipelined), f"{word} {pipelined.result}")


def _shown(pipelined: PipelineCommand) -> str:
    return " ".join(map(str, pipelined.args[:2]))
