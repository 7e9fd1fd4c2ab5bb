"""A connection flood, run as its own process so that it does not share an
event loop (or a core's worth of scheduling) with the scraper measuring it.

`count` TCP connections to 127.0.0.1:PORT, held open: idle (nothing sent),
trickling (a request head that never ends, one byte a second), streaming (a
header value that never ends, sent as fast as the socket takes it), crlf (one
request answered, then a line end every second, which a parser skips between
requests), trailer (a chunked GET answered, then a trailer that never ends,
streamed) or body (a GET announcing a body answered, then one body byte a
second). A connection the server closes is opened again at once, as a client
that reconnects would. Prints one JSON line of figures when done.

    python -m devkit.flood PORT COUNT idle|trickle|stream|crlf|trailer|body SECONDS
"""

from __future__ import annotations

import asyncio
import itertools
import json
import math
import os
import resource
import signal
import subprocess
import sys
import time
from collections.abc import Iterable, Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import NamedTuple

import httpx

# Connections being opened at once: the listen backlog is not flooded with SYNs beyond it.
CONNECTING_AT_ONCE = 512
TRICKLE_HEAD = b"GET /metrics HTTP/1.1\r\nHost: flood\r\nX-Trickle: " + b"a" * 4000
STREAM_HEAD = b"GET /metrics HTTP/1.1\r\nHost: flood\r\nX-Stream: "
STREAM_CHUNK = b"a" * 65536
ANSWERED = b"GET /-/healthy HTTP/1.1\r\nHost: flood\r\n\r\n"
CHUNKED = b"GET /-/healthy HTTP/1.1\r\nHost: flood\r\nTransfer-Encoding: chunked\r\n\r\n"
TRAILER_HEAD = b"0\r\nX-Stream: "
WITH_BODY = b"GET /-/healthy HTTP/1.1\r\nHost: flood\r\nContent-Length: 1000000000\r\n\r\n"
MODES = ("idle", "trickle", "stream", "crlf", "trailer", "body")


@dataclass
class FloodFigures:
    mode: str
    target: int
    connects: int = 0
    closed_by_server: int = 0
    connect_errors: int = 0
    bytes_sent: int = 0
    held_max: int = 0
    seconds_to_full: float | None = None


class FloodPlan(NamedTuple):
    port: int
    connections: int
    mode: str
    seconds: float


def raise_fd_limit() -> None:
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < hard:
        resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))


async def _trickled(
    reader: asyncio.StreamReader,
    writer: asyncio.StreamWriter,
    pieces: Iterable[bytes],
    figures: FloodFigures,
    stop: asyncio.Event,
) -> None:
    """`pieces` written one a second, until they end, the server closes the connection or the flood stops."""
    for piece in pieces:
        if stop.is_set():
            return
        writer.write(piece)
        figures.bytes_sent += len(piece)
        try:
            if await asyncio.wait_for(reader.read(4096), 1.0) == b"":
                return
        except TimeoutError:
            continue


async def _streamed(writer: asyncio.StreamWriter, start: bytes, figures: FloodFigures, stop: asyncio.Event) -> None:
    """`start`, then a header value without end, as fast as the socket takes it, until the flood stops."""
    writer.write(start)
    while not stop.is_set():
        writer.write(STREAM_CHUNK)
        figures.bytes_sent += len(STREAM_CHUNK)
        await writer.drain()  # raises once the server has closed the connection


async def flood(plan: FloodPlan) -> FloodFigures:
    """Hold the connections for `plan.seconds`, or until SIGTERM."""
    figures = FloodFigures(plan.mode, plan.connections)
    started = time.monotonic()
    stop = asyncio.Event()
    asyncio.get_running_loop().add_signal_handler(signal.SIGTERM, stop.set)
    asyncio.get_running_loop().call_later(plan.seconds, stop.set)
    gate = asyncio.Semaphore(CONNECTING_AT_ONCE)
    held = 0

    async def one() -> None:
        nonlocal held
        # Checked as well as cancelled: wait_for may swallow a cancellation that races its result.
        while not stop.is_set():
            try:
                async with gate:
                    reader, writer = await asyncio.wait_for(asyncio.open_connection("127.0.0.1", plan.port), 10)
            except (OSError, TimeoutError):
                figures.connect_errors += 1
                await asyncio.sleep(0.2)
                continue
            figures.connects += 1
            held += 1
            if held > figures.held_max:
                figures.held_max = held
                if held >= plan.connections and figures.seconds_to_full is None:
                    figures.seconds_to_full = round(time.monotonic() - started, 2)
            try:
                if plan.mode == "idle":
                    # Asleep until the server closes it: an idle flood costs its own process nothing.
                    await reader.read(4096)
                elif plan.mode == "stream":
                    await _streamed(writer, STREAM_HEAD, figures, stop)
                elif plan.mode == "trailer":
                    writer.write(CHUNKED)
                    await reader.readuntil(b"\r\n\r\n")
                    await _streamed(writer, TRAILER_HEAD, figures, stop)
                elif plan.mode in ("crlf", "body"):
                    writer.write(ANSWERED if plan.mode == "crlf" else WITH_BODY)
                    await reader.readuntil(b"\r\n\r\n")
                    piece = b"\r\n" if plan.mode == "crlf" else b"a"
                    await _trickled(reader, writer, itertools.repeat(piece), figures, stop)
                else:
                    pieces = (TRICKLE_HEAD[sent : sent + 1] for sent in range(len(TRICKLE_HEAD)))
                    await _trickled(reader, writer, pieces, figures, stop)
                figures.closed_by_server += 1
            except (OSError, asyncio.IncompleteReadError):
                figures.closed_by_server += 1
            finally:
                held -= 1
                writer.close()

    tasks = [asyncio.get_running_loop().create_task(one()) for _ in range(plan.connections)]
    await stop.wait()
    for task in tasks:
        task.cancel()
    await asyncio.gather(*tasks, return_exceptions=True)
    return figures


# --- The scraper's side, for the test and the benchmark ------------------------------------------------------------


@dataclass
class ScrapeFigures:
    """Scrapes of /metrics, each on a new connection (the hardest way in during a flood)."""

    statuses: dict[str, int] = field(default_factory=dict)
    latencies_ms: list[float] = field(default_factory=list)
    open_connections_max: float = 0
    shed_total: float = 0

    @property
    def ok(self) -> int:
        return self.statuses.get("200", 0)

    @property
    def total(self) -> int:
        return sum(self.statuses.values())

    def p(self, fraction: float) -> float:
        ordered = sorted(self.latencies_ms)
        if not ordered:
            return math.nan
        return round(ordered[min(len(ordered) - 1, max(0, math.ceil(fraction * len(ordered)) - 1))], 2)


def _gauge(page: bytes, name: bytes) -> float | None:
    for line in page.splitlines():
        if line.startswith(name + b" "):
            return float(line.split()[1])
    return None


SCRAPER_ADDRESS = "127.0.0.2"


async def scrape_for(
    url: str, seconds: float, interval: float = 0.1, count: int | None = None, full_at: float | None = None
) -> ScrapeFigures:
    """Scrape every `interval` s for `seconds` (or `count` times, or until the server reports
    `full_at` connections open), a new connection each time."""
    figures = ScrapeFigures()
    # From another loopback address than the flood's: a scraper is another client than
    # the one flooding (at the cap, a client's own idle connections are shed first).
    transport = httpx.AsyncHTTPTransport(
        limits=httpx.Limits(max_keepalive_connections=0), local_address=SCRAPER_ADDRESS
    )
    until = time.monotonic() + seconds
    async with httpx.AsyncClient(transport=transport, timeout=15) as client:
        while time.monotonic() < until if count is None else figures.total < count:
            sent = time.monotonic()
            try:
                response = await client.get(url + "/metrics")
                kind = str(response.status_code)
            except httpx.HTTPError as exc:
                kind = type(exc).__name__
            else:
                figures.latencies_ms.append((time.monotonic() - sent) * 1000)
                if response.status_code == 200:
                    open_now = _gauge(response.content, b"orpycamcp_exporter_http_connections") or 0
                    figures.open_connections_max = max(figures.open_connections_max, open_now)
                    figures.shed_total = (
                        _gauge(response.content, b"orpycamcp_exporter_http_connections_shed_total") or 0
                    )
            figures.statuses[kind] = figures.statuses.get(kind, 0) + 1
            if full_at is not None and figures.open_connections_max >= full_at:
                break
            await asyncio.sleep(max(0.0, interval - (time.monotonic() - sent)))
    return figures


def cpu_seconds(pid: int) -> float:
    """The user and system CPU time a process has used so far."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def memory_kib(pid: int) -> dict[str, int]:
    """VmRSS (now) and VmHWM (the peak) of a process, in KiB."""
    wanted = {}
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        key, _, value = line.partition(":")
        if key in ("VmRSS", "VmHWM"):
            wanted[key] = int(value.split()[0])
    return wanted


class Cpu:
    """A process's CPU share (percent of one core) since the last reading."""

    def __init__(self, pid: int) -> None:
        self.pid = pid
        self._at = time.monotonic()
        self._used = cpu_seconds(pid)

    def percent(self) -> float:
        at, used = time.monotonic(), cpu_seconds(self.pid)
        share = (used - self._used) / max(at - self._at, 1e-9) * 100
        self._at, self._used = at, used
        return round(share, 1)


@dataclass
class FloodRun:
    mode: str
    connections: int
    seconds: float
    unloaded: ScrapeFigures
    ramp: ScrapeFigures
    loaded: ScrapeFigures
    flood: FloodFigures | None
    rss_before_kib: int
    rss_peak_kib: int
    rss_after_kib: int
    cpu_unloaded_percent: float
    cpu_loaded_percent: float

    def summary(self) -> dict[str, object]:
        return {
            "mode": self.mode,
            "connections": self.connections,
            "seconds": self.seconds,
            "ramp_scrapes": self.ramp.total,
            "ramp_scrapes_200": self.ramp.ok,
            "p99_ramp_ms": self.ramp.p(0.99),
            "scrapes": self.loaded.total,
            "scrapes_200": self.loaded.ok,
            "statuses": self.loaded.statuses,
            "p50_unloaded_ms": self.unloaded.p(0.5),
            "p99_unloaded_ms": self.unloaded.p(0.99),
            "p50_loaded_ms": self.loaded.p(0.5),
            "p99_loaded_ms": self.loaded.p(0.99),
            "open_connections_max": max(self.ramp.open_connections_max, self.loaded.open_connections_max),
            "shed_total": max(self.ramp.shed_total, self.loaded.shed_total),
            "rss_before_mib": round(self.rss_before_kib / 1024, 1),
            "rss_peak_mib": round(self.rss_peak_kib / 1024, 1),
            "rss_after_mib": round(self.rss_after_kib / 1024, 1),
            "server_cpu_unloaded_percent": self.cpu_unloaded_percent,
            "server_cpu_loaded_percent": self.cpu_loaded_percent,
            "flood": asdict(self.flood) if self.flood is not None else None,
        }


async def measure_flood(
    url: str,
    port: int,
    pid: int,
    connections: int,
    mode: str,
    seconds: float,
    baseline_scrapes: int = 100,
    ramp_limit: float = 60.0,
    flood_nice: int = 0,
) -> FloodRun:
    """The scraper unloaded; then while the flood ramps up to `connections` open at once
    (at most `ramp_limit` s); then for `seconds` while the flood holds them. The server's
    CPU share is taken over the unloaded and the held phases; the flood process runs at
    `flood_nice` (a remote client's own work is not the server's: on a small machine a
    flood writing as fast as loopback takes competes with the server it measures)."""
    cpu = Cpu(pid)
    unloaded = await scrape_for(url, math.inf, count=baseline_scrapes)
    cpu_unloaded = cpu.percent()
    before = memory_kib(pid)["VmRSS"]
    command: Sequence[str] = [
        *(["nice", "-n", str(flood_nice)] if flood_nice else []),
        sys.executable,
        "-m",
        "devkit.flood",
        str(port),
        str(connections),
        mode,
        f"{ramp_limit + seconds + 30:g}",
    ]
    process = await asyncio.create_subprocess_exec(*command, stdout=subprocess.PIPE)
    try:
        ramp = await scrape_for(url, ramp_limit, full_at=connections * 0.98)
        cpu.percent()
        loaded = await scrape_for(url, seconds)
        cpu_loaded = cpu.percent()
    finally:
        process.terminate()
        output, _ = await process.communicate()
    line = output.decode().strip().splitlines()[-1] if output.strip() else ""
    figures = FloodFigures(**json.loads(line)) if line.startswith("{") else None
    memory = memory_kib(pid)
    return FloodRun(
        mode,
        connections,
        seconds,
        unloaded,
        ramp,
        loaded,
        figures,
        before,
        memory["VmHWM"],
        memory["VmRSS"],
        cpu_unloaded,
        cpu_loaded,
    )


def main() -> None:
    port, count, mode, seconds = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3], float(sys.argv[4])
    if mode not in MODES:
        raise SystemExit(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
    raise_fd_limit()
    import uvloop

    figures = uvloop.run(flood(FloodPlan(port, count, mode, seconds)))
    print(json.dumps(asdict(figures)), flush=True)


if __name__ == "__main__":
    main()
