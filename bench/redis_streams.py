"""The Redis streams benchmark: the exporter's reading of 1,000 (stream, group)
pairs and 100 dead-letter streams, on a standalone Redis and on a 3-master
Redis Cluster, against a floor of the same commands pipelined by hand with
redis-py (one pipeline per node, all nodes at once), measured in the same run.

The refresh is the source's read (`RedisStreams.read`: the commands, `INFO
replication` on a single server, the slot routing on a cluster) and the
signal's parsing of every reply; the floor sends the same commands and parses
nothing. Exporter and floor alternate, `--rounds` times each, on warm
connections. Round trips are counted by a relay in front of each server (the
cluster's nodes announce the relays' ports), in a pass of their own, not timed.
The cached scrape is timed on an exporter whose streams outcome is fresh.

    .venv/bin/python -m bench.redis_streams              # ~1-2 min
    .venv/bin/python -m bench.redis_streams --rounds 51

Writes bench/results/redis-streams-<date>.json and prints the markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import statistics
import time
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.backoff import NoBackoff
from redis.crc import key_slot

from devkit.redis_cluster import LocalCluster, start_cluster
from devkit.round_trips import RoundTripProxy
from devkit.servers import LocalRedis, start_redis
from exporter.signals.streams import first_entry_time, pending_summary
from exporter.sources.redis.source import RedisSettings, RedisStreams, StreamsQuery, StreamsReading, stream_commands
from exporter.timeouts import Timeouts

RESULTS = Path(__file__).resolve().parent / "results"
GROUPS_PER_STREAM = 4
TIMEOUTS = Timeouts(10.0)
BASE_MS = 1_764_600_000_000


@dataclass(frozen=True)
class Workload:
    pairs: tuple[tuple[str, str], ...]
    deadletters: tuple[str, ...]
    query: StreamsQuery = field(init=False, repr=False)  # what the signal builds once, at start

    def __post_init__(self) -> None:
        object.__setattr__(self, "query", StreamsQuery(self.pairs, self.deadletters))


def workload(pairs: int, deadletters: int) -> Workload:
    streams = [f"bench.events.{i}" for i in range(pairs // GROUPS_PER_STREAM)]
    return Workload(
        pairs=tuple((stream, f"group-{g}") for stream in streams for g in range(GROUPS_PER_STREAM)),
        deadletters=tuple(f"bench.deadletter.{i}" for i in range(deadletters)),
    )


async def seed(client: redis.asyncio.Redis | RedisCluster, load: Workload) -> None:
    """Each stream 5 entries, each group 1 to 4 of them pending; each dead-letter stream 1 to 3 entries."""
    streams = sorted({stream for stream, _ in load.pairs})
    for index, stream in enumerate(streams):
        for n in range(5):
            await client.xadd(stream, {"n": str(n)}, id=f"{BASE_MS + index * 10 + n}-1")
        for g in range(GROUPS_PER_STREAM):
            await client.xgroup_create(stream, f"group-{g}", id="0")
            await client.xreadgroup(f"group-{g}", "consumer", {stream: ">"}, count=g + 1)
    for index, stream in enumerate(load.deadletters):
        for n in range(index % 3 + 1):
            await client.xadd(stream, {"failed": str(n)}, id=f"{BASE_MS + index * 10 + n}-0")


def parse(reading: StreamsReading, load: Workload) -> int:
    """The signal's checks of every reply (what samples_of does for the built-in streams)."""
    values = 0
    for (stream, group), summary in zip(load.pairs, reading.pending, strict=True):
        pending_summary(f"XPENDING {stream} {group}", summary)
        values += 1
    for stream, length, first in zip(load.deadletters, reading.lengths, reading.first_entries, strict=True):
        if length:
            first_entry_time(f"XRANGE {stream}", first)
        values += 1
    return values


def cluster_client(ports: Sequence[int]) -> RedisCluster:
    return RedisCluster(
        startup_nodes=[ClusterNode("127.0.0.1", port) for port in ports],
        decode_responses=False,
        protocol=2,
        retry=Retry(NoBackoff(), 0),
        socket_timeout=TIMEOUTS.deadline,
    )


class Floor:
    """The same commands, pipelined by hand: one plain client per node, keys grouped by slot owner."""

    def __init__(self, load: Workload, owners: dict[int, int]) -> None:
        self.commands = stream_commands(load.pairs, load.deadletters)
        self.clients = {
            port: redis.asyncio.Redis(host="127.0.0.1", port=port, decode_responses=False, protocol=2)
            for port in set(owners.values())
        }
        self.by_node: dict[int, list[tuple[str, ...]]] = {port: [] for port in self.clients}
        for command in self.commands:
            self.by_node[owners[key_slot(command[1].encode())]].append(command)

    async def read(self) -> list[list[object]]:
        async def one(port: int) -> list[object]:
            pipe = self.clients[port].pipeline(transaction=False)
            for command in self.by_node[port]:
                pipe.execute_command(*command)
            replies: list[object] = await pipe.execute()
            return replies

        return list(await asyncio.gather(*(one(port) for port in self.clients)))

    async def replies(self) -> list[object]:
        """The floor's replies in the order of the commands, to hold the exporter's reading to."""
        by_command: dict[tuple[str, ...], object] = {}
        for port, replies in zip(self.clients, await self.read(), strict=True):
            by_command.update(zip(self.by_node[port], replies, strict=True))
        return [by_command[command] for command in self.commands]

    async def close(self) -> None:
        for client in self.clients.values():
            await client.aclose()


def owners_of(cluster: LocalCluster | None, port: int) -> dict[int, int]:
    if cluster is None:
        return dict.fromkeys(range(16384), port)
    owners: dict[int, int] = {}
    with cluster.client(cluster.ports[0]) as client:
        for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
            for slot in range(start, end + 1):
                owners[slot] = int(master[1])
    return owners


async def timed(action: Callable[[], Awaitable[object]]) -> float:
    started = time.perf_counter()
    await action()
    return (time.perf_counter() - started) * 1000


@dataclass
class Deployment:
    deployment: str
    nodes: int
    refresh_ms: float
    refresh_min_ms: float
    refresh_max_ms: float
    floor_ms: float
    floor_min_ms: float
    floor_max_ms: float
    ratio: float
    round_trips_per_node: dict[str, int]
    values: int
    exact: bool


async def bench_deployment(
    name: str, port: int, cluster: LocalCluster | None, load: Workload, rounds: int
) -> Deployment:
    client: redis.asyncio.Redis | RedisCluster
    if cluster is None:
        client = redis.asyncio.Redis(host="127.0.0.1", port=port, decode_responses=False, protocol=2)
    else:
        client = cluster_client(cluster.ports)
    await seed(client, load)
    await client.aclose()
    source = RedisStreams(
        RedisSettings(f"redis://127.0.0.1:{port}/0", replica_max_staleness=60, sentinel_majority="configured"),
        TIMEOUTS,
        client=cluster_client(cluster.ports) if cluster is not None else None,
    )
    floor = Floor(load, owners_of(cluster, port))
    values = 0

    async def refresh() -> None:
        nonlocal values
        values = parse(await source.read(load.query), load)

    try:
        reading = await source.read(load.query)  # warm: connections, slot map
        replies = await floor.replies()
        deadletters = zip(reading.lengths, reading.first_entries, strict=True)
        exact = [
            *reading.pending,
            *reading.consumers,
            *reading.groups,
            *reading.stream_infos,
            *(reply for pair in deadletters for reply in pair),
        ] == replies
        ours: list[float] = []
        theirs: list[float] = []
        for _ in range(rounds):
            ours.append(await timed(refresh))
            theirs.append(await timed(floor.read))
    finally:
        await source.close()
        await floor.close()
    trips = await count_round_trips(port, cluster, load)
    mine, base = statistics.median(ours), statistics.median(theirs)
    return Deployment(
        name,
        len(floor.clients),
        round(mine, 2),
        round(min(ours), 2),
        round(max(ours), 2),
        round(base, 2),
        round(min(theirs), 2),
        round(max(theirs), 2),
        round(mine / base, 2),
        trips,
        values,
        exact,
    )


async def count_round_trips(port: int, cluster: LocalCluster | None, load: Workload) -> dict[str, int]:
    """Round trips of one warm refresh, per server, through counting relays."""
    ports = cluster.ports if cluster is not None else [port]
    relays = {p: RoundTripProxy(p) for p in ports}
    for relay in relays.values():
        await relay.start()
    if cluster is not None:
        cluster.announce({p: relay.port for p, relay in relays.items()})
    source = RedisStreams(
        RedisSettings(relays[port].url, replica_max_staleness=60, sentinel_majority="configured"),
        TIMEOUTS,
        client=cluster_client(ports) if cluster is not None else None,
    )
    try:
        await source.read(load.query)
        before = {p: relay.round_trips for p, relay in relays.items()}
        await source.read(load.query)
        return {str(p): relays[p].round_trips - before[p] for p in ports}
    finally:
        await source.close()
        if cluster is not None:
            cluster.announce({})
        for relay in relays.values():
            await relay.close()


async def cached_scrape_us(server: LocalRedis, samples: int = 2000) -> float:
    """Microseconds per cached scrape (the page of a fresh streams outcome), in process."""
    from exporter.loading import load as load_settings
    from exporter.service import build_exporter

    exporter = build_exporter(load_settings({"redis_url": server.url}, {}))
    try:
        await exporter.scrape()
        timings: list[float] = []
        for _ in range(samples):
            started = time.perf_counter()
            page = exporter.cached_page()
            timings.append((time.perf_counter() - started) * 1e6)
            assert page is not None
        return round(statistics.median(timings), 2)
    finally:
        await exporter.close()


async def main_async(pairs: int, deadletters: int, rounds: int) -> dict[str, object]:
    load = workload(pairs, deadletters)
    load_before = os.getloadavg()
    deployments: list[Deployment] = []
    standalone = start_redis()
    try:
        deployments.append(await bench_deployment("standalone", standalone.port, None, load, rounds))
        from devkit.streams import create_stream_groups_at

        await create_stream_groups_at(standalone.url)
        cached = await cached_scrape_us(standalone)
    finally:
        standalone.remove()
    cluster = start_cluster(masters=3)
    try:
        deployments.append(await bench_deployment("cluster, 3 masters", cluster.ports[0], cluster, load, rounds))
    finally:
        cluster.remove()
    return {
        "date": datetime.now(UTC).isoformat(timespec="seconds"),
        "pairs": len(load.pairs),
        "deadletter_streams": len(load.deadletters),
        "rounds": rounds,
        "load_average": [load_before[0], os.getloadavg()[0]],
        "cached_scrape_us": cached,
        "deployments": [asdict(deployment) for deployment in deployments],
    }


def table(report: dict[str, object]) -> str:
    lines = [
        "| deployment | refresh ms (min-max) | floor ms (min-max) | refresh vs floor | round trips per node | values"
        " | same replies as the floor |",
        "|---|---:|---:|---:|---|---:|---|",
    ]
    deployments = report["deployments"]
    assert isinstance(deployments, list)
    for one in deployments:
        trips = ", ".join(str(n) for n in one["round_trips_per_node"].values())
        lines.append(
            f"| {one['deployment']} | {one['refresh_ms']:.1f} ({one['refresh_min_ms']:.1f}-{one['refresh_max_ms']:.1f})"
            f" | {one['floor_ms']:.1f} ({one['floor_min_ms']:.1f}-{one['floor_max_ms']:.1f})"
            f" | {one['ratio']:.2f}x | {trips} | {one['values']} | {'yes' if one['exact'] else 'NO'} |"
        )
    return "\n".join(lines) + "\n"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", type=int, default=1000)
    parser.add_argument("--deadletters", type=int, default=100)
    parser.add_argument("--rounds", type=int, default=31)
    args = parser.parse_args()
    report = asyncio.run(main_async(args.pairs, args.deadletters, args.rounds))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    (RESULTS / f"redis-streams-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    print(table(report))
    print(f"cached scrape: {report['cached_scrape_us']} us median; load average {report['load_average']}")


if __name__ == "__main__":
    main()
