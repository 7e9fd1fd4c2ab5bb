"""A timestamp in the future (clock skew beyond the tolerance, bad data) breaks
the contract like a NULL: the signal is unmeasured with a clear reason, never a
negative age on a dashboard. A few minutes of skew are tolerated."""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

import pytest

from exporter.signals.base import FUTURE_TOLERANCE_SECONDS
from tests.faults.kit import capture
from tests.platform import Platform
from tests.scrapes import AUDIT_PREFIX, DLQ_PREFIX, make_exporter, scrape, value_series

pytestmark = pytest.mark.anyio

BEYOND = timedelta(seconds=FUTURE_TOLERANCE_SECONDS + 3600)
WITHIN = timedelta(seconds=FUTURE_TOLERANCE_SECONDS - 120)


def unmeasured_details(caplog: pytest.LogCaptureFixture, signal: str) -> list[tuple[str, str]]:
    return [
        (str(record.__dict__["reason"]), record.getMessage())
        for record in caplog.records
        if record.name == "orpycamcp.measure" and record.__dict__.get("signal") == signal
    ]


async def test_a_dead_letter_from_the_future_makes_dlq_unmeasured(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", datetime.now(UTC) + BEYOND)
    exporter = make_exporter(platform.exporter_url, signals="dlq")
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("dlq") == 0
    assert value_series(page, DLQ_PREFIX) == []
    [(reason, message)] = unmeasured_details(caplog, "dlq")
    assert reason == "contract_violation"
    assert "evento_dead_letter.created_at: timestamp " in message
    assert f"s in the future (more than the {FUTURE_TOLERANCE_SECONDS:.0f} s of clock skew tolerated)" in message


async def test_a_dead_letter_a_few_minutes_ahead_is_clock_skew_and_kept(platform: Platform) -> None:
    await platform.add_tenant("acme")
    created = (datetime.now(UTC) + WITHIN).replace(microsecond=0)
    await platform.add_dead_letter("acme", "e1", "workflow-service", "pending", created)
    exporter = make_exporter(platform.exporter_url, signals="dlq")
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("dlq") == 1
    assert page.get("orpycamcp_dlq_oldest_pending_timestamp_seconds", origin_group="workflow-service") == (
        created.timestamp()
    )


async def test_an_audit_run_finished_in_the_future_makes_audit_chain_unmeasured(
    platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    capture(caplog)
    await platform.add_audit_run("complete", datetime.now(UTC) + BEYOND)
    exporter = make_exporter(platform.exporter_url, signals="audit_chain")
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("audit_chain") == 0
    assert value_series(page, AUDIT_PREFIX) == []
    [(reason, message)] = unmeasured_details(caplog, "audit_chain")
    assert reason == "contract_violation"
    assert "audit_chain_runs.finished_at: timestamp " in message
