"""What every fault test checks, in one place: the scrape answers within the
scrape timeout, only the affected signals are unmeasured (no value series, last
success kept), the others stay measured, the signal comes back within one TTL
of the fault clearing, no connection is leaked and nothing is written."""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from typing import Literal

import asyncpg
import pytest
from redis.asyncio import Redis as AsyncRedis

from devkit.servers import RedisServer
from exporter.exporter import Exporter
from exporter.timeouts import header_wait
from tests.clock import FakeClock
from tests.platform import Platform
from tests.scrapes import AUDIT_PREFIX, DLQ_PREFIX, PRESERVATION_PREFIX, STREAMS_PREFIX, Page, scrape, value_series
from tests.waits import wait_until

POSTGRES_SIGNALS = ("dlq", "preservation", "audit_chain")
ALL_SIGNALS = (*POSTGRES_SIGNALS, "streams")
PREFIXES = {
    "dlq": DLQ_PREFIX,
    "preservation": PRESERVATION_PREFIX,
    "audit_chain": AUDIT_PREFIX,
    "streams": STREAMS_PREFIX,
}
LAST_SUCCESS = "orpycamcp_signal_last_success_timestamp_seconds"
# The deadline is the time a measurement may take before it is a timeout: on a
# loaded machine (a CI runner, a load of 15 on 2 cores) a reconnect through a
# pooler with its session check takes over 1 s, and a timeout there is not the
# fault under test. The faults that stall are cut by it, each costing this long.
DEADLINE = 2.5
TTL = 3.0  # above the deadline, as the exporter requires; the fake clock moves past it
# The scrape timeout a Prometheus would send; the exporter answers 0.5 s before it,
# and waits for a measurement at most its deadline plus a grace of 0.5 s.
SCRAPE_TIMEOUT = 4.5
MAX_CONNECTIONS = 2  # --database.max-connections default


async def timed_scrape(exporter: Exporter, timeout: float = SCRAPE_TIMEOUT) -> Page:  # noqa: ASYNC109
    """A scrape as Prometheus makes it; it must answer within the scrape timeout."""
    started = time.monotonic()
    page = await scrape(exporter, wait=exporter.timeouts.bounded_wait(header_wait(timeout)))
    elapsed = time.monotonic() - started
    assert elapsed < timeout, f"the scrape took {elapsed:.2f} s, past the {timeout:g} s scrape timeout"
    return page


def last_successes(page: Page) -> dict[str, float | None]:
    return {signal: page.get(LAST_SUCCESS, signal=signal) for signal in ALL_SIGNALS}


def assert_page(
    page: Page,
    unmeasured: Iterable[str],
    enabled: Iterable[str] = ALL_SIGNALS,
    kept: dict[str, float | None] | None = None,
) -> None:
    """`unmeasured` signals: 0, no value series, last success as in `kept`; every other enabled signal: 1."""
    down = set(unmeasured)
    for signal in enabled:
        if signal in down:
            assert page.measured(signal) == 0, f"{signal} should be unmeasured"
            assert len(page.failure_reasons(signal)) == 1, f"{signal} is unmeasured: the page says why, once"
            assert value_series(page, PREFIXES[signal]) == [], f"{signal} is unmeasured but has value series"
            if kept is not None:
                assert page.get(LAST_SUCCESS, signal=signal) == kept[signal], f"{signal}: last success not kept"
        else:
            assert page.measured(signal) == 1, f"{signal} should stay measured while only {sorted(down)} fail"
            assert page.failure_reasons(signal) == set(), f"{signal} is measured: no failure reason"


def reasons(caplog: pytest.LogCaptureFixture, signal: str | None = None) -> set[str]:
    """The reasons logged for unmeasured signals (the `reason` key of the measure logger)."""
    return {
        str(record.__dict__["reason"])
        for record in caplog.records
        if record.name == "orpycamcp.measure"
        and "reason" in record.__dict__
        and (signal is None or record.__dict__.get("signal") == signal)
    }


async def settled_sessions(platform: Platform, at_most: int, within: float = 8.0) -> int:
    """The exporter role's sessions once they are at most `at_most` (backends of dropped
    connections take a moment to exit); the last count if they never are."""
    count = await platform.exporter_sessions()

    async def low() -> bool:
        nonlocal count
        count = await platform.exporter_sessions()
        return count <= at_most

    await wait_until(low, within, 0.2)
    return count


WRITES_SQL = (
    "SELECT coalesce(sum(n_tup_ins), 0)::bigint AS ins, coalesce(sum(n_tup_upd), 0)::bigint AS upd,"
    " coalesce(sum(n_tup_del), 0)::bigint AS del FROM pg_stat_user_tables"
)


async def row_writes(platform: Platform) -> tuple[int, int, int]:
    """Rows inserted, updated and deleted in the platform's tables so far, once the
    statistics have settled (backends report theirs when they exit)."""
    previous: tuple[int, int, int] | None = None
    for _ in range(20):
        row = (await platform.fetch(WRITES_SQL))[0]
        current = (int(row["ins"]), int(row["upd"]), int(row["del"]))
        if current == previous:
            return current
        previous = current
        await asyncio.sleep(0.3)
    assert previous is not None
    return previous


async def assert_role_cannot_write(platform: Platform, url: str | None = None) -> None:
    """Through the exporter's own URL, no write gets through: read-only by default, and
    without the privilege when a transaction asks to be read-write."""
    connection = await asyncpg.connect(url or platform.exporter_url)
    try:
        with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
            await connection.execute("INSERT INTO public.tenants (slug) VALUES ('intruder')")
        with pytest.raises(asyncpg.exceptions.ReadOnlySQLTransactionError):
            await connection.execute("CREATE TABLE public.intruder (x int)")
        await connection.execute("BEGIN TRANSACTION READ WRITE")
        with pytest.raises(asyncpg.exceptions.InsufficientPrivilegeError):
            await connection.execute("DELETE FROM public.audit_chain_runs")
        await connection.execute("ROLLBACK")
    finally:
        await connection.close()


@dataclass
class FaultRun:
    """The pages of one fault, for test-specific assertions."""

    before: Page
    during: Page
    after: Page


async def exercise_fault(
    platform: Platform,
    exporter: Exporter,
    clock: FakeClock,
    affected: Iterable[str],
    inject: Callable[[], Awaitable[None]],
    clear: Callable[[], Awaitable[None]],
    enabled: Iterable[str] = ALL_SIGNALS,
    ttl: float = TTL,
    warm: bool = True,
    role_url: str | None = None,
) -> FaultRun:
    """The common life of a fault: measured, fault, unmeasured (others measured), cleared,
    measured again one TTL later with the same exporter; sessions bounded, nothing written.

    `clock` is the exporter's cache clock: the test moves it past the TTL instead of
    sleeping. `warm=False`: the fault is already there at the first scrape (`inject`
    is then called again and must be harmless twice), so the affected signals start
    unmeasured, with no last success."""
    enabled = tuple(enabled)
    affected = tuple(affected)
    assert await platform.exporter_sessions() == 0
    before = await timed_scrape(exporter)
    if warm:
        assert_page(before, (), enabled)
    else:
        assert_page(before, affected, enabled, kept=dict.fromkeys(affected))
    kept = last_successes(before)

    await inject()
    writes = await row_writes(platform)
    clock.advance(ttl + 0.1)  # the cached outcome has expired: the next scrape measures
    during = await timed_scrape(exporter)
    assert_page(during, affected, enabled, kept)
    # A second scrape within the TTL is served the cached failure, with the same story.
    clock.advance(ttl - 0.2)
    assert_page(await timed_scrape(exporter), affected, enabled, kept)
    assert await row_writes(platform) == writes, "rows were written while the exporter measured"

    await clear()
    writes = await row_writes(platform)
    clock.advance(ttl + 0.1)  # within one TTL of clearing, measured again
    after = await timed_scrape(exporter)
    assert_page(after, (), enabled)
    for signal in affected:
        stamp = after.get(LAST_SUCCESS, signal=signal)
        assert stamp is not None
        assert kept[signal] is None or stamp > kept[signal]  # type: ignore[operator]
    assert await settled_sessions(platform, MAX_CONNECTIONS) <= MAX_CONNECTIONS
    await exporter.close()
    assert await settled_sessions(platform, 0) == 0, "the exporter's connections outlived it"
    assert await row_writes(platform) == writes, "rows were written while the exporter measured"
    await assert_role_cannot_write(platform, role_url)
    return FaultRun(before, during, after)


@dataclass
class Scene:
    """What a fault case acts on: the platform's database, the Redis, the stall proxy
    when the exporter goes through one, and connections opened on demand (a lock lives
    as long as the connection that took it)."""

    platform: Platform
    redis: RedisServer
    own_redis: bool = False  # the case's own server, which it may stop or pause
    proxy: StallProxy | None = None
    _locker: asyncpg.Connection | None = None
    _redis_client: AsyncRedis | None = None

    async def locker(self) -> asyncpg.Connection:
        """One administrator connection, kept for the whole case."""
        if self._locker is None:
            self._locker = await asyncpg.connect(self.platform.admin_url)
        return self._locker

    def redis_client(self) -> AsyncRedis:
        if self._redis_client is None:
            self._redis_client = AsyncRedis.from_url(self.redis.url, decode_responses=True)
        return self._redis_client

    def unblock(self) -> None:
        """Let bytes flow again, so that closing the exporter cannot hang on a stalled peer."""
        if self.proxy is not None:
            self.proxy.resume()
        if self.own_redis:
            self.redis.resume()

    async def close(self) -> None:
        if self._locker is not None:
            await self._locker.close()
        if self._redis_client is not None:
            await self._redis_client.aclose()


Step = Callable[[Scene], Awaitable[None]]


async def nothing(scene: Scene) -> None:
    pass


@dataclass(frozen=True)
class FaultCase:
    """One row of the fault matrix: how to make the fault, how to clear it, and what
    the exporter must show meanwhile."""

    name: str
    affected: tuple[str, ...]
    inject: Step
    clear: Step
    # The reasons logged for the unmeasured signals: exactly these, or (`exact=False`,
    # when which limit fires first depends on timing) a subset of them, at least one
    # of them logged for an affected signal.
    reasons: frozenset[str]
    exact: bool = True
    prepare: Step = nothing  # before the exporter exists (e.g. a NOT NULL dropped)
    redis: Literal["shared", "own"] = "shared"  # "own": the case stops or pauses its Redis
    proxied: bool = False  # the exporter reaches PostgreSQL through a StallProxy
    warm: bool = True  # False: injected before the first scrape (see exercise_fault)
    in_log: tuple[str, ...] = ()


def capture(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")


class StallProxy:
    """A TCP proxy in the test's event loop: forwards both ways until stalled, then holds
    every byte (new connections are still accepted) until resumed."""

    def __init__(self, target_port: int) -> None:
        self.target_port = target_port
        self.flowing = asyncio.Event()
        self.flowing.set()
        self.port = 0
        self._server: asyncio.Server | None = None
        self._tasks: set[asyncio.Task[None]] = set()
        self.accepted = 0

    async def start(self) -> None:
        self._server = await asyncio.start_server(self._accept, "127.0.0.1", 0)
        self.port = self._server.sockets[0].getsockname()[1]

    def stall(self) -> None:
        self.flowing.clear()

    def resume(self) -> None:
        self.flowing.set()

    def _accept(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.accepted += 1
        task = asyncio.get_running_loop().create_task(self._relay(reader, writer))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _relay(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            upstream_reader, upstream_writer = await asyncio.open_connection("127.0.0.1", self.target_port)
        except OSError:
            writer.close()
            return

        async def pump(source: asyncio.StreamReader, sink: asyncio.StreamWriter) -> None:
            try:
                while data := await source.read(65536):
                    await self.flowing.wait()
                    sink.write(data)
                    await sink.drain()
            except OSError:
                pass
            finally:
                sink.close()

        try:
            await asyncio.gather(pump(reader, upstream_writer), pump(upstream_reader, writer))
        finally:
            writer.close()
            upstream_writer.close()

    async def close(self) -> None:
        if self._server is not None:
            self._server.close()
        for task in list(self._tasks):
            task.cancel()
        if self._tasks:
            await asyncio.wait(set(self._tasks), timeout=5)
        if self._server is not None:
            await self._server.wait_closed()
