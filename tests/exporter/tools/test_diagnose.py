"""`diagnose`, `check-config` and `metrics` as an operator runs them."""

from __future__ import annotations

import contextlib
import subprocess
import sys

import pytest

from devkit.pgbouncer import pgbouncer_server
from devkit.servers import PostgresServer
from exporter.tools.demo import EXPORTER_ROLE
from exporter.tools.reference import metrics_table
from tests.platform import EXPORTER_PASSWORD, Platform, at

pytestmark = pytest.mark.anyio


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


async def test_healthy_database_exits_0(platform: Platform) -> None:
    await platform.add_tenant("acme")
    done = run("diagnose", "--database-url", platform.exporter_url)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "1 active tenants" in done.stdout
    for signal in ("dlq", "preservation", "audit_chain"):
        assert f"ok   {signal}: measurable" in done.stdout
    assert "exporter-secret" not in done.stdout + done.stderr


async def test_broken_tenant_is_named_with_a_hint(platform: Platform) -> None:
    for slug in ("acme", "globex", "initech"):
        await platform.add_tenant(slug)
    await platform.execute('DROP TABLE "tenant_globex".preservation_retry')
    await platform.add_dead_letter("initech", "e1", "billing-service", "pending", at("2026-11-01 00:00:00"))
    done = run("diagnose", "--database-url", platform.exporter_url)
    assert done.returncode == 1
    assert "ok   audit_chain" in done.stdout
    assert "FAIL preservation: not measurable: missing_table" in done.stdout
    assert "first failing tenant: 'globex' (missing_table" in done.stdout
    assert "FAIL dlq: not measurable: unregistered_value" in done.stdout
    assert "first failing tenant: 'initech' (unregistered_value" in done.stdout
    assert "billing-service" in done.stdout


async def test_missing_grant_is_named(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.execute('REVOKE SELECT ON "tenant_acme".evento_dead_letter FROM orpycamcp_exporter')
    done = run("diagnose", "--database-url", platform.exporter_url, "--signals", "dlq")
    assert done.returncode == 1
    assert "permission_denied" in done.stdout
    assert "orpycamcp_grant_tenant" in done.stdout


def test_unreachable_database() -> None:
    done = run("diagnose", "--database-url", "postgresql://u:topsecret@127.0.0.1:9/db", "--deadline", "2")
    assert done.returncode == 1
    assert "connection_error" in done.stdout
    assert "topsecret" not in done.stdout + done.stderr
    assert "u:***@" in done.stdout


def test_check_config() -> None:
    good = run("check-config", "--database-url", "postgresql://u:p@h/db", "--ttl", "60")
    assert good.returncode == 0
    assert "configuration valid" in good.stdout
    bad = run("check-config", "--database-url", "postgresql://u:p@h/db", "--ttl", "-1")
    assert bad.returncode == 2
    assert "--ttl" in bad.stderr


def test_metrics_prints_the_registry_table() -> None:
    done = run("metrics")
    assert done.returncode == 0
    assert done.stdout == metrics_table()


@pytest.mark.parametrize(
    ("pooler", "mode", "code", "says"),
    [
        (None, "session", 0, "pool mode session: connections keep their server session"),
        ("session", "session", 0, "pool mode session: connections keep their server session"),
        ("transaction", "session", 1, "FAIL pool mode session, but a transaction pooler is in front"),
        ("transaction", "transaction", 0, "pool mode transaction: a transaction pooler is in front"),
        (None, "transaction", 0, "--database.pool-mode session would plan each batch statement once"),
    ],
    ids=[
        "direct-session",
        "session-pooler-session",
        "transaction-pooler-session",
        "transaction-pooler-transaction",
        "direct-transaction",
    ],
)
async def test_the_road_is_checked_against_the_pool_mode(
    platform: Platform, pg_server: PostgresServer, pooler: str | None, mode: str, code: int, says: str
) -> None:
    await platform.add_tenant("acme")
    with contextlib.ExitStack() as stack:
        url = platform.exporter_url
        if pooler is not None:
            bouncer = stack.enter_context(pgbouncer_server(pg_server.port, pooler, {EXPORTER_ROLE: EXPORTER_PASSWORD}))
            url = bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
        done = run("diagnose", "--database-url", url, "--database.pool-mode", mode, "--signals", "dlq,audit_chain")
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout
    if code == 1:
        assert "set --database.pool-mode transaction" in done.stdout
    assert EXPORTER_PASSWORD not in done.stdout + done.stderr
