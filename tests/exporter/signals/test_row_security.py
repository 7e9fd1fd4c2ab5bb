"""Row-level security never filters what the exporter counts: on every table
it reads, as the least-privilege role of exporter/contract/grants.sql, a table
row security would filter makes its signal unmeasured with `row_security`
naming the table (never a smaller number), and a BYPASSRLS role reads the
exact value."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path

import pytest

from devkit.backlogs import pending_only
from devkit.pgbouncer import pgbouncer_server
from devkit.servers import PostgresServer
from exporter.outcomes import classify
from exporter.reasons import Reason
from exporter.signals import BY_NAME
from exporter.sources.postgres.errors import RowSecurityRefused
from exporter.tools.demo import EXPORTER_ROLE
from tests.platform import EXPORTER_PASSWORD, Platform, at
from tests.scrapes import Page, make_exporter, scrape_once

pytestmark = pytest.mark.anyio

BACKLOG = "kyc_dead_letters"


@dataclass(frozen=True)
class Table:
    """A table the exporter reads, the signal that reads it, the one series whose exact
    value the fixture's data gives, and a policy that would hide some of its rows."""

    name: str
    signal: str
    series: tuple[str, dict[str, str]]
    exact: float
    policy: str


TABLES = [
    Table(
        '"tenant_acme".evento_dead_letter',
        "dlq",
        ("orpycamcp_dlq_pending_events", {"origin_group": "signature-service"}),
        3,
        "event_id = 'e1'",
    ),
    Table(
        '"tenant_acme".preservation_retry',
        "preservation",
        ("orpycamcp_preservation_exhausted_artifacts", {"artifact": "document", "phase": "sealing"}),
        3,
        "artifact_id = 'a1'",
    ),
    Table(
        "public.tenants",
        "dlq",
        ("orpycamcp_dlq_pending_events", {"origin_group": "signature-service"}),
        3,
        "slug = 'acme'",
    ),
    Table(
        "public.audit_chain_runs",
        "audit_chain",
        ("orpycamcp_audit_chain_breaks", {}),
        2,
        "scope = 'partial'",
    ),
    Table(
        '"tenant_acme".dead_letter_queue',
        BACKLOG,
        ("orpycamcp_backlog_pending_items", {"backlog": BACKLOG, "group": "face_match"}),
        3,
        "task_name <> 'face_match'",
    ),
]
# How row security is on: with a policy for the role, with none (every row
# hidden), forced on the owner too.
MODES = {
    "policy": "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY;"
    f" CREATE POLICY some_rows ON {{table}} FOR SELECT TO {EXPORTER_ROLE} USING ({{policy}})",
    "no-policy": "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY",
    "forced": "ALTER TABLE {table} ENABLE ROW LEVEL SECURITY; ALTER TABLE {table} FORCE ROW LEVEL SECURITY;"
    " CREATE POLICY some_rows ON {table} FOR SELECT USING ({policy})",
}


@pytest.fixture
async def seeded(platform: Platform) -> Platform:
    """Two tenants; the exact values of TABLES: 3 pending signature-service events, 3
    exhausted document/sealing artifacts, a complete audit run with 2 breaks, 3 face_match dead letters."""
    for slug in ("acme", "globex"):
        await platform.add_tenant(slug)
        await platform.add_dead_letter_queue(slug)
    await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter("acme", "e2", "signature-service", "pending", at("2026-11-02 10:00:00"))
    await platform.add_dead_letter("globex", "e1", "signature-service", "pending", at("2026-11-03 10:00:00"))
    await platform.add_dead_letter("globex", "e2", "knowledge-service", "pending", at("2026-11-03 10:00:00"))
    for slug, artifact_id in (("acme", "a1"), ("acme", "a2"), ("globex", "a1")):
        await platform.add_retry(slug, artifact_id, "document", "sealing", "exhausted")
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=2, declared_breaks=2)
    await platform.add_audit_run("partial", at("2026-11-03 00:00:00"), breaks=0, declared_breaks=0)
    for slug, count in (("acme", 2), ("globex", 1)):
        for _ in range(count):
            await platform.add_dead_letter_task(slug, "face_match", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter_task("acme", "ocr_extraction", "pending", at("2026-11-01 10:00:00"))
    return platform


async def page_of(url: str, tmp_path: Path) -> Page:
    backlogs = tmp_path / "backlogs.yml"
    backlogs.write_text(pending_only(BACKLOG))
    return await scrape_once(url, backlogs_config_file=str(backlogs))


def assert_refused(page: Page, table: Table) -> None:
    assert page.measured(table.signal) == 0
    assert page.failure_reasons(table.signal) == {"row_security"}
    family, labels = table.series
    assert page.get(family, **labels) is None
    assert page.family(family) == {}


def assert_exact(page: Page, table: Table) -> None:
    assert page.measured(table.signal) == 1
    family, labels = table.series
    assert page.get(family, **labels) == table.exact


@pytest.mark.parametrize("mode", list(MODES))
@pytest.mark.parametrize("table", TABLES, ids=[table.name.split(".")[-1] for table in TABLES])
async def test_a_table_row_security_would_filter_is_never_a_number(
    seeded: Platform, tmp_path: Path, table: Table, mode: str
) -> None:
    assert_exact(await page_of(seeded.exporter_url, tmp_path), table)
    await seeded.execute(MODES[mode].format(table=table.name, policy=table.policy))
    assert_refused(await page_of(seeded.exporter_url, tmp_path), table)


@pytest.mark.parametrize(("table", "named"), [(TABLES[0], "evento_dead_letter"), (TABLES[2], "tenants")])
async def test_the_refusal_names_the_table(seeded: Platform, table: Table, named: str) -> None:
    await seeded.execute(MODES["policy"].format(table=table.name, policy=table.policy))
    exporter = make_exporter(seeded.exporter_url, signals="dlq")
    try:
        with pytest.raises(RowSecurityRefused) as raised:
            await BY_NAME["dlq"].measure(exporter.sources)
    finally:
        await exporter.close()
    assert raised.value.table == named
    assert f"row-level security would filter the rows of table '{named}'" in str(raised.value)
    assert classify(raised.value, 1.0) == (Reason.ROW_SECURITY, str(raised.value))


async def test_the_other_signals_are_measured_exactly(seeded: Platform, tmp_path: Path) -> None:
    await seeded.execute(MODES["policy"].format(table=TABLES[0].name, policy=TABLES[0].policy))
    page = await page_of(seeded.exporter_url, tmp_path)
    assert_refused(page, TABLES[0])
    for other in TABLES[1:]:
        if other.signal != TABLES[0].signal:
            assert_exact(page, other)


async def test_a_partitioned_parent_under_row_security_is_never_a_number(seeded: Platform, tmp_path: Path) -> None:
    parent = '"tenant_globex".evento_dead_letter'
    await seeded.execute(
        f"ALTER TABLE {parent} RENAME TO evento_dead_letter_old;"
        f" CREATE TABLE {parent} (event_id text, tenant_slug text, origin_group text NOT NULL, status text NOT NULL,"
        " created_at timestamptz NOT NULL, resolved_at timestamptz) PARTITION BY LIST (origin_group);"
        f" CREATE TABLE \"tenant_globex\".dl_signature PARTITION OF {parent} FOR VALUES IN ('signature-service');"
        f' CREATE TABLE "tenant_globex".dl_other PARTITION OF {parent} DEFAULT;'
        f' INSERT INTO {parent} SELECT * FROM "tenant_globex".evento_dead_letter_old;'
        f" GRANT SELECT ON {parent} TO {EXPORTER_ROLE}"
    )
    page = await page_of(seeded.exporter_url, tmp_path)
    assert page.get("orpycamcp_dlq_pending_events", origin_group="knowledge-service") == 1
    assert_exact(page, TABLES[0])
    await seeded.execute(
        f"ALTER TABLE {parent} ENABLE ROW LEVEL SECURITY;"
        f" CREATE POLICY some_rows ON {parent} FOR SELECT TO {EXPORTER_ROLE} USING (event_id = 'e1')"
    )
    page = await page_of(seeded.exporter_url, tmp_path)
    assert_refused(page, TABLES[0])
    assert page.family("orpycamcp_dlq_pending_events") == {}


@pytest.fixture
async def bypassing_url(platform: Platform) -> AsyncIterator[str]:
    """A role with BYPASSRLS and nothing else but the exporter role's grants."""
    role = f"bypass_{platform.database}"
    await platform.execute(
        f"CREATE ROLE {role} LOGIN BYPASSRLS PASSWORD '{EXPORTER_PASSWORD}' IN ROLE {EXPORTER_ROLE};"
        f" ALTER ROLE {role} SET default_transaction_read_only = on"
    )
    try:
        yield platform.server.url(user=role, password=EXPORTER_PASSWORD, database=platform.database)
    finally:
        await platform.execute(f"DROP ROLE {role}")


@pytest.mark.parametrize("mode", list(MODES))
async def test_a_bypassrls_role_reads_every_table_exactly(
    seeded: Platform, bypassing_url: str, tmp_path: Path, mode: str
) -> None:
    for table in TABLES:
        await seeded.execute(MODES[mode].format(table=table.name, policy=table.policy))
    page = await page_of(bypassing_url, tmp_path)
    for table in TABLES:
        assert_exact(page, table)
    assert_refused(await page_of(seeded.exporter_url, tmp_path), TABLES[0])


@pytest.mark.parametrize("table", [TABLES[0], TABLES[3]], ids=["evento_dead_letter", "audit_chain_runs"])
async def test_through_a_transaction_pooler_too(
    seeded: Platform, pg_server: PostgresServer, tmp_path: Path, table: Table
) -> None:
    # The setting travels inside each transaction: a server session the pooler lends
    # for it has row_security off whatever the session was given before.
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(pg_server.port, "transaction", users, {"default_pool_size": "1"}) as bouncer:
        url = bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, seeded.database)
        backlogs = tmp_path / "backlogs.yml"
        backlogs.write_text(pending_only(BACKLOG))
        assert_exact(
            await scrape_once(url, backlogs_config_file=str(backlogs), database_pool_mode="transaction"), table
        )
        await seeded.execute(MODES["policy"].format(table=table.name, policy=table.policy))
        assert_refused(
            await scrape_once(url, backlogs_config_file=str(backlogs), database_pool_mode="transaction"), table
        )
