"""Stream signals declared apart (`streams.signals`), on a real Redis: each
reads its own pairs and dead-letter streams, and a consumer group that does
not exist blinds only the signal that declares it."""

from __future__ import annotations

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
LEDGER_DL = "orpycamcp.ledger.deadletter"
DECLARATIONS = f"""
streams:
  signals:
    streams_billing:
      consumer_groups:
        {BILLING}: [invoicing]
      dead_letter_streams: [{BILLING_DL}]
    streams_ledger:
      consumer_groups:
        {BILLING}: [ledger]
    streams_ledger_dead:
      dead_letter_streams: [{LEDGER_DL}]
"""
PENDING = "orpycamcp_stream_pending_messages"
DL_ENTRIES = "orpycamcp_deadletter_stream_entries"
LAST_SUCCESS = "orpycamcp_signal_last_success_timestamp_seconds"


async def scrape_all(redis: LocalRedis, tmp_path: Path, text: str = DECLARATIONS) -> Page:
    path = tmp_path / "declarations.yml"
    path.write_text(text)
    return await scrape_once(None, redis.url, backlogs_config_file=str(path))


def streams_of(page: Page, group: str | None = None) -> set[tuple[str, str | None]]:
    return {
        (dict(labels)["stream"], dict(labels).get("group"))
        for _, labels in value_series(page, STREAMS_PREFIX)
        if "stream" in dict(labels) and (group is None or dict(labels).get("group") == group)
    }


async def write_billing(db: Redis) -> None:
    for entry_id in ("1764700000000-0", "1764700001000-0"):
        await db.xadd(BILLING, {"event": "invoice.issued"}, id=entry_id)
    await db.xreadgroup("invoicing", "inv-1", {BILLING: ">"})
    await db.xadd(BILLING_DL, {"event": "invoice.failed"}, id="1764600000000-0")


async def test_a_missing_group_declared_as_its_own_signal_blinds_only_that_signal(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    # Every built-in group and invoicing exist; ledger does not.
    await create_stream_groups(db, (*STREAM_GROUPS, (BILLING, "invoicing")))
    await write_billing(db)

    page = await scrape_all(redis, tmp_path)

    assert page.measured("streams_ledger") == 0
    assert page.failure_reasons("streams_ledger") == {"missing_group"}
    assert page.get(LAST_SUCCESS, signal="streams_ledger") is None
    assert streams_of(page, "ledger") == set()
    # The others, measured and exact.
    assert page.measured("streams") == 1
    assert page.measured("streams_billing") == 1
    assert page.measured("streams_ledger_dead") == 1
    assert page.get(PENDING, stream=BILLING, group="invoicing") == 2
    assert page.get(DL_ENTRIES, stream=BILLING_DL) == 1
    assert page.get(DL_ENTRIES, stream=LEDGER_DL) == 0  # not there yet: a true 0
    assert streams_of(page) == {
        *STREAM_GROUPS,
        *((stream, None) for stream in (*DEADLETTER_STREAMS, BILLING_DL, LEDGER_DL)),
        (BILLING, "invoicing"),
    }


async def test_the_same_missing_group_declared_in_the_streams_signal_blinds_all_of_it(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    await create_stream_groups(db, (*STREAM_GROUPS, (BILLING, "invoicing")))
    await write_billing(db)
    together = f"""
streams:
  consumer_groups:
    {BILLING}: [invoicing, ledger]
  dead_letter_streams: [{BILLING_DL}]
"""
    page = await scrape_all(redis, tmp_path, together)

    assert page.measured("streams") == 0
    assert page.failure_reasons("streams") == {"missing_group"}
    assert value_series(page, STREAMS_PREFIX) == []


async def test_once_the_group_exists_its_signal_is_measured_with_the_others(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    await create_stream_groups(db, (*STREAM_GROUPS, (BILLING, "invoicing"), (BILLING, "ledger")))
    await write_billing(db)
    await db.xreadgroup("ledger", "led-1", {BILLING: ">"}, count=1)
    await db.xadd(LEDGER_DL, {"event": "posting.failed"}, id="1764600000000-0")

    page = await scrape_all(redis, tmp_path)

    for signal in ("streams", "streams_billing", "streams_ledger", "streams_ledger_dead"):
        assert page.measured(signal) == 1
    assert page.get(DL_ENTRIES, stream=LEDGER_DL) == 1
    assert page.get(PENDING, stream=BILLING, group="ledger") == 1
    assert page.get(PENDING, stream=BILLING, group="invoicing") == 2
    # Each pair once on the page, read by its own signal.
    assert len(page.family(PENDING)) == len(STREAM_GROUPS) + 2
