"""SIGTERM: the scrape in flight finishes, connections close, exit 0 quickly."""

from __future__ import annotations

import asyncio
import signal
import time
from pathlib import Path

import asyncpg
import httpx
import pytest

from devkit.process import exporter_process
from tests.platform import Platform
from tests.waits import wait_until

pytestmark = pytest.mark.anyio


async def test_sigterm_lets_the_scrape_in_flight_finish_and_exits_0(platform: Platform, tmp_path: Path) -> None:
    await platform.add_tenant("acme")
    locker = await asyncpg.connect(platform.admin_url)
    # lock_timeout is a quarter of the deadline: 1 s for the scrape to be seen waiting on the lock.
    args = ["--database-url", platform.exporter_url, "--ttl", "5", "--deadline", "4"]
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
