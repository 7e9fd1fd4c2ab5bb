"""One consumer group with many consumers: 1,000, 5,000 and 20,000 (Redis forgets
a consumer only on XGROUP DELCONSUMER, so pod-named consumers pile up).

The exporter of this tree is served as a real `serve` process
(bench/bus_serve.py, TTL forced to 0) reading one declared group beside the
built-in ones; a round is one `/metrics` scrape while `/-/healthy` is asked
in a loop (bench/bus_size.py's prober). Beside the exporter's refresh:

- Redis's own time for `XINFO CONSUMERS` (SLOWLOG, the command's execution
  alone, median of the rounds);
- the round trip alone: the command sent on a plain socket and its reply's
  RESP2 lines walked, no value made;
- redis-py's round trip: the same command through redis-py's parser (no
  hiredis) and its `XINFO CONSUMERS` callback, as the exporter reads it.

    .venv/bin/python -m bench.consumers --consumers 1000,5000,20000 --rounds 3

Writes bench/results/consumers-<date>.json and prints the markdown table.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import tempfile
import time
from dataclasses import asdict, dataclass
from datetime import UTC, datetime
from pathlib import Path

import redis.asyncio
from redis._parsers.encoders import Encoder
from redis._parsers.helpers import parse_list_of_dicts
from redis._parsers.resp2 import _AsyncRESP2Parser

from bench.bus_size import RESULTS, TREE, idle_health, scrape_round, serve, write_declarations
from bench.machine import host_state, loadavg
from devkit.servers import LocalRedis, start_redis
from devkit.streams import create_stream_groups_at

STREAM, GROUP = "bench.consumers", "crowd"
COMMAND_LOGGED = f"XINFO CONSUMERS {STREAM} {GROUP}".encode()  # as SLOWLOG shows it
COMMAND = f"*4\r\n$5\r\nXINFO\r\n$9\r\nCONSUMERS\r\n${len(STREAM)}\r\n{STREAM}\r\n${len(GROUP)}\r\n{GROUP}\r\n".encode()


@dataclass
class Row:
    consumers: int
    redis_us: float  # SLOWLOG: the command's execution in Redis
    round_trip_ms: float  # the reply's RESP2 lines walked, no value made
    redis_py_ms: float  # through redis-py's parser and callback
    parse_ms: float  # redis-py's parser alone, on the reply's bytes in memory
    callback_ms: float  # redis-py's XINFO CONSUMERS callback (records as dicts) alone
    reduce_ms: float  # the count and smallest idle read off the bytes by a plain split, no parser
    refresh_s: float
    measured: bool
    health_max_ms: float
    health_p99_ms: float
    idle_health_max_ms: float
    idle_health_p99_ms: float
    loadavg: str


async def seed(client: redis.asyncio.Redis, consumers: int) -> None:
    await client.delete(STREAM)
    await client.xgroup_create(STREAM, GROUP, id="0", mkstream=True)
    for start in range(0, consumers, 1000):
        pipe = client.pipeline(transaction=False)
        for number in range(start, min(start + 1000, consumers)):
            pipe.xgroup_createconsumer(STREAM, GROUP, f"pod-{number:06d}-7f9c4b8d6-x2k4q")
        await pipe.execute()


async def raw_round_trip(server: LocalRedis) -> tuple[float, bytes]:
    """XINFO CONSUMERS on a plain socket, its reply read back by walking its RESP2 lines
    (no values made): (ms, the reply's bytes)."""
    reader, writer = await asyncio.open_connection("127.0.0.1", server.port)
    chunks: list[bytes] = []

    async def line() -> bytes:
        text = await reader.readline()
        chunks.append(text)
        return text[:-2]

    async def skip() -> None:
        head = await line()
        if head[:1] == b"*":
            for _ in range(int(head[1:])):
                await skip()
        elif head[:1] == b"$" and head != b"$-1":
            chunks.append(await reader.readexactly(int(head[1:]) + 2))

    try:
        started = time.perf_counter()
        writer.write(COMMAND)
        await writer.drain()
        await skip()
        return (time.perf_counter() - started) * 1000, b"".join(chunks)
    finally:
        writer.close()


async def redis_py_ms(server: LocalRedis) -> float:
    client = redis.asyncio.Redis(port=server.port, protocol=2)
    try:
        await client.ping()
        started = time.perf_counter()
        await client.execute_command("XINFO CONSUMERS", STREAM, GROUP)  # type: ignore[no-untyped-call]
        return (time.perf_counter() - started) * 1000
    finally:
        await client.aclose()


async def parse_costs(reply: bytes) -> tuple[float, float, float]:
    """What parsing the reply costs, in this process, without the network: redis-py's RESP2
    parser (as the exporter uses it, no hiredis), its callback, and a plain bytes reduction."""
    stream = asyncio.StreamReader(limit=2**26)
    stream.feed_data(reply)
    stream.feed_eof()
    parser = _AsyncRESP2Parser(65536)
    parser._stream = stream
    parser._connected = True
    parser.encoder = Encoder("utf-8", "strict", decode_responses=False)  # type: ignore[no-untyped-call]
    started = time.perf_counter()
    records = await parser.read_response()
    parse_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    parse_list_of_dicts(records)  # type: ignore[no-untyped-call]
    callback_ms = (time.perf_counter() - started) * 1000
    started = time.perf_counter()
    lines = reply.split(b"\r\n")
    count, idle = int(lines[0][1:]), None
    for position, line in enumerate(lines):
        if line == b"idle":
            value = int(lines[position + 1][1:])
            idle = value if idle is None else min(idle, value)
    reduce_ms = (time.perf_counter() - started) * 1000
    assert count == len(records)
    return round(parse_ms, 1), round(callback_ms, 1), round(reduce_ms, 1)


async def slowlog_us(client: redis.asyncio.Redis) -> list[int]:
    entries = await client.slowlog_get(10_000)
    return [int(entry["duration"]) for entry in entries if entry["command"] == COMMAND_LOGGED]


async def bench_size(server: LocalRedis, consumers: int, rounds: int, directory: Path) -> Row:
    client = redis.asyncio.Redis(port=server.port)
    try:
        await seed(client, consumers)
        await client.config_set("slowlog-log-slower-than", 0)
        await client.config_set("slowlog-max-len", 10_000)
        await client.slowlog_reset()
        declarations = write_declarations([(STREAM, GROUP)], directory)
        served = await serve(TREE, server.url, declarations, deadline=60)
        try:
            idle = await idle_health(served)
            rows = [await scrape_round(served) for _ in range(rounds)]
        finally:
            served.stop()
        redis_own = await slowlog_us(client)
        trips = [await raw_round_trip(server) for _ in range(rounds)]
        raw = [ms for ms, _ in trips]
        costs = await parse_costs(trips[0][1])
        parsed = [await redis_py_ms(server) for _ in range(rounds)]
    finally:
        await client.config_set("slowlog-log-slower-than", 10000)
        await client.aclose()
    return Row(
        consumers,
        statistics.median(redis_own) if redis_own else float("nan"),
        round(statistics.median(raw), 1),
        round(statistics.median(parsed), 1),
        *costs,
        round(statistics.median(row.refresh_s or float("nan") for row in rows), 3),
        all(row.measured for row in rows),
        max(row.health_max_ms for row in rows),
        round(statistics.median(row.health_p99_ms for row in rows), 1),
        idle[0],
        idle[1],
        loadavg(),
    )


def table(rows: list[dict[str, object]]) -> str:
    lines = [
        "| consumers | Redis's own time (SLOWLOG) ms | round trip, reply walked unparsed ms | redis-py round trip ms"
        " | redis-py parser alone ms | its callback ms | a bytes split ms"
        " | refresh s | /-/healthy during the refresh, max (p99) ms | idle, max (p99) ms | load average |",
        "|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|",
    ]
    for row in rows:
        lines.append(
            f"| {row['consumers']:,} | {float(str(row['redis_us'])) / 1000:.2f} | {row['round_trip_ms']}"
            f" | {row['redis_py_ms']} | {row['parse_ms']} | {row['callback_ms']} | {row['reduce_ms']}"
            f" | {row['refresh_s']} | {row['health_max_ms']} ({row['health_p99_ms']})"
            f" | {row['idle_health_max_ms']} ({row['idle_health_p99_ms']}) | {row['loadavg']} |"
        )
    return "\n".join(lines)


async def main_async(sizes: list[int], rounds: int) -> dict[str, object]:
    host = host_state()
    server = start_redis()
    try:
        await create_stream_groups_at(server.url)
        with tempfile.TemporaryDirectory() as directory:
            rows = [asdict(await bench_size(server, size, rounds, Path(directory))) for size in sizes]
    finally:
        server.remove()
    return {"when": datetime.now(UTC).isoformat(timespec="seconds"), "host": host, "rounds": rounds, "rows": rows}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0] if __doc__ else None)
    parser.add_argument("--consumers", default="1000,5000,20000")
    parser.add_argument("--rounds", type=int, default=3)
    arguments = parser.parse_args()
    sizes = [int(size) for size in arguments.consumers.split(",")]
    report = asyncio.run(main_async(sizes, arguments.rounds))
    RESULTS.mkdir(exist_ok=True)
    stamp = datetime.now(UTC).strftime("%Y-%m-%dT%H-%M")
    (RESULTS / f"consumers-{stamp}.json").write_text(json.dumps(report, indent=2) + "\n")
    rows = report["rows"]
    assert isinstance(rows, list)
    print(table(rows))


if __name__ == "__main__":
    main()
