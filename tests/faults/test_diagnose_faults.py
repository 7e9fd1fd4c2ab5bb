"""`diagnose` under every fault of the fault matrix: no traceback, exactly one
status line per enabled signal, the reason of each failure, exit code 1 when
anything fails. Real servers, stopped, paused, locked, revoked and dropped."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from collections.abc import Awaitable, Callable

import asyncpg
import pytest

from devkit.servers import PostgresServer, RedisServer
from tests.faults.kit import StallProxy
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform

pytestmark = pytest.mark.anyio

SIGNALS = ("dlq", "preservation", "audit_chain", "streams")


async def diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "diagnose", "--deadline", "2", "--ttl", "5", *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=90)


def status_lines(done: subprocess.CompletedProcess[str], signals: tuple[str, ...]) -> dict[str, str]:
    """Each signal's one status line; asserts that there is exactly one and no traceback."""
    output = done.stdout + done.stderr
    assert "Traceback" not in output, output
    lines: dict[str, str] = {}
    for line in done.stdout.splitlines():
        for signal in signals:
            if line.startswith((f"ok   {signal}:", f"FAIL {signal}:")):
                assert signal not in lines, f"two lines for {signal}:\n{output}"
                lines[signal] = line
    assert set(lines) == set(signals), output
    return lines


async def seeded(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


Fault = Callable[[Platform, PostgresServer, RedisServer], Awaitable[str]]


async def tenants_revoked(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    await platform.execute("REVOKE SELECT ON public.tenants FROM orpycamcp_exporter")
    return platform.exporter_url


async def tenants_dropped(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    await platform.execute("DROP TABLE public.tenants CASCADE")
    return platform.exporter_url


async def wrong_password(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    return platform.exporter_url.replace(EXPORTER_PASSWORD, "Not-The-Password-77")


async def server_stopped(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    server.stop()
    return platform.exporter_url


async def unknown_host(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    return f"postgresql://orpycamcp_exporter:{EXPORTER_PASSWORD}@no-such-host.invalid:5432/{platform.database}"


async def table_dropped(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    await platform.execute('DROP TABLE "tenant_acme".preservation_retry')
    return platform.exporter_url


async def grant_revoked(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    await platform.execute('REVOKE SELECT ON "tenant_acme".evento_dead_letter FROM orpycamcp_exporter')
    return platform.exporter_url


async def audit_runs_dropped(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    await platform.execute("DROP TABLE public.audit_chain_runs")
    return platform.exporter_url


async def unknown_database(platform: Platform, server: PostgresServer, redis: RedisServer) -> str:
    return platform.exporter_url.rsplit("/", 1)[0] + "/no_such_database"


FAULTS: dict[str, tuple[Fault, dict[str, str]]] = {
    "public.tenants unreadable": (
        tenants_revoked,
        {"dlq": "tenant_list_unreadable", "preservation": "tenant_list_unreadable"},
    ),
    "public.tenants missing": (
        tenants_dropped,
        {"dlq": "tenant_list_unreadable", "preservation": "tenant_list_unreadable"},
    ),
    "wrong password": (
        wrong_password,
        {s: "authentication_failed" for s in ("dlq", "preservation", "audit_chain")},
    ),
    "server stopped": (server_stopped, {s: "connection_error" for s in ("dlq", "preservation", "audit_chain")}),
    "unknown host": (unknown_host, {s: "connection_error" for s in ("dlq", "preservation", "audit_chain")}),
    "unknown database": (unknown_database, {s: "connection_error" for s in ("dlq", "preservation", "audit_chain")}),
    "a tenant table dropped": (table_dropped, {"preservation": "missing_table"}),
    "a tenant grant revoked": (grant_revoked, {"dlq": "permission_denied"}),
    "audit_chain_runs missing": (audit_runs_dropped, {"audit_chain": "missing_table"}),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_diagnose_reports_every_signal_under_each_fault(
    own_pg: PostgresServer, streams_redis: RedisServer, fault: str
) -> None:
    inject, failing = FAULTS[fault]
    platform = await create_platform(own_pg)
    await seeded(platform)
    url = await inject(platform, own_pg, streams_redis)
    done = await diagnose("--database-url", url, "--redis-url", streams_redis.url)
    lines = status_lines(done, SIGNALS)
    assert done.returncode == 1, done.stdout
    for signal, line in lines.items():
        if signal in failing:
            assert line.startswith(f"FAIL {signal}: not measurable: {failing[signal]}:"), done.stdout
        else:
            assert line.startswith(f"ok   {signal}:"), done.stdout
    assert EXPORTER_PASSWORD not in done.stdout + done.stderr


async def test_an_unreadable_tenant_list_has_its_own_hint(own_pg: PostgresServer) -> None:
    platform = await create_platform(own_pg)
    await seeded(platform)
    await platform.execute("REVOKE SELECT ON public.tenants FROM orpycamcp_exporter")
    done = await diagnose("--database-url", platform.exporter_url)
    status_lines(done, ("dlq", "preservation", "audit_chain"))
    assert "GRANT SELECT ON public.tenants TO orpycamcp_exporter" in done.stdout
    assert "orpycamcp_grant_tenant" not in done.stdout  # the per-tenant grant would not help
    assert "first failing tenant" not in done.stdout


async def test_a_locked_table_and_a_stalled_network_are_named(
    own_pg: PostgresServer, streams_redis: RedisServer
) -> None:
    platform = await create_platform(own_pg)
    await seeded(platform)
    locker = await asyncpg.connect(platform.admin_url)
    proxy = StallProxy(own_pg.port)
    await proxy.start()
    try:
        await locker.execute('BEGIN; LOCK TABLE "tenant_acme".evento_dead_letter IN ACCESS EXCLUSIVE MODE')
        locked = await diagnose("--database-url", platform.exporter_url, "--redis-url", streams_redis.url)
        lines = status_lines(locked, SIGNALS)
        assert lines["dlq"].startswith("FAIL dlq: not measurable: lock_timeout"), locked.stdout
        assert lines["preservation"].startswith("ok   preservation:")
        await locker.execute("ROLLBACK")
        proxy.stall()
        stalled_url = platform.exporter_url.replace(f":{own_pg.port}/", f":{proxy.port}/")
        stalled = await diagnose("--database-url", stalled_url, "--redis-url", streams_redis.url)
        lines = status_lines(stalled, SIGNALS)
        assert stalled.returncode == 1
        for signal in ("dlq", "preservation", "audit_chain"):
            assert lines[signal].startswith(f"FAIL {signal}: not measurable: timeout"), stalled.stdout
        assert lines["streams"].startswith("ok   streams:")
    finally:
        proxy.resume()
        await proxy.close()
        await locker.close()


async def test_redis_down_is_a_line_for_streams(platform: Platform, own_redis: RedisServer) -> None:
    await seeded(platform)
    own_redis.stop()
    done = await diagnose("--database-url", platform.exporter_url, "--redis-url", own_redis.url)
    lines = status_lines(done, SIGNALS)
    assert done.returncode == 1
    assert lines["streams"].startswith("FAIL streams: not measurable: connection_error"), done.stdout
