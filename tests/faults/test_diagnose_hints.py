"""Each hint `diagnose` gives, provoked for real: the operator is sent the right
way for a role without CONNECT, PgBouncer up with its server down, statement
pooling, session pool mode through a transaction pooler, and a slow tenant."""

from __future__ import annotations

import asyncio
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.pgbouncer import pgbouncer_server
from devkit.servers import PostgresServer
from exporter.reasons import Reason
from exporter.tools.demo import EXPORTER_ROLE
from exporter.tools.hints import hint
from exporter.tools.reach import NO_SESSION_HINT
from exporter.tools.throwaway import free_port
from tests.platform import EXPORTER_PASSWORD, Platform, at
from tests.scrapes import DATABASE_SIGNALS

pytestmark = pytest.mark.anyio

POSTGRES_SIGNALS = DATABASE_SIGNALS
LOCKS = "look for locks"


async def diagnose(*args: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "diagnose", "--deadline", "2", "--ttl", "5", *args]
    return await asyncio.to_thread(subprocess.run, command, capture_output=True, text=True, timeout=120)


def status_lines(done: subprocess.CompletedProcess[str]) -> dict[str, str]:
    """Each PostgreSQL signal's one status line."""
    assert "Traceback" not in done.stdout + done.stderr, done.stdout + done.stderr
    lines: dict[str, str] = {}
    for line in done.stdout.splitlines():
        for signal in POSTGRES_SIGNALS:
            if line.startswith((f"ok   {signal}:", f"FAIL {signal}:")):
                assert signal not in lines, done.stdout
                lines[signal] = line
    assert set(lines) == set(POSTGRES_SIGNALS), done.stdout
    return lines


def assert_every_signal_fails_for(done: subprocess.CompletedProcess[str], reason: Reason) -> None:
    assert done.returncode == 1, done.stdout + done.stderr
    for signal, line in status_lines(done).items():
        assert line.startswith(f"FAIL {signal}: not measurable: {reason}: "), done.stdout
    # Every message on one line: a status line is followed by its hint, nothing in between.
    lines = done.stdout.splitlines()
    for index, line in enumerate(lines):
        if line.startswith(("  cannot connect:", "FAIL ")):
            assert lines[index + 1].lstrip().startswith("hint:"), done.stdout


async def seeded(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


async def test_a_role_without_connect_is_told_to_grant_connect(platform: Platform) -> None:
    await seeded(platform)
    await platform.execute(f"REVOKE CONNECT ON DATABASE {platform.database} FROM PUBLIC, orpycamcp_exporter")
    done = await diagnose("--database.url", platform.exporter_url)
    assert_every_signal_fails_for(done, Reason.CONNECT_NOT_GRANTED)
    assert f"may not connect to database '{platform.database}' (no CONNECT privilege)" in done.stdout
    assert "GRANT CONNECT ON DATABASE" in done.stdout
    assert "GRANT CONNECT ON DATABASE" in hint(Reason.CONNECT_NOT_GRANTED)
    for wrong in ("orpycamcp_grant_tenant", "GRANT SELECT", "tenant_list_unreadable", "permission_denied"):
        assert wrong not in done.stdout


async def test_pgbouncer_up_with_its_server_down_says_so(platform: Platform) -> None:
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(free_port(), "transaction", users) as bouncer:  # nothing listens behind it
        url = bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
        done = await diagnose("--database.url", url, "--database.pool-mode", "transaction")
    assert_every_signal_fails_for(done, Reason.TIMEOUT)
    assert f"127.0.0.1:{bouncer.port} accepts connections but gave no session within 2 s" in done.stdout
    assert f"hint: {NO_SESSION_HINT}" in done.stdout
    assert "server behind a pooler (PgBouncer) is down" in NO_SESSION_HINT
    assert LOCKS not in done.stdout
    # The signals are not measured again through a connection path that gave no session.
    assert done.stdout.count("accepts connections but gave no session") == 1 + len(POSTGRES_SIGNALS)


async def test_statement_pooling_is_not_supported_and_says_what_to_use(
    platform: Platform, pg_server: PostgresServer
) -> None:
    await seeded(platform)
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(pg_server.port, "statement", users) as bouncer:
        url = bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
        for mode in ("session", "transaction"):
            done = await diagnose("--database.url", url, "--database.pool-mode", mode)
            assert_every_signal_fails_for(done, Reason.STATEMENT_POOLER)
            assert "not supported" in done.stdout
            assert "use transaction pooling (pool_mode = transaction) with --database.pool-mode transaction" in (
                done.stdout
            )
            assert "check host, port" not in done.stdout


async def test_session_mode_through_a_transaction_pooler_measures_nothing(
    platform: Platform, pg_server: PostgresServer
) -> None:
    await seeded(platform)
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(pg_server.port, "transaction", users) as bouncer:
        done = await diagnose("--database.url", bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database))
    assert "FAIL pool mode session, but a transaction pooler is in front of the database" in done.stdout
    assert_every_signal_fails_for(done, Reason.TRANSACTION_POOLER)
    assert "ok   " not in done.stdout
    # One line each: no driver advice pasted in.
    assert "NOTE: pgbouncer" not in done.stdout
    assert "statement_cache_size" not in done.stdout


async def test_a_slow_tenant_is_named(platform: Platform, tmp_path: Path) -> None:
    await seeded(platform)
    await platform.add_tenant("globex")
    await platform.add_tenant("initech")
    for slug, seconds in (("acme", 0), ("globex", 30), ("initech", 0)):
        await platform.execute(
            f"CREATE VIEW tenant_{slug}.jobs AS SELECT 'pending'::text AS status FROM pg_sleep({seconds})"
        )
        await platform.execute(f"GRANT SELECT ON tenant_{slug}.jobs TO orpycamcp_exporter")
    declared = tmp_path / "backlogs.yml"
    declared.write_text(
        "backlogs:\n  slow:\n    help: Slow to read.\n    scope: tenant\n    table: jobs\n"
        "    pending:\n      status: pending\n"
    )
    done = await diagnose(
        "--database.url", platform.exporter_url, "--backlogs.config-file", str(declared), "--signals", "slow"
    )
    assert done.returncode == 1, done.stdout + done.stderr
    assert "FAIL slow: not measurable: timeout: not complete within the 2 s deadline" in done.stdout
    assert "first failing tenant: 'globex' (timeout: not complete within the 2 s deadline)" in done.stdout
