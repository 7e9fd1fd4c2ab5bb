"""`diagnose`, `check-config` and `metrics` as an operator runs them."""

from __future__ import annotations

import socket
import subprocess
import sys

import pytest

from exporter.tools.reference import metrics_table
from tests.platform import Platform, at

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


def test_a_missing_socket_directory_is_named() -> None:
    done = run("diagnose", "--database-url", "postgresql://u@/db?host=/no/such/dir", "--deadline", "2")
    assert done.returncode == 1
    assert "no socket at /no/such/dir/.s.PGSQL.5432" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_busy_listen_address_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        for command in ("serve", "demo"):
            done = run(
                command,
                "--database-url",
                "postgresql://u:p@127.0.0.1:9/db",
                "--web.listen-address",
                f"127.0.0.1:{port}",
            )
            assert done.returncode == 2, done.stderr
            assert done.stderr.strip().splitlines() == [
                f"orpycamcp-exporter: cannot listen on 127.0.0.1:{port}: the address is already in use"
                " (set another with --web.listen-address)"
            ]
            assert "demo exporter" not in done.stdout + done.stderr


def test_a_mistyped_option_shows_the_commands_usage() -> None:
    done = run("serve", "--databse-url", "postgresql://u@h/db")
    assert done.returncode == 2
    assert done.stderr.startswith("usage: orpycamcp-exporter serve ")
    assert "unrecognized arguments: --databse-url" in done.stderr


def test_ipv6_addresses_are_shown_in_brackets() -> None:
    done = run("check-config", "--database-url", "postgresql://u@h/db", "--web.listen-address", "[::1]:9874")
    assert done.returncode == 0
    assert "on [::1]:9874" in done.stdout
