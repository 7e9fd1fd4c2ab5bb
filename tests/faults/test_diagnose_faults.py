"""`diagnose` under every fault of the fault matrix: no traceback, exactly one
status line per enabled signal, the reason of each failure, exit code 1 when
anything fails. Real servers, stopped, paused, locked, revoked and dropped."""

from __future__ import annotations

import asyncio
import re
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


def assert_statuses(done: subprocess.CompletedProcess[str], failing: dict[str, str]) -> None:
    """Exit code 1, each signal of `failing` unmeasured for its reason, every other one measured."""
    assert done.returncode == 1, done.stdout
    for signal, line in status_lines(done, SIGNALS).items():
        if signal in failing:
            assert re.match(rf"FAIL {signal}: not measurable: {failing[signal]}\b", line), done.stdout
        else:
            assert line.startswith(f"ok   {signal}:"), done.stdout
    assert EXPORTER_PASSWORD not in done.stdout + done.stderr


async def seeded(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


# A fault changes the platform (or its server) and gives the URL diagnose is to read it by.
Fault = Callable[[Platform, PostgresServer], Awaitable[str]]


def executes(sql: str) -> Fault:
    """The platform's owner runs `sql`; the exporter's URL stays."""

    async def inject(platform: Platform, server: PostgresServer) -> str:
        await platform.execute(sql)
        return platform.exporter_url

    return inject


def reads_by(url: Callable[[Platform], str]) -> Fault:
    """Nothing changes but the URL the exporter is given."""

    async def inject(platform: Platform, server: PostgresServer) -> str:
        return url(platform)

    return inject


async def server_stopped(platform: Platform, server: PostgresServer) -> str:
    server.stop()
    return platform.exporter_url


REVOKE_TENANTS = "REVOKE SELECT ON public.tenants FROM orpycamcp_exporter"
POSTGRES_SIGNALS = ("dlq", "preservation", "audit_chain")
TENANT_LIST_UNREADABLE = {"dlq": "tenant_list_unreadable", "preservation": "tenant_list_unreadable"}


def every_postgres_signal(reason: str) -> dict[str, str]:
    return dict.fromkeys(POSTGRES_SIGNALS, reason)


FAULTS: dict[str, tuple[Fault, dict[str, str]]] = {
    "public.tenants unreadable": (executes(REVOKE_TENANTS), TENANT_LIST_UNREADABLE),
    "public.tenants missing": (executes("DROP TABLE public.tenants CASCADE"), TENANT_LIST_UNREADABLE),
    "wrong password": (
        reads_by(lambda platform: platform.exporter_url.replace(EXPORTER_PASSWORD, "Not-The-Password-77")),
        every_postgres_signal("authentication_failed"),
    ),
    "server stopped": (server_stopped, every_postgres_signal("connection_error")),
    "unknown host": (
        reads_by(
            lambda platform: (
                f"postgresql://orpycamcp_exporter:{EXPORTER_PASSWORD}@no-such-host.invalid:5432/" + platform.database
            )
        ),
        every_postgres_signal("connection_error"),
    ),
    "unknown database": (
        reads_by(lambda platform: platform.exporter_url.rsplit("/", 1)[0] + "/no_such_database"),
        every_postgres_signal("connection_error"),
    ),
    "a tenant table dropped": (
        executes('DROP TABLE "tenant_acme".preservation_retry'),
        {"preservation": "missing_table"},
    ),
    "a tenant grant revoked": (
        executes('REVOKE SELECT ON "tenant_acme".evento_dead_letter FROM orpycamcp_exporter'),
        {"dlq": "permission_denied"},
    ),
    "audit_chain_runs missing": (executes("DROP TABLE public.audit_chain_runs"), {"audit_chain": "missing_table"}),
}


@pytest.mark.parametrize("fault", list(FAULTS))
async def test_diagnose_reports_every_signal_under_each_fault(
    own_pg: PostgresServer, streams_redis: RedisServer, fault: str
) -> None:
    inject, failing = FAULTS[fault]
    platform = await create_platform(own_pg)
    await seeded(platform)
    url = await inject(platform, own_pg)
    assert_statuses(await diagnose("--database.url", url, "--redis.url", streams_redis.url), failing)


async def test_an_unreadable_tenant_list_has_its_own_hint(own_pg: PostgresServer) -> None:
    platform = await create_platform(own_pg)
    await seeded(platform)
    await platform.execute(REVOKE_TENANTS)
    done = await diagnose("--database.url", platform.exporter_url)
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
        locked = await diagnose("--database.url", platform.exporter_url, "--redis.url", streams_redis.url)
        assert_statuses(locked, {"dlq": "lock_timeout"})
        await locker.execute("ROLLBACK")
        proxy.stall()
        stalled_url = platform.exporter_url.replace(f":{own_pg.port}/", f":{proxy.port}/")
        stalled = await diagnose("--database.url", stalled_url, "--redis.url", streams_redis.url)
        assert_statuses(stalled, every_postgres_signal("timeout"))
    finally:
        proxy.resume()
        await proxy.close()
        await locker.close()


async def test_redis_down_is_a_line_for_streams(platform: Platform, own_redis: RedisServer) -> None:
    await seeded(platform)
    own_redis.stop()
    done = await diagnose("--database.url", platform.exporter_url, "--redis.url", own_redis.url)
    assert_statuses(done, {"streams": "connection_error"})
