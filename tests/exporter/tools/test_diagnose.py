"""`diagnose`, `check-config` and `metrics` as an operator runs them."""

from __future__ import annotations

import contextlib
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from devkit.backlogs import pending_only
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
    done = run("diagnose", "--database.url", platform.exporter_url)
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
    done = run("diagnose", "--database.url", platform.exporter_url)
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
    done = run("diagnose", "--database.url", platform.exporter_url, "--signals", "dlq")
    assert done.returncode == 1
    assert "permission_denied" in done.stdout
    assert "orpycamcp_grant_tenant" in done.stdout


def test_unreachable_database() -> None:
    done = run("diagnose", "--database.url", "postgresql://u:topsecret@127.0.0.1:9/db", "--deadline", "2")
    assert done.returncode == 1
    assert "connection_error" in done.stdout
    assert "topsecret" not in done.stdout + done.stderr
    assert "postgresql://***@127.0.0.1:9/db" in done.stdout


def test_check_config() -> None:
    good = run("check-config", "--database.url", "postgresql://u:p@h/db", "--ttl", "60")
    assert good.returncode == 0
    assert "configuration valid" in good.stdout
    bad = run("check-config", "--database.url", "postgresql://u:p@h/db", "--ttl", "-1")
    assert bad.returncode == 2
    assert "--ttl" in bad.stderr


def test_metrics_prints_the_registry_table() -> None:
    done = run("metrics")
    assert done.returncode == 0
    assert done.stdout == metrics_table()


def test_a_missing_socket_directory_is_named() -> None:
    done = run("diagnose", "--database.url", "postgresql://u@/db?host=/no/such/dir", "--deadline", "2")
    assert done.returncode == 1
    assert "socket /no/such/dir/.s.PGSQL.5432: socket directory /no/such/dir does not exist" in done.stdout
    assert "Traceback" not in done.stdout + done.stderr


def test_a_busy_listen_address_is_one_line_and_exit_2() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen()
        port = taken.getsockname()[1]
        # The demo reads its own servers: it is given no URL.
        for command, url in (("serve", ("--database.url", "postgresql://u:p@127.0.0.1:9/db")), ("demo", ())):
            done = run(command, *url, "--web.listen-address", f"127.0.0.1:{port}")
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
    done = run("check-config", "--database.url", "postgresql://u@h/db", "--web.listen-address", "[::1]:9874")
    assert done.returncode == 0
    assert "on [::1]:9874" in done.stdout


KYC = pending_only("kyc_dead_letters")


async def test_a_backlog_value_outside_its_groups_is_named_with_its_tenant(platform: Platform, tmp_path: Path) -> None:
    for slug in ("acme", "globex"):
        await platform.add_tenant(slug)
        await platform.add_dead_letter_queue(slug)
    await platform.add_dead_letter_task("acme", "face_match", "pending", at("2026-11-01 00:00:00"))
    await platform.add_dead_letter_task("globex", "billing_sync", "pending", at("2026-11-01 00:00:00"))
    path = tmp_path / "backlogs.yml"
    path.write_text(KYC)
    done = run("diagnose", "--database.url", platform.exporter_url, "--backlogs.config-file", str(path))
    assert done.returncode == 1
    assert "ok   dlq" in done.stdout
    assert "FAIL kyc_dead_letters: not measurable: unregistered_value" in done.stdout
    assert "first failing tenant: 'globex' (unregistered_value" in done.stdout
    assert "group='billing_sync'" in done.stdout
    assert "its `groups`" in done.stdout


async def test_a_whole_table_scan_for_a_backlog_is_warned_about(platform: Platform, tmp_path: Path) -> None:
    for slug in ("acme", "globex"):
        await platform.add_tenant(slug)
        await platform.add_dead_letter_queue(slug)
    # globex's table is the large one: its branch is the one explained.
    await platform.execute(
        "INSERT INTO tenant_globex.dead_letter_queue (task_name, status, created_at)"
        " SELECT 'face_match', CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'reprocessed' END, now()"
        " FROM generate_series(1, 8000) AS i"
    )
    await platform.execute("ANALYZE tenant_globex.dead_letter_queue")
    path = tmp_path / "backlogs.yml"
    path.write_text(KYC)
    args = ("diagnose", "--database.url", platform.exporter_url, "--backlogs.config-file", str(path))
    done = run(*args)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   kyc_dead_letters: measurable" in done.stdout
    assert "warn kyc_dead_letters: the planner reads all of tenant_globex.dead_letter_queue (~8,000 rows" in done.stdout
    assert 'CREATE INDEX ON "tenant_globex"."dead_letter_queue" ("status", "task_name", "created_at")' in done.stdout

    # With the index it suggests, the plan reads the pending rows only: no warning.
    await platform.execute("CREATE INDEX ON tenant_globex.dead_letter_queue (status, task_name, created_at)")
    await platform.execute("ANALYZE tenant_globex.dead_letter_queue")
    indexed = run(*args)
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    assert "warn" not in indexed.stdout


def test_metrics_shows_the_declared_families_given_a_file() -> None:
    example = Path(__file__).resolve().parents[3] / "deploy" / "backlogs.example.yml"
    done = run("metrics", "--backlogs.config-file", str(example))
    assert done.returncode == 0, done.stderr
    # The built-in families unchanged, but for the streams families, which the example's streams extend.
    builtin = [row for row in metrics_table().splitlines() if "| meta |" not in row and "| streams |" not in row]
    assert all(row in done.stdout.splitlines() for row in builtin)
    deadletter = next(
        row for row in done.stdout.splitlines() if row.startswith("| `orpycamcp_deadletter_stream_entries`")
    )
    assert "`orpycamcp.notification.deadletter`, `orpycamcp.billing.deadletter`" in deadletter
    for backlog in ("kyc_dead_letters", "outbox"):
        assert f"| `orpycamcp_backlog_pending_items` | gauge | {backlog} |" in done.stdout
    assert (
        "| `orpycamcp_backlog_oldest_pending_timestamp_seconds` | gauge | outbox |"
        " `backlog` ∈ `outbox`<br>`group` ∈ `0`, `1`, `2`, `3`" in done.stdout
    )
    assert (
        "`signal` ∈ `dlq`, `preservation`, `audit_chain`, `migration_lock`, `housekeeping`, `streams`,"
        " `kyc_dead_letters`, `outbox`" in done.stdout
    )


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
async def test_the_connection_path_is_checked_against_the_pool_mode(
    platform: Platform, pg_server: PostgresServer, pooler: str | None, mode: str, code: int, says: str
) -> None:
    await platform.add_tenant("acme")
    with contextlib.ExitStack() as stack:
        url = platform.exporter_url
        if pooler is not None:
            bouncer = stack.enter_context(pgbouncer_server(pg_server.port, pooler, {EXPORTER_ROLE: EXPORTER_PASSWORD}))
            url = bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
        done = run("diagnose", "--database.url", url, "--database.pool-mode", mode, "--signals", "dlq,audit_chain")
    assert done.returncode == code, done.stdout + done.stderr
    assert says in done.stdout
    if code == 1:
        assert "set --database.pool-mode transaction" in done.stdout
        # Nothing is measured through a connection path that does not fit the pool mode.
        assert "ok   " not in done.stdout
        assert "FAIL dlq: not measurable: transaction_pooler" in done.stdout
    assert EXPORTER_PASSWORD not in done.stdout + done.stderr


async def test_a_hostile_slug_in_a_server_error_forges_no_line(platform: Platform) -> None:
    forged = "evil\nok   dlq: measurable (FAKE)\x1b[2J"
    await platform.add_tenant("acme")
    await platform.add_tenant(forged)
    await platform.execute(f'DROP TABLE "tenant_{forged}".evento_dead_letter')
    done = run("diagnose", "--database.url", platform.exporter_url, "--signals", "dlq")
    assert done.returncode == 1
    assert "FAIL dlq: not measurable: missing_table" in done.stdout
    assert not any(line.startswith("ok   dlq") for line in done.stdout.splitlines())
    assert "\x1b" not in done.stdout
    assert "evil\\nok   dlq: measurable (FAKE)\\x1b[2J" in done.stdout


async def test_every_undeclared_value_is_listed_with_its_count_in_one_run(platform: Platform) -> None:
    long_group = "z" * 4096
    undeclared = {"billing-service": 3, "ledger-service": 2, long_group: 1}
    for index, (group, count) in enumerate(undeclared.items()):
        slug = f"t{index}"
        await platform.add_tenant(slug)
        for row in range(count):
            await platform.add_dead_letter(slug, f"e{row}", group, "pending", at("2026-11-01 00:00:00"))
    done = run("diagnose", "--database.url", platform.exporter_url, "--signals", "dlq")
    assert done.returncode == 1
    line = next(line for line in done.stdout.splitlines() if line.startswith("FAIL dlq"))
    assert "3 combinations outside the registry" in line
    assert "origin_group='billing-service': 3" in line
    assert "origin_group='ledger-service': 2" in line
    assert "(4,098 characters): 1" in line
    # The contract check lists them too, the long one shortened as well.
    assert (
        "warn dlq: evento_dead_letter.origin_group holds 3 values outside groups in the pending rows:"
        " 'billing-service' 3 rows, 'ledger-service' 2 rows, 'zzz"
    ) in done.stdout
    assert "... (4,098 characters) 1 row" in done.stdout
    assert long_group not in done.stdout
