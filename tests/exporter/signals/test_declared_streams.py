"""Declared streams on a real Redis: read with the built-in ones in the same
measurement, exact against what the test wrote, nothing undeclared emitted,
and a declared group that does not exist leaves the signal unmeasured."""

from __future__ import annotations

import logging
from pathlib import Path

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from devkit.streams import create_stream_groups
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.scrapes import STREAMS_PREFIX, Page, scrape_once, value_series

pytestmark = pytest.mark.anyio

BILLING = "orpycamcp.billing.events"
BILLING_DL = "orpycamcp.billing.deadletter"
# A Redis key may hold spaces, quotes and backslashes: the label value carries them escaped.
ODD_DL = 'billing "dead" letters \\ v2'
DOCUMENTS = "orpycamcp.document.events"
SIGNATURE_DL = "orpycamcp.signature.deadletter"
DECLARED_GROUPS = ((BILLING, "invoicing"), (BILLING, "ledger"), (DOCUMENTS, "archive-service"))
DECLARATIONS = f"""
streams:
  consumer_groups:
    {BILLING}: [invoicing, ledger]
    {DOCUMENTS}: [archive-service]
  dead_letter_streams: [{BILLING_DL}, '{ODD_DL}']
"""

PENDING = "orpycamcp_stream_pending_messages"
OLDEST_PENDING = "orpycamcp_stream_oldest_pending_timestamp_seconds"
DL_ENTRIES = "orpycamcp_deadletter_stream_entries"
DL_OLDEST = "orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds"


@pytest.fixture
def declarations(tmp_path: Path) -> str:
    path = tmp_path / "declarations.yml"
    path.write_text(DECLARATIONS)
    return str(path)


async def scrape_streams(redis: LocalRedis, declarations: str) -> Page:
    return await scrape_once(None, redis.url, signals="streams", backlogs_config_file=declarations)


def pair(stream: str, group: str) -> tuple[tuple[str, str], ...]:
    return (("group", group), ("stream", stream))


def only(stream: str) -> tuple[tuple[str, str], ...]:
    return (("stream", stream),)


async def test_declared_groups_and_dead_letters_are_read_with_the_built_in_ones(
    redis: LocalRedis, db: Redis, declarations: str
) -> None:
    await create_stream_groups(db, STREAM_GROUPS + DECLARED_GROUPS)
    # A group on a declared stream that is not declared: it must never be emitted.
    await db.xgroup_create(BILLING, "undeclared-audit", id="0")
    written = ["1764700000000-0", "1764700000250-1", "1764700001000-0", "1764700002500-3"]
    for entry_id in written:
        await db.xadd(BILLING, {"event": "invoice.issued"}, id=entry_id)
    # invoicing reads all four and acknowledges the first and the third.
    await db.xreadgroup("invoicing", "inv-1", {BILLING: ">"})
    await db.xack(BILLING, "invoicing", written[0], written[2])
    # ledger reads two and acknowledges nothing.
    await db.xreadgroup("ledger", "led-1", {BILLING: ">"}, count=2)
    await db.xreadgroup("undeclared-audit", "aud-1", {BILLING: ">"})
    # The declared group of a built-in stream: one document event delivered, not acknowledged.
    await db.xadd(DOCUMENTS, {"event": "document.signed"}, id="1764710000000-0")
    await db.xreadgroup("archive-service", "arc-1", {DOCUMENTS: ">"})
    # A built-in consumer also holds it: the built-in pair keeps its own count.
    await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"})
    for entry_id in ("1764600000000-5", "1764600009000-0"):
        await db.xadd(BILLING_DL, {"event": "invoice.failed"}, id=entry_id)
    await db.xadd(SIGNATURE_DL, {"event": "signature.failed"}, id="1764500000000-0")
    # A dead-letter stream nobody declared.
    await db.xadd("orpycamcp.undeclared.deadletter", {"event": "x"}, id="1764500000000-0")

    page = await scrape_streams(redis, declarations)

    assert page.measured("streams") == 1
    unacknowledged = {
        (BILLING, "invoicing"): [written[1], written[3]],
        (BILLING, "ledger"): written[:2],
        (DOCUMENTS, "archive-service"): ["1764710000000-0"],
        (DOCUMENTS, "signature-service"): ["1764710000000-0"],
    }
    expected_pending = {pair(*key): 0 for key in STREAM_GROUPS + DECLARED_GROUPS}
    expected_oldest = {}
    for key, ids in unacknowledged.items():
        expected_pending[pair(*key)] = len(ids)
        expected_oldest[pair(*key)] = min(int(entry_id.split("-")[0]) for entry_id in ids) / 1000
    assert page.family(PENDING) == expected_pending
    assert page.family(OLDEST_PENDING) == expected_oldest
    all_dead = (*DEADLETTER_STREAMS, BILLING_DL, ODD_DL)
    assert page.family(DL_ENTRIES) == {
        only(stream): 2 if stream == BILLING_DL else 1 if stream == SIGNATURE_DL else 0 for stream in all_dead
    }
    assert page.family(DL_OLDEST) == {only(BILLING_DL): 1764600000.0, only(SIGNATURE_DL): 1764500000.0}
    emitted = {dict(labels).get("group") for _, labels in value_series(page, STREAMS_PREFIX)}
    assert "undeclared-audit" not in emitted
    assert "orpycamcp.undeclared.deadletter" not in {
        dict(labels).get("stream") for _, labels in value_series(page, STREAMS_PREFIX)
    }


async def test_every_declared_key_is_read_in_the_one_measurement(
    redis: LocalRedis, db: Redis, declarations: str
) -> None:
    await create_stream_groups(db, STREAM_GROUPS + DECLARED_GROUPS)
    await db.config_resetstat()
    page = await scrape_streams(redis, declarations)
    assert page.measured("streams") == 1
    stats = await db.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(stat["calls"]) for name, stat in stats.items()}
    groups = len(STREAM_GROUPS) + len(DECLARED_GROUPS)
    assert groups == 7
    # Two XPENDING per group: the summary, and its oldest entry's delivery count.
    assert calls["xpending"] == 2 * groups
    assert calls["xlen"] == calls["xrange"] == len(DEADLETTER_STREAMS) + 2 == 5
    assert calls["xinfo|consumers"] == groups
    assert calls["xinfo|groups"] == len({stream for stream, _ in STREAM_GROUPS + DECLARED_GROUPS}) == 3
    assert calls["xinfo|stream"] == calls["xinfo|groups"]
    for command in ("keys", "scan", "type"):
        assert command not in calls


async def test_a_declared_group_that_does_not_exist_leaves_the_signal_unmeasured(
    redis: LocalRedis, db: Redis, declarations: str, caplog: pytest.LogCaptureFixture
) -> None:
    # Every built-in group there, and every declared one but ledger.
    await create_stream_groups(db, STREAM_GROUPS + tuple(g for g in DECLARED_GROUPS if g[1] != "ledger"))
    await db.xadd(BILLING_DL, {"event": "invoice.failed"}, id="1764600000000-0")
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")

    page = await scrape_streams(redis, declarations)

    assert page.measured("streams") == 0
    assert value_series(page, STREAMS_PREFIX) == []
    assert page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="streams") is None
    reasons = [
        str(record.__dict__["reason"])
        for record in caplog.records
        if record.name == "orpycamcp.measure" and record.__dict__.get("signal") == "streams"
    ]
    assert reasons == ["missing_group"]


async def test_without_declarations_the_declared_groups_are_not_read(redis: LocalRedis, db: Redis) -> None:
    await create_stream_groups(db, STREAM_GROUPS + DECLARED_GROUPS)
    await db.xadd(BILLING_DL, {"event": "invoice.failed"}, id="1764600000000-0")
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    streams = {dict(labels).get("stream") for _, labels in value_series(page, STREAMS_PREFIX)} - {None}
    assert streams == {stream for stream, _ in STREAM_GROUPS} | set(DEADLETTER_STREAMS)
