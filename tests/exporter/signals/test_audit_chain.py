from __future__ import annotations

import pytest

from exporter.errors import SourceNotConfigured
from exporter.signals import audit_chain
from exporter.sources import Sources
from tests.exporter.signals.violations import violation
from tests.platform import Platform, at
from tests.scrapes import AUDIT_PREFIX, scrape_once, value_series

pytestmark = pytest.mark.anyio


async def test_latest_complete_run_wins_and_partial_runs_never_count(platform: Platform) -> None:
    await platform.add_audit_run("complete", at("2026-11-30 02:00:00"), breaks=0, declared_breaks=0)
    await platform.add_audit_run(
        "complete", at("2026-12-01 02:00:00"), breaks=3, declared_breaks=1, verification_ok=False
    )
    await platform.add_audit_run(
        "partial", at("2026-12-01 12:00:00"), breaks=9, declared_breaks=0, verification_ok=False
    )
    page = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert page.measured("audit_chain") == 1
    assert page.get("orpycamcp_audit_chain_breaks") == 3
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 1
    assert page.get("orpycamcp_audit_chain_verification_ok") == 0
    assert (
        page.get("orpycamcp_audit_chain_last_verification_timestamp_seconds") == at("2026-12-01 02:00:00").timestamp()
    )


async def test_the_latest_run_is_the_last_finished_whatever_order_the_runs_were_written_in(
    platform: Platform,
) -> None:
    # Written out of finish order: the last finished run has the smallest id.
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks=3, declared_breaks=1)
    await platform.add_audit_run("complete", at("2026-11-29 02:00:00"), breaks=7, declared_breaks=7)
    await platform.add_audit_run("complete", at("2026-11-30 02:00:00"), breaks=0, declared_breaks=0)
    page = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert page.get("orpycamcp_audit_chain_breaks") == 3
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 1
    assert (
        page.get("orpycamcp_audit_chain_last_verification_timestamp_seconds") == at("2026-12-01 02:00:00").timestamp()
    )


async def test_a_clean_run_is_zero_breaks_and_verified(platform: Platform) -> None:
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks=0, declared_breaks=0)
    page = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert page.measured("audit_chain") == 1
    assert page.get("orpycamcp_audit_chain_breaks") == 0
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 0
    assert page.get("orpycamcp_audit_chain_verification_ok") == 1


async def test_never_verified_is_measured_with_no_value_series(platform: Platform) -> None:
    await platform.add_audit_run("partial", at("2026-12-01 12:00:00"), breaks=0, declared_breaks=0)
    page = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert page.measured("audit_chain") == 1
    assert value_series(page, AUDIT_PREFIX) == []


@pytest.mark.parametrize(
    ("breaks", "declared", "ok"),
    [(None, 0, True), (0, None, True), (0, 0, None), (-1, 0, True)],
)
async def test_nulls_and_negative_counts_are_contract_drift(
    platform: Platform, breaks: int | None, declared: int | None, ok: bool | None
) -> None:
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks, declared, ok)
    page = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert page.measured("audit_chain") == 0
    assert value_series(page, AUDIT_PREFIX) == []


async def test_missing_table_leaves_other_signals_measured(platform: Platform) -> None:
    await platform.execute("DROP TABLE public.audit_chain_runs")
    page = await scrape_once(platform.exporter_url)
    assert page.measured("audit_chain") == 0
    assert value_series(page, AUDIT_PREFIX) == []
    assert page.measured("dlq") == 1
    assert page.measured("preservation") == 1


@pytest.mark.parametrize(
    ("breaks", "declared", "ok", "where", "problem"),
    [
        (None, 0, True, "audit_chain_runs.breaks", "NULL in the latest complete run"),
        (0, None, True, "audit_chain_runs.declared_breaks", "NULL in the latest complete run"),
        (0, 0, None, "audit_chain_runs.verification_ok", "NULL in the latest complete run"),
        (-1, 0, True, "audit_chain_runs.breaks", "negative value -1"),
        (0, -2, True, "audit_chain_runs.declared_breaks", "negative value -2"),
    ],
)
async def test_a_latest_run_out_of_contract_names_its_column(
    platform: Platform, breaks: int | None, declared: int | None, ok: bool | None, where: str, problem: str
) -> None:
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks, declared, ok)
    raised = await violation(platform, "audit_chain")
    assert (raised.signal, raised.where, raised.problem) == ("audit_chain", where, problem)


@pytest.mark.parametrize(
    ("finished_at", "problem"),
    [
        ("NULL", "NULL in the latest complete run"),
        ("'infinity'", "infinite timestamp"),
        ("now() + interval '2 days'", "timestamp "),
    ],
)
async def test_a_latest_run_finished_out_of_contract_names_its_column(
    platform: Platform, finished_at: str, problem: str
) -> None:
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"))
    await platform.execute("ALTER TABLE public.audit_chain_runs ALTER finished_at DROP NOT NULL")
    await platform.execute(f"UPDATE public.audit_chain_runs SET finished_at = {finished_at}")
    raised = await violation(platform, "audit_chain")
    assert (raised.signal, raised.where) == ("audit_chain", "audit_chain_runs.finished_at")
    assert raised.problem.startswith(problem), raised.problem


async def test_without_a_database_audit_chain_names_itself_unconfigured() -> None:
    with pytest.raises(SourceNotConfigured) as raised:
        await audit_chain.SIGNAL.measure(Sources())
    assert raised.value.signal == "audit_chain"
