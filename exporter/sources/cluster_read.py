"""Reading keys on a Redis Cluster: each command sent to the master owning its
key's slot, one pipeline (one round trip) per node, all nodes at once.

The replies of one measurement all come from one slot map: a command is never
sent again elsewhere. A redirect (MOVED, ASK), a TRYAGAIN, a CLUSTERDOWN or a
node that cannot be reached makes the whole reading fail, and the slot map is
read again before the next one. redis-py's own cluster pipeline is not used
for this: it re-sends redirected commands one by one, and retries a pipeline
after a connection error while keeping the replies the first attempt got, so
one reading could hold replies from before and after a slot moved.
"""

from __future__ import annotations

import asyncio
from collections.abc import Sequence

import redis.exceptions
from redis.asyncio.cluster import ClusterNode, PipelineCommand, RedisCluster

from exporter.errors import ClusterChanged

Command = tuple[str, ...]  # name, key, arguments

REDIRECTS: tuple[tuple[type[redis.exceptions.ResponseError], str], ...] = (
    (redis.exceptions.MovedError, "MOVED"),
    (redis.exceptions.AskError, "ASK"),
    (redis.exceptions.TryAgainError, "TRYAGAIN"),
)


class ClusterReader:
    """Routes commands by slot over one RedisCluster client; reads its slot map
    again after any reading that failed."""

    def __init__(self, cluster: RedisCluster) -> None:
        self.cluster = cluster
        self._map_stale = False
        self.maps_read = 0  # how many times the slot map was read again (the tests look)

    async def read(self, commands: Sequence[Command]) -> list[object]:
        """The replies to `commands`, in order; raises on the first failure of any node."""
        await self.cluster.initialize()
        if self._map_stale:
            await self.cluster.nodes_manager.initialize()
            self.maps_read += 1
            self._map_stale = False
        try:
            return await self._read(commands)
        except BaseException:
            self._map_stale = True
            raise

    async def _read(self, commands: Sequence[Command]) -> list[object]:
        by_node: dict[str, tuple[ClusterNode, list[PipelineCommand]]] = {}
        for position, command in enumerate(commands):
            node = self.cluster.nodes_manager.get_node_from_slot(self.cluster.keyslot(command[1]))
            by_node.setdefault(node.name, (node, []))[1].append(PipelineCommand(position, *command))
        nodes = list(by_node.values())
        # Every node's pipeline runs to its end (or its timeout) before any failure is
        # reported: none is left mid-reply on a connection that goes back to the pool.
        done = await asyncio.gather(*(node.execute_pipeline(sent) for node, sent in nodes), return_exceptions=True)
        for outcome in done:
            if isinstance(outcome, BaseException):
                raise outcome
        replies: list[object] = [None] * len(commands)
        errors: list[tuple[int, BaseException]] = []
        for node, sent in nodes:
            for pipelined in sent:
                result = pipelined.result
                for error_type, word in REDIRECTS:
                    if isinstance(result, error_type):
                        raise ClusterChanged(node.name, " ".join(map(str, pipelined.args[:2])), f"{word} {result}")
                if isinstance(result, BaseException):
                    errors.append((pipelined.position, result))
                replies[pipelined.position] = result
        if errors:
            raise min(errors, key=lambda error: error[0])[1]
        return replies
