"""Redis streams at size: 10,000 and 100,000 declared (stream, group) pairs, on a
standalone Redis and on a 3-master Redis Cluster, served by the exporter of
this tree and, with `--before TREE`, by the exporter of another source tree
(e.g. `git archive <commit> | tar -x -C /tmp/before`), in the same run.

Each exporter is a real `serve` process (bench/bus_serve.py: the TTL forced to
0, so each scrape measures again) reading the pairs from a declarations
file. A round is one `/metrics` scrape (gzip, as Prometheus asks) while
`/-/healthy` is requested in a loop from this process: the health check's
latency during the refresh is what an orchestrator's probe sees. The
refresh is the exporter's own measurement duration
(`orpycamcp_signal_measurement_duration_seconds{signal="streams"}`); the
scrape adds rendering and sending the page.

The floor: the same commands the tree sends, pipelined by hand with redis-py
(bytes, one pipeline per node, all nodes at once), alternated with the
exporters' rounds. A second pass serves each tree with `--deadline 2` and
reports whether the refresh ended by it.

    .venv/bin/python -m bench.bus_size --before /tmp/before                  # ~10 min
    .venv/bin/python -m bench.bus_size --pairs 10000 --rounds 3

Writes bench/results/bus-size-<date>.json and prints the markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import gzip
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio
import yaml
from redis.crc import key_slot

from devkit.redis_cluster import LocalCluster, start_cluster
from devkit.servers import LocalRedis, free_port, start_redis
from devkit.streams import create_stream_groups_at
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

HERE = Path(__file__).resolve().parent
TREE = HERE.parent
RESULTS = HERE / "results"
GROUPS_PER_STREAM = 4
PIPELINE = 10_000
CAP_SECONDS = 120.0  # the deadline of the timed refreshes: a refresh not done by then is reported as such
DURATION = re.compile(rb'^orpycamcp_signal_measurement_duration_seconds\{signal="streams"\} (\S+)$', re.M)
MEASURED = re.compile(rb'^orpycamcp_signal_measured\{signal="streams"\} (\S+)$', re.M)
FAILURE = re.compile(rb'^orpycamcp_signal_failure_info\{signal="streams",reason="([a-z_]+)"\} 1$', re.M)

Command = tuple[str, ...]


def pairs_of(count: int) -> list[tuple[str, str]]:
    # Short names: 100,000 pairs must fit the declarations file's 1 MiB.
    streams = [f"s{i}" for i in range(count // GROUPS_PER_STREAM)]
    return [(stream, f"g{g}") for stream in streams for g in range(GROUPS_PER_STREAM)]


# --- Redis: seeding, routing, the floor ---------------------------------------------------------------------------


class Nodes:
    """One plain bytes client per master, and which master owns each slot."""

    def __init__(self, owners: dict[int, int]) -> None:
        self.owners = owners
        self.clients = {
            port: redis.asyncio.Redis(host="127.0.0.1", port=port, protocol=2) for port in set(owners.values())
        }

    @classmethod
    def of(cls, server: LocalRedis | None, cluster: LocalCluster | None) -> Nodes:
        if cluster is None:
            assert server is not None
            return cls(dict.fromkeys(range(16384), server.port))
        owners: dict[int, int] = {}
        with cluster.client(cluster.ports[0]) as client:
            for start, end, master, *_ in client.execute_command("CLUSTER SLOTS"):
                for slot in range(start, end + 1):
                    owners[slot] = int(master[1])
        return cls(owners)

    def by_node(self, commands: Sequence[Command]) -> dict[int, list[Command]]:
        grouped: dict[int, list[Command]] = {port: [] for port in self.clients}
        for command in commands:
            # The key: the first argument, but XREADGROUP's, which is before its last ID.
            key = command[-2] if command[0] == "XREADGROUP" else command[1]
            grouped[self.owners[key_slot(key.encode())]].append(command)
        return grouped

    async def run(self, commands: Sequence[Command], chunk: int | None = None) -> None:
        """Every command on its key's master, one pipeline per node (or per `chunk`), all nodes at once."""

        async def one(port: int, mine: list[Command]) -> None:
            step = chunk or max(len(mine), 1)
            for start in range(0, len(mine), step):
                pipe = self.clients[port].pipeline(transaction=False)
                for command in mine[start : start + step]:
                    pipe.execute_command(*command)
                await pipe.execute()

        await asyncio.gather(*(one(port, mine) for port, mine in self.by_node(commands).items()))

    async def close(self) -> None:
        for client in self.clients.values():
            await client.aclose()


async def seed(nodes: Nodes, pairs: Sequence[tuple[str, str]]) -> None:
    """Each stream 5 entries; group g of each stream has g + 1 of them pending and the rest undelivered."""
    streams = list(dict.fromkeys(stream for stream, _ in pairs))
    adds: list[Command] = [("XADD", stream, "*", "n", str(n)) for stream in streams for n in range(5)]
    await nodes.run(adds, PIPELINE)
    await nodes.run([("XGROUP CREATE", stream, group, "0") for stream, group in pairs], PIPELINE)
    reads: list[Command] = []
    for stream, group in pairs:
        count = int(group.removeprefix("g")) + 1
        reads.append(("XREADGROUP", "GROUP", group, "consumer", "COUNT", str(count), "STREAMS", stream, ">"))
    await nodes.run(reads, PIPELINE)


def floor_commands(pairs: Sequence[tuple[str, str]], with_xinfo: bool) -> list[Command]:
    """The commands a tree sends (the built-in groups and dead-letter streams too)."""
    every = [*STREAM_GROUPS, *pairs]
    commands: list[Command] = [("XPENDING", stream, group) for stream, group in every]
    if with_xinfo:
        commands += [("XINFO CONSUMERS", stream, group) for stream, group in every]
        commands += [("XINFO GROUPS", stream) for stream in dict.fromkeys(stream for stream, _ in every)]
    for stream in DEADLETTER_STREAMS:
        commands += [("XLEN", stream), ("XRANGE", stream, "-", "+", "COUNT", "1")]
    return commands


# --- The exporters ------------------------------------------------------------------------------------------------


@dataclass
class Served:
    tree: Path
    port: int
    process: subprocess.Popen[bytes]
    started_s: float

    def rss_mb(self) -> tuple[float, float]:
        """(resident now, peak resident) in MB."""
        status = Path(f"/proc/{self.process.pid}/status").read_text()
        values = {line.split(":")[0]: int(line.split()[1]) for line in status.splitlines() if line.startswith("Vm")}
        return round(values["VmRSS"] / 1024, 1), round(values["VmHWM"] / 1024, 1)

    def stop(self) -> None:
        self.process.terminate()
        try:
            self.process.wait(20)
        except subprocess.TimeoutExpired:
            self.process.kill()
            self.process.wait()


async def http_get(port: int, path: str, gzipped: bool = False) -> tuple[int, bytes]:
    return decoded(*await http_exchange(port, path, gzipped))


async def http_exchange(port: int, path: str, gzipped: bool = False) -> tuple[bytes, bytes]:
    """The response's head and body as sent (a gzip body not decompressed)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        encoding = "Accept-Encoding: gzip\r\n" if gzipped else ""
        writer.write(f"GET {path} HTTP/1.1\r\nHost: bench\r\n{encoding}Connection: close\r\n\r\n".encode())
        await writer.drain()
        data = await reader.read()
    finally:
        writer.close()
    head, _, body = data.partition(b"\r\n\r\n")
    return head, body


def decoded(head: bytes, body: bytes) -> tuple[int, bytes]:
    """The status and the body, decompressed when it came gzipped."""
    status = int(head.split(b" ", 2)[1])
    if b"content-encoding: gzip" in head.lower():
        body = gzip.decompress(body)
    return status, body


async def serve(tree: Path, redis_url: str, declarations: Path, deadline: float) -> Served:
    port = free_port()
    env = {**os.environ, "PYTHONPATH": str(tree)}
    command = [
        sys.executable,
        str(HERE / "bus_serve.py"),
        "serve",
        "--web.listen-address",
        f"127.0.0.1:{port}",
        "--redis.url",
        redis_url,
        "--signals",
        "streams",
        "--backlogs.config-file",
        str(declarations),
        "--deadline",
        f"{deadline:g}",
        "--ttl",
        f"{deadline + 1:g}",
        "--log.level",
        "error",
    ]
    started = time.perf_counter()
    process = subprocess.Popen(command, cwd=tree, env=env, stdout=subprocess.DEVNULL)  # noqa: ASYNC220 -- a server left running
    while True:
        if process.poll() is not None:
            raise RuntimeError(f"the exporter of {tree} exited with {process.returncode}")
        try:
            if (await http_get(port, "/-/healthy"))[0] == 200:
                return Served(tree, port, process, round(time.perf_counter() - started, 1))
        except OSError:
            pass
        await asyncio.sleep(0.2)


@dataclass
class Round:
    scrape_s: float
    refresh_s: float | None
    measured: bool
    reason: str | None
    health_max_ms: float
    health_p99_ms: float
    health_checks: int


async def scrape_round(served: Served) -> Round:
    """One /metrics scrape, /-/healthy asked in a loop meanwhile."""
    latencies: list[float] = []
    done = asyncio.Event()

    async def probe() -> None:
        while not done.is_set():
            started = time.perf_counter()
            await http_get(served.port, "/-/healthy")
            latencies.append((time.perf_counter() - started) * 1000)
            await asyncio.sleep(0.005)

    prober = asyncio.create_task(probe())
    started = time.perf_counter()
    answer = await http_exchange(served.port, "/metrics", gzipped=True)
    scrape_s = time.perf_counter() - started
    done.set()
    await prober
    # Decompressed and searched once the probes are over: on this process's own
    # loop, that work would delay the probes and be counted as the exporter's.
    status, page = decoded(*answer)
    assert status == 200, status
    duration = DURATION.search(page)
    measured = MEASURED.search(page)
    failure = FAILURE.search(page)
    latencies.sort()
    return Round(
        round(scrape_s, 3),
        float(duration.group(1)) if duration else None,
        bool(measured and measured.group(1) == b"1"),
        failure.group(1).decode() if failure else None,
        round(latencies[-1], 1) if latencies else 0.0,
        round(latencies[int(0.99 * (len(latencies) - 1))], 1) if latencies else 0.0,
        len(latencies),
    )


@dataclass
class Row:
    pairs: int
    deployment: str
    code: str
    started_s: float
    refresh_s: float
    refresh_range: tuple[float, float]
    scrape_s: float
    floor_s: float
    ratio: float
    measured: bool
    health_max_ms: float
    health_p99_ms: float
    idle_health_max_ms: float
    idle_health_p99_ms: float
    rss_mb: float
    peak_rss_mb: float
    deadline_2s: str


async def idle_health(served: Served, checks: int = 200) -> tuple[float, float]:
    """/-/healthy latency with no refresh running: the machine's own noise, max and p99."""
    latencies: list[float] = []
    for _ in range(checks):
        started = time.perf_counter()
        await http_get(served.port, "/-/healthy")
        latencies.append((time.perf_counter() - started) * 1000)
        await asyncio.sleep(0.005)
    latencies.sort()
    return round(latencies[-1], 1), round(latencies[int(0.99 * (len(latencies) - 1))], 1)


async def bench_tree(
    pairs: list[tuple[str, str]],
    deployment: str,
    url: str,
    nodes: Nodes,
    code: str,
    tree: Path,
    declarations: Path,
    rounds: int,
) -> Row:
    floor = floor_commands(pairs, with_xinfo=(code == "after"))
    one = await serve(tree, url, declarations, deadline=CAP_SECONDS)
    try:
        idle = await idle_health(one)
        first = await scrape_round(one)  # warm: connections, the slot map
        results: list[Round] = []
        floor_times: list[float] = []
        if first.measured:
            for _ in range(rounds):
                floor_times.append(await timed_floor(nodes, floor))
                results.append(await scrape_round(one))
        else:  # not done within the cap: the refresh goes on in the background; nothing more to time
            floor_times.append(await timed_floor(nodes, floor))
            results.append(first)
        rss, peak = one.rss_mb()
    finally:
        one.stop()
    refreshes = [r.refresh_s for r in results if r.refresh_s is not None and r.measured] or [float("nan")]
    refresh = statistics.median(refreshes)
    base = statistics.median(floor_times)
    row = Row(
        len(pairs),
        deployment,
        code,
        one.started_s,
        round(refresh, 3),
        (round(min(refreshes), 3), round(max(refreshes), 3)),
        round(statistics.median(r.scrape_s for r in results), 3),
        round(base, 3),
        round(refresh / base, 2),
        all(r.measured for r in results),
        max(r.health_max_ms for r in results),
        max(r.health_p99_ms for r in results),
        idle[0],
        idle[1],
        rss,
        peak,
        "" if first.measured else f"not done within {CAP_SECONDS:g} s ({first.reason})",
    )
    if first.measured:  # with a 2 s deadline: does the refresh end by it?
        cut_at = await serve(tree, url, declarations, deadline=2)
        try:
            await scrape_round(cut_at)
            cut = await scrape_round(cut_at)
        finally:
            cut_at.stop()
        outcome = "measured" if cut.measured else f"unmeasured ({cut.reason})"
        row.deadline_2s = f"{outcome}, scrape {cut.scrape_s:.2f} s"
    return row


async def timed_floor(nodes: Nodes, commands: Sequence[Command]) -> float:
    started = time.perf_counter()
    await nodes.run(commands)
    return time.perf_counter() - started


async def bench_deployment(
    pairs: list[tuple[str, str]],
    deployment: str,
    url: str,
    nodes: Nodes,
    trees: dict[str, Path],
    declarations: Path,
    rounds: int,
) -> list[Row]:
    """Each tree in turn (a refresh left running in the background by one would load the other's)."""
    return [
        await bench_tree(pairs, deployment, url, nodes, code, tree, declarations, rounds)
        for code, tree in trees.items()
    ]


def write_declarations(pairs: Sequence[tuple[str, str]], directory: Path) -> Path:
    groups: dict[str, list[str]] = {}
    for stream, group in pairs:
        groups.setdefault(stream, []).append(group)
    path = directory / "declarations.yaml"
    path.write_text(yaml.safe_dump({"streams": {"consumer_groups": groups}}, sort_keys=False, default_flow_style=None))
    return path


async def bench_size(
    count: int,
    trees: dict[str, Path],
    rounds: int,
    directory: Path,
    deployments: Sequence[str] = ("standalone", "cluster"),
) -> list[Row]:
    pairs = pairs_of(count)
    declarations = write_declarations(pairs, directory)
    rows: list[Row] = []
    if "standalone" in deployments:
        rows += await bench_standalone(pairs, trees, rounds, declarations)
    if "cluster" in deployments:
        rows += await bench_cluster(pairs, trees, rounds, declarations)
    return rows


async def bench_standalone(
    pairs: list[tuple[str, str]], trees: dict[str, Path], rounds: int, declarations: Path
) -> list[Row]:
    rows: list[Row] = []
    server = start_redis()
    try:
        nodes = Nodes.of(server, None)
        await create_stream_groups_at(server.url)
        await seed(nodes, pairs)
        rows += await bench_deployment(pairs, "standalone", server.url, nodes, trees, declarations, rounds)
        await nodes.close()
    finally:
        server.remove()
    return rows


async def bench_cluster(
    pairs: list[tuple[str, str]], trees: dict[str, Path], rounds: int, declarations: Path
) -> list[Row]:
    rows: list[Row] = []
    cluster = start_cluster(masters=3)
    try:
        nodes = Nodes.of(None, cluster)
        await nodes.run([("XGROUP CREATE", s, g, "0", "MKSTREAM") for s, g in STREAM_GROUPS])
        await seed(nodes, pairs)
        url = "redis+cluster://" + ",".join(f"127.0.0.1:{port}" for port in cluster.ports)
        rows += await bench_deployment(pairs, "cluster, 3 masters", url, nodes, trees, declarations, rounds)
        await nodes.close()
    finally:
        cluster.remove()
    return rows


def table(rows: Sequence[dict[str, object]]) -> str:
    lines = [
        "| pairs | deployment | code | refresh s (min-max) | floor s | refresh vs floor | scrape s | /-/healthy during"
        " the refresh, max (p99) ms | idle, max (p99) ms | RSS MB (peak) | with --deadline 2 |",
        "|---:|---|---|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        spread = row["refresh_range"]
        assert isinstance(spread, list | tuple)
        low, high = spread
        lines.append(
            f"| {row['pairs']:,} | {row['deployment']} | {row['code']} | {row['refresh_s']:.2f} ({low:.2f}-{high:.2f})"
            f" | {row['floor_s']:.2f} | {row['ratio']:.2f}x | {row['scrape_s']:.2f}"
            f" | {row['health_max_ms']:.0f} ({row['health_p99_ms']:.0f})"
            f" | {row['idle_health_max_ms']:.0f} ({row['idle_health_p99_ms']:.0f})"
            f" | {row['rss_mb']:.0f} ({row['peak_rss_mb']:.0f})"
            f" | {row['deadline_2s']} |"
        )
    return "\n".join(lines) + "\n"


async def main_async(
    sizes: list[int], before: Path | None, rounds: int, deployments: Sequence[str] = ("standalone", "cluster")
) -> dict[str, object]:
    trees = {"after": TREE} if before is None else {"before": before, "after": TREE}
    load_before = os.getloadavg()
    rows: list[Row] = []
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")

    def report() -> dict[str, object]:
        return {
            "date": datetime.now(UTC).isoformat(timespec="seconds"),
            "rounds": rounds,
            "trees": {code: str(tree) for code, tree in trees.items()},
            "load_average": [load_before[0], os.getloadavg()[0]],
            "cpus": os.cpu_count(),
            "rows": [asdict(row) for row in rows],
        }

    with tempfile.TemporaryDirectory(prefix="orpycamcp-bus-") as directory:
        for size in sizes:
            rows += await bench_size(size, trees, rounds, Path(directory), deployments)
            # Written after each size: a long run stopped later keeps what it measured.
            RESULTS.mkdir(exist_ok=True)
            (RESULTS / f"bus-size-{stamp}.json").write_text(json.dumps(report(), indent=2) + "\n")
            print(table(report()["rows"]), flush=True)  # type: ignore[arg-type]
    return report()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--pairs", default="10000,100000", help="comma-separated numbers of declared pairs")
    parser.add_argument("--before", type=Path, help="another source tree to serve side by side")
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--deployments", default="standalone,cluster", help="standalone, cluster or both")
    args = parser.parse_args()
    sizes = [int(size) for size in args.pairs.split(",")]
    report = asyncio.run(main_async(sizes, args.before, args.rounds, args.deployments.split(",")))
    print(f"load average {report['load_average']} on {report['cpus']} CPUs; {report['rounds']} rounds")


if __name__ == "__main__":
    main()
