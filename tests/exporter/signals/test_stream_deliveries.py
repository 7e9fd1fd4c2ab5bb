"""The delivery count of each group's oldest pending entry, read from a real Redis:
one `XPENDING <stream> <group> - + 1` per group, in the same round trip."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from exporter.errors import ContractViolation
from exporter.signals.streams import oldest_pending_deliveries
from tests.redis_streams import emptied_with_groups
from tests.scrapes import scrape_once

pytestmark = pytest.mark.anyio

DOCUMENTS = "orpycamcp.document.events"
GROUP = "workflow-service"
DELIVERIES = "orpycamcp_stream_oldest_pending_deliveries"
LABELS = (("group", GROUP), ("stream", DOCUMENTS))


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    async with emptied_with_groups(redis.url) as client:
        yield client


async def deliveries_on_the_page(redis: LocalRedis) -> dict[tuple[tuple[str, str], ...], float]:
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    return page.family(DELIVERIES)


async def claim(db: Redis, entry_id: str, times: int) -> None:
    """What the reclaim sweep does to a message it retries: XCLAIM counts one delivery more."""
    for _ in range(times):
        assert await db.xclaim(DOCUMENTS, GROUP, "sweeper", min_idle_time=0, message_ids=[entry_id])


async def test_the_oldest_pending_entry_counts_its_deliveries_claims_included(redis: LocalRedis, db: Redis) -> None:
    for entry_id in ("1764680000000-0", "1764680001000-0", "1764680002000-0"):
        await db.xadd(DOCUMENTS, {"event": "document.signed"}, id=entry_id)
    # Nothing pending: no delivery count (absent, not 0), for any group.
    assert await deliveries_on_the_page(redis) == {}

    await db.xreadgroup(GROUP, "wf-1", {DOCUMENTS: ">"})
    assert await deliveries_on_the_page(redis) == {LABELS: 1}

    # The sweep retried the oldest six times: a poison pill past max_deliveries (5)
    # that dead-lettering did not clear (ADR-021 R-4).
    await claim(db, "1764680000000-0", 6)
    ((_, _, _, delivered),) = [
        tuple(entry.values()) for entry in await db.xpending_range(DOCUMENTS, GROUP, "-", "+", 1)
    ]
    assert (await deliveries_on_the_page(redis), delivered) == ({LABELS: 7}, 7)

    # A later entry retried too does not count: only the oldest is read.
    await claim(db, "1764680002000-0", 2)
    assert await deliveries_on_the_page(redis) == {LABELS: 7}

    # Acknowledged (or dead-lettered): the next oldest speaks.
    await db.xack(DOCUMENTS, GROUP, "1764680000000-0")
    assert await deliveries_on_the_page(redis) == {LABELS: 1}
    await db.xack(DOCUMENTS, GROUP, "1764680001000-0", "1764680002000-0")
    assert await deliveries_on_the_page(redis) == {}


async def test_one_call_more_per_group_whatever_the_pending_list_holds(redis: LocalRedis, db: Redis) -> None:
    pipe = db.pipeline(transaction=False)
    for index in range(5000):
        pipe.xadd(DOCUMENTS, {"n": str(index)}, id=f"1764680000000-{index + 1}")
    await pipe.execute()
    await db.xreadgroup(GROUP, "wf-1", {DOCUMENTS: ">"})
    await db.config_resetstat()
    assert await deliveries_on_the_page(redis) == {LABELS: 1}
    stats = await db.info("commandstats")
    # The summary and the extended form with COUNT 1, for each of the four groups.
    assert int(stats["cmdstat_xpending"]["calls"]) == 8


@pytest.mark.parametrize(
    "entries",
    [
        b"1",
        {"message_id": b"1-0"},
        [{"message_id": b"x", "times_delivered": 1}],
        [{"message_id": b"1-0", "times_delivered": -1}],
    ],
)
async def test_a_malformed_extended_pending_reply_is_a_contract_violation(entries: object) -> None:
    with pytest.raises(ContractViolation):
        oldest_pending_deliveries("XPENDING s g - + 1", {"pending": 1, "min": b"1-0"}, entries)


async def test_another_entry_than_the_summarys_oldest_gives_no_count() -> None:
    """An acknowledgement between the summary and the extended form: the count is of
    another entry, so it is not given (absent), never mixed with the summary's."""
    summary = {"pending": 2, "min": b"1-0"}
    assert oldest_pending_deliveries("w", summary, [{"message_id": b"2-0", "times_delivered": 3}]) is None
    assert oldest_pending_deliveries("w", summary, [{"message_id": b"1-0", "times_delivered": 3}]) == 3
    assert oldest_pending_deliveries("w", {"pending": 0, "min": None}, []) is None
