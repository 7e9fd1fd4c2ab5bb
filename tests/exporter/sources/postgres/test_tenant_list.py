"""Which tenants are measured, from the contract (the `tenants:` key of the
declarations file): the shipped default unchanged, another filter or another
table against the real PostgreSQL, and every problem refused at start."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.backlogs import parse_declarations
from exporter.conditions import Condition
from exporter.errors import BacklogConfigError
from exporter.tenant_list import DEFAULT_TENANTS, TenantList
from exporter.tools.demo import EXPORTER_ROLE
from tests.commands import refused_in_one_line, run_exporter
from tests.platform import Platform, at
from tests.scrapes import scrape_once

pytestmark = pytest.mark.anyio

DB = "postgresql://u:p@h/db"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"
PENDING = "orpycamcp_dlq_pending_events"
# ADR-041: only a tenant whose provisioning is pending is skipped.
ALL_BUT_PROVISIONING = """
tenants:
  measured:
    provisioning_status: {not: [provisioning]}
"""


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "declarations.yml"
    path.write_text(text)
    return str(path)


def pending(page_values: dict[tuple[tuple[str, str], ...], float], group: str) -> float:
    return page_values[(("origin_group", group),)]


async def four_tenants(platform: Platform) -> None:
    """One pending dead letter in each of four tenants, one per provisioning state."""
    for slug, status, provisioning in (
        ("acme", "active", "active"),
        ("globex", "suspended", "active"),
        ("initech", "active", "provisioning"),
        ("bygone", "active", "deprovisioning"),
    ):
        await platform.add_tenant(slug, status=status, provisioning_status=provisioning)
        await platform.add_dead_letter(slug, "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))


async def test_the_shipped_default_measures_the_active_tenants_suspended_included(platform: Platform) -> None:
    await four_tenants(platform)
    page = await scrape_once(platform.exporter_url, signals="dlq")
    assert page.measured("dlq") == 1
    assert pending(page.family(PENDING), "signature-service") == 2  # acme, globex


async def test_a_declared_filter_chooses_the_tenants_measured(platform: Platform, tmp_path: Path) -> None:
    await four_tenants(platform)
    page = await scrape_once(
        platform.exporter_url, signals="dlq", backlogs_config_file=write(tmp_path, ALL_BUT_PROVISIONING)
    )
    assert page.measured("dlq") == 1
    assert pending(page.family(PENDING), "signature-service") == 3  # acme, globex, bygone


async def test_another_table_and_columns_name_the_tenants(platform: Platform, tmp_path: Path) -> None:
    await four_tenants(platform)
    # The platform's own list: another table, slug column and state words.
    await platform.execute("CREATE TABLE public.entidades (codigo text PRIMARY KEY, estado text NOT NULL)")
    await platform.execute(
        "INSERT INTO public.entidades VALUES ('acme', 'activa'), ('globex', 'suspendida'), ('initech', 'pendiente')"
    )
    await platform.execute(f"GRANT SELECT ON public.entidades TO {EXPORTER_ROLE}")
    text = """
tenants:
  table: public.entidades
  slug: codigo
  measured:
    estado: [activa, suspendida]
"""
    page = await scrape_once(platform.exporter_url, signals="dlq", backlogs_config_file=write(tmp_path, text))
    assert page.measured("dlq") == 1
    assert pending(page.family(PENDING), "signature-service") == 2  # acme, globex

    # A NULL in the filter's column: that tenant may be measured, so nothing is.
    await platform.execute("ALTER TABLE public.entidades ALTER estado DROP NOT NULL")
    await platform.execute("INSERT INTO public.entidades VALUES ('ghost', NULL)")
    page = await scrape_once(platform.exporter_url, signals="dlq", backlogs_config_file=write(tmp_path, text))
    assert page.measured("dlq") == 0
    assert page.failure_reasons("dlq") == {"contract_violation"}
    assert page.family(PENDING) == {}


async def test_a_tenant_table_out_of_reach_leaves_the_tenant_signals_unmeasured(
    platform: Platform, tmp_path: Path
) -> None:
    await four_tenants(platform)
    text = "tenants:\n  table: public.entidades\n"
    page = await scrape_once(platform.exporter_url, signals="dlq", backlogs_config_file=write(tmp_path, text))
    assert page.measured("dlq") == 0
    assert page.failure_reasons("dlq") == {"tenant_list_unreadable"}


def test_keys_not_given_keep_the_shipped_default() -> None:
    assert parse_declarations("tenants:\n  slug: code\n", SETTING).tenants == TenantList(
        ("public", "tenants"), "code", DEFAULT_TENANTS.measured
    )
    assert parse_declarations(ALL_BUT_PROVISIONING, SETTING).tenants == TenantList(
        measured=(Condition("provisioning_status", ("provisioning",), negated=True),)
    )
    assert parse_declarations("streams:\n  dead_letter_streams: [x]\n", SETTING).tenants == DEFAULT_TENANTS


def test_values_are_bound_never_pasted() -> None:
    sql, args = parse_declarations(
        'tenants:\n  measured:\n    state: ["live\'; DROP TABLE t; --", 2]\n', SETTING
    ).tenants.query()
    assert "DROP" not in sql
    assert args == ("live'; DROP TABLE t; --", 2)


BAD: list[tuple[str, str, str, str]] = [
    ("unknown-key", "tenants:\n  filter: x\n", "tenants.filter", "unknown key"),
    ("empty", "tenants: {}\n", "tenants", "must map"),
    ("table-not-qualified", "tenants:\n  table: tenants\n", "tenants.table", "not schema.table"),
    ("table-sql", "tenants:\n  table: public.tenants;drop\n", "tenants.table", "plain column or table name"),
    ("slug-sql", "tenants:\n  slug: lower(slug)\n", "tenants.slug", "plain column or table name"),
    ("measured-empty", "tenants:\n  measured: {}\n", "tenants.measured", "at least one column"),
    ("measured-sql", "tenants:\n  measured:\n    a or 1=1: x\n", "tenants.measured.a or 1=1", "plain column"),
    ("measured-bool", "tenants:\n  measured:\n    state: yes\n", "tenants.measured.state", "quote it"),
    ("measured-bad-not", "tenants:\n  measured:\n    state: {but: [x]}\n", "tenants.measured.state", "not: [values]"),
]


@pytest.mark.parametrize(("text", "key", "problem"), [b[1:] for b in BAD], ids=[b[0] for b in BAD])
def test_every_problem_names_the_key(text: str, key: str, problem: str) -> None:
    with pytest.raises(BacklogConfigError) as caught:
        parse_declarations(text, SETTING)
    assert (caught.value.backlog, caught.value.key) == (None, key)
    assert problem in str(caught.value)


def test_check_config_refuses_in_one_line(tmp_path: Path) -> None:
    path = write(tmp_path, "tenants:\n  table: tenants\n")
    line = refused_in_one_line("check-config", "--database-url", DB, "--backlogs.config-file", path)
    assert "key 'tenants.table': 'tenants' is not schema.table" in line


def test_check_config_says_which_tenants_are_measured(tmp_path: Path) -> None:
    path = write(tmp_path, ALL_BUT_PROVISIONING)
    done = run_exporter("check-config", "--database-url", DB, "--backlogs.config-file", path)
    assert done.returncode == 0, done.stderr
    assert "tenants measured: public.tenants (slug) where provisioning_status <> 'provisioning'" in done.stdout
