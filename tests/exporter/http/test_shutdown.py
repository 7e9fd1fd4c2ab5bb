"""SIGTERM: the scrape in flight finishes, connections close, exit 0 quickly."""

from __future__ import annotations

import asyncio
import signal
import subprocess
import sys
import time
from collections.abc import Awaitable
from pathlib import Path

import asyncpg
import httpx
import pytest
from redis.asyncio import Redis

from devkit.process import exporter_process
from devkit.servers import RedisServer, free_port
from exporter.sources.redis.source import RedisSettings
from exporter.tools.demo import EXPORTER_ROLE
from tests.platform import Platform
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

# What a shutdown may take, from SIGTERM to no session left anywhere and the process gone.
SHUTDOWN_SECONDS = 3.0


async def test_sigterm_lets_the_scrape_in_flight_finish_and_exits_0(platform: Platform, tmp_path: Path) -> None:
    await platform.add_tenant("acme")
    locker = await asyncpg.connect(platform.admin_url)
    # lock_timeout is a quarter of the deadline: 1 s for the scrape to be seen waiting on the lock.
    args = ["--database.url", platform.exporter_url, "--ttl", "5", "--deadline", "4"]
    try:
        with exporter_process(args, tmp_path) as process:
            async with httpx.AsyncClient(base_url=process.url, timeout=10) as client:
                assert (await client.get("/-/healthy")).status_code == 200
                assert await platform.exporter_sessions() == 0  # nothing measured before the first scrape
                await locker.execute('BEGIN; LOCK TABLE "tenant_acme".evento_dead_letter IN ACCESS EXCLUSIVE MODE')
                scrape = asyncio.create_task(client.get("/metrics"))
                assert await wait_until(platform.exporter_waiting_on_a_lock, 5), "the scrape never reached the lock"
                assert not scrape.done()
                stopped_at = time.monotonic()
                process.process.send_signal(signal.SIGTERM)
                response = await scrape
                returncode = await asyncio.to_thread(process.process.wait, 10)
                elapsed = time.monotonic() - stopped_at
            log = process.log()
        assert returncode == 0, log
        assert elapsed < 5, f"took {elapsed:.1f}s to stop"
        assert response.status_code == 200
        assert b'orpycamcp_signal_measured{signal="dlq"} 0' in response.content
        assert b'orpycamcp_signal_measured{signal="audit_chain"} 1' in response.content
        await locker.execute("ROLLBACK")
        assert await platform.exporter_sessions() == 0
    finally:
        await locker.close()


async def exporter_backends(platform: Platform, state: str = "") -> int:
    rows = await platform.fetch(
        "SELECT count(*) AS n FROM pg_stat_activity WHERE usename = $1 AND datname = $2"
        " AND ($3 = '' OR wait_event = $3)",
        EXPORTER_ROLE,
        platform.database,
        state,
    )
    count: int = rows[0]["n"]
    return count


async def exporter_redis_clients(client: Redis) -> int:
    clients = await client.client_list()
    return sum(
        1
        for one in clients
        if one.get("name")
        == RedisSettings(url="", replica_max_staleness=60, sentinel_majority="configured").client_name
    )


async def test_sigterm_during_a_measurement_leaves_no_backend_and_no_redis_client(
    platform: Platform, redis: RedisServer, tmp_path: Path
) -> None:
    await platform.add_tenant("acme")
    await platform.put_dead_letters_to_sleep("acme")
    # The deadline (and so the statement timeout) far beyond the check: only the shutdown can end the statement.
    args = ["--database.url", platform.exporter_url, "--redis.url", redis.url, "--ttl", "60", "--deadline", "40"]
    client = Redis.from_url(redis.url, decode_responses=True)
    try:
        with exporter_process(args, tmp_path) as process:
            async with httpx.AsyncClient(base_url=process.url, timeout=10) as http:
                # Prometheus' scrape timeout of 1 s: the page answers, the measurement goes on.
                response = await http.get("/metrics", headers={"X-Prometheus-Scrape-Timeout-Seconds": "1"})
                assert response.status_code == 200
            assert await wait_until(lambda: some(exporter_backends(platform, "PgSleep")), 10), "no statement in flight"
            assert await exporter_redis_clients(client) >= 1
            process.process.send_signal(signal.SIGTERM)
            end = time.monotonic() + SHUTDOWN_SECONDS
            backends_gone = await wait_until(lambda: none(exporter_backends(platform)), end - time.monotonic())
            clients_gone = await wait_until(lambda: none(exporter_redis_clients(client)), end - time.monotonic())
            returncode = await asyncio.to_thread(process.process.wait, max(end - time.monotonic(), 0.1))
            log = process.log()
        assert backends_gone, f"{await exporter_backends(platform)} backends of the exporter left\n{log}"
        assert clients_gone, f"{await exporter_redis_clients(client)} Redis clients of the exporter left\n{log}"
        assert returncode == 0, log
        assert "Traceback" not in log, log
    finally:
        await client.aclose()


async def none(count: Awaitable[int]) -> bool:
    return await count == 0


async def some(count: Awaitable[int]) -> bool:
    return await count > 0


# serve() with uvicorn.Server.run signalled first: a SIGTERM after the exporter's
# own handlers are in place and before uvicorn installs its.
SIGNALLED_BEFORE_UVICORN = """
import os, signal, sys
import uvicorn
from exporter.cli import main
run = uvicorn.Server.run
def signalled_first(self, sockets=None):
    os.kill(os.getpid(), signal.SIGTERM)
    return run(self, sockets=sockets)
uvicorn.Server.run = signalled_first
sys.exit(main(sys.argv[1:]))
"""


def test_a_sigterm_while_starting_stops_the_exporter_with_0() -> None:
    command = [sys.executable, "-c", SIGNALLED_BEFORE_UVICORN, "serve", "--redis.url", "redis://127.0.0.1:1/0"]
    command += ["--web.listen-address", f"127.0.0.1:{free_port()}"]
    try:
        result = subprocess.run(command, capture_output=True, text=True, timeout=30, check=False)
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"SIGTERM while starting did not stop the exporter: {exc.output}")
    assert result.returncode == 0, result.stderr
    assert "stopped by signal SIGTERM" in result.stderr


@pytest.mark.parametrize("delay_ms", [0, 2, 5, 10, 20, 40])
def test_sigterm_while_the_server_starts_stops_it(delay_ms: int) -> None:
    """A SIGTERM between the start-up line and uvicorn taking the signals is not lost:
    the server stops once started instead of serving on."""
    command = [sys.executable, "-m", "exporter", "serve", "--database.url", "postgresql://u:p@127.0.0.1:1/db"]
    command += ["--web.listen-address", "127.0.0.1:0"]
    with subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True) as process:
        assert process.stdout is not None
        for line in process.stdout:
            if "serving signals" in line:
                break
        time.sleep(delay_ms / 1000)
        process.send_signal(signal.SIGTERM)
        try:
            output, _ = process.communicate(timeout=SHUTDOWN_SECONDS * 3)
        except subprocess.TimeoutExpired:
            process.kill()
            output, _ = process.communicate()
            pytest.fail(f"still serving after SIGTERM:\n{output}")
    # 0 once the handlers are in place; killed by the signal's default action before.
    assert process.returncode in (0, -signal.SIGTERM), output
