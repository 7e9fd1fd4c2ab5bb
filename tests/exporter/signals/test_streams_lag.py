"""Redis's `lag` against the truth on a real Redis 7.0, through trims, deletions
and SETID, before and after the group catches up (redis/redis#13957): the
undelivered count on the page is the truth, or absent with the group marked
unknown and the rule it failed; a right count is never withheld.

The truth is counted with XRANGE: the entries after the group's last delivered ID."""

from __future__ import annotations

from collections.abc import Awaitable, Callable

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from devkit.streams import create_stream_groups
from registry.values import STREAM_GROUPS, UNDELIVERED_UNKNOWN_REASONS
from tests.scrapes import Page, scrape_once

pytestmark = pytest.mark.anyio

DOCUMENTS = "orpycamcp.document.events"
READER = "signature-service"  # reads; the stream's other groups never do
UNDELIVERED = "orpycamcp_stream_undelivered_entries"
UNKNOWN = "orpycamcp_stream_undelivered_unknown"
UNKNOWN_GROUPS = "orpycamcp_stream_undelivered_unknown_groups"
GROUPS = tuple(group for stream, group in STREAM_GROUPS if stream == DOCUMENTS)

RIGHT = "right"  # Redis's lag is the truth: published as it is
PASSES = "passes"  # Redis 7.0's lag is wrong and contradicts nothing else it says (docs/streams.md)
PHASES = ("after", "caught up", "2 more", "2 more, caught up")


async def truth_and_lag(db: Redis) -> dict[str, tuple[int, int | None]]:
    """Per group of the stream: (the entries after its last delivered ID, Redis's lag)."""
    found: dict[str, tuple[int, int | None]] = {}
    for info in await db.xinfo_groups(DOCUMENTS):
        after = await db.xrange(DOCUMENTS, "(" + info["last-delivered-id"], "+")
        assert isinstance(after, list)
        found[info["name"]] = (len(after), info["lag"])
    return found


def check_page(page: Page, found: dict[str, tuple[int, int | None]]) -> None:
    """What holds at every step, for every group: the truth, or absent and marked unknown."""
    assert page.measured("streams") == 1
    withheld = 0
    for group in GROUPS:
        truth, lag = found[group]
        published = page.get(UNDELIVERED, stream=DOCUMENTS, group=group)
        unknown = page.get(UNKNOWN, stream=DOCUMENTS, group=group)
        if lag == truth:
            assert (published, unknown) == (truth, None), group  # a right count is never withheld
        elif published is None:
            assert unknown == 1, group
            withheld += 1
    assert len(page.family(UNKNOWN)) == sum(page.family(UNKNOWN_GROUPS).values()) >= withheld


async def read_all(db: Redis) -> None:
    await db.xreadgroup(READER, "worker-1", {DOCUMENTS: ">"})


async def two_more(db: Redis) -> None:
    await db.xadd(DOCUMENTS, {"n": "more"}, id="2000-0")
    await db.xadd(DOCUMENTS, {"n": "more"}, id="2001-0")


Change = Callable[[Redis], Awaitable[object]]


async def maxlen(db: Redis) -> None:
    await db.xtrim(DOCUMENTS, maxlen=5, approximate=False)


async def minid(db: Redis) -> None:
    await db.xtrim(DOCUMENTS, minid="7-0", approximate=False)


async def capped_producer(db: Redis) -> None:
    for number in range(11, 1001):
        await db.xadd(DOCUMENTS, {"n": str(number)}, id=f"{number}-0", maxlen=300, approximate=True)


async def delete_ahead(db: Redis) -> None:
    await db.xdel(DOCUMENTS, "5-0")


async def set_id(db: Redis) -> None:
    await db.xgroup_setid(DOCUMENTS, READER, "3-0")


async def set_id_at_end(db: Redis) -> None:
    await db.xgroup_setid(DOCUMENTS, READER, "$")


# The reader read `first` of 10 entries, then `change`; what the reader's count is in each of PHASES.
CASES: list[tuple[str, int, Change, tuple[str, str, str, str]]] = [
    ("XTRIM MAXLEN 5", 1, maxlen, ("exceeds_length", "not_zero_at_last_id", PASSES, "not_zero_at_last_id")),
    ("XTRIM MAXLEN 5, read 4", 4, maxlen, ("exceeds_length", "not_zero_at_last_id", PASSES, "not_zero_at_last_id")),
    ("XTRIM MINID 7-0", 1, minid, ("exceeds_length", "exceeds_length", "exceeds_length", "not_zero_at_last_id")),
    ("XADD MAXLEN ~ 300", 1, capped_producer, ("exceeds_length",) * 4),
    ("XADD MAXLEN ~ 300, read nothing", 0, capped_producer, (RIGHT,) * 4),
    ("XDEL ahead", 1, delete_ahead, ("not_counted", RIGHT, RIGHT, RIGHT)),
    ("XDEL ahead, read 4", 4, delete_ahead, ("not_counted", "not_zero_at_last_id", PASSES, "not_zero_at_last_id")),
    ("XGROUP SETID 3-0", 1, set_id, ("not_counted", RIGHT, RIGHT, RIGHT)),
    ("XGROUP SETID $", 1, set_id_at_end, (RIGHT, RIGHT, "not_counted", RIGHT)),
]


@pytest.mark.parametrize(("name", "first", "change", "expected"), CASES, ids=[case[0] for case in CASES])
async def test_the_undelivered_count_is_the_truth_or_absent(
    redis: LocalRedis, db: Redis, name: str, first: int, change: Change, expected: tuple[str, str, str, str]
) -> None:
    await create_stream_groups(db)
    for number in range(1, 11):
        await db.xadd(DOCUMENTS, {"n": str(number)}, id=f"{number}-0")
    if first:
        await db.xreadgroup(READER, "worker-1", {DOCUMENTS: ">"}, count=first)
    await change(db)
    steps: list[Callable[[], Awaitable[object]]] = [
        lambda: read_all(db),
        lambda: two_more(db),
        lambda: read_all(db),
    ]
    for phase, want in zip(PHASES, expected, strict=True):
        found = await truth_and_lag(db)
        page = await scrape_once(None, redis.url, signals="streams")
        check_page(page, found)
        truth, lag = found[READER]
        published = page.get(UNDELIVERED, stream=DOCUMENTS, group=READER)
        where = f"{name}, {phase}: truth {truth}, Redis's lag {lag}"
        if want == RIGHT:
            assert lag == truth == published, where
        elif want == PASSES:
            # Redis 7.0's counter drifted at the trim and the group is behind by fewer entries
            # than the stream holds: no rule can see it (docs/streams.md, Undelivered entries).
            assert lag != truth, where
            assert published == lag, where
        else:
            assert lag != truth, where
            assert published is None, where
            assert page.get(UNKNOWN, stream=DOCUMENTS, group=READER) == 1, where
            assert (page.get(UNKNOWN_GROUPS, reason=want) or 0) >= 1, where  # the other groups may be too
        if steps:
            await steps.pop(0)()


async def test_a_healthy_group_keeps_its_count(redis: LocalRedis, db: Redis) -> None:
    """Lag N stays N: with trims of entries it read, with a SETID that names the reads, as it reads on."""
    await create_stream_groups(db)
    for number in range(1, 101):
        await db.xadd(DOCUMENTS, {"n": str(number)}, id=f"{number}-0")
    await db.xreadgroup(READER, "worker-1", {DOCUMENTS: ">"}, count=40)
    counts = []
    for change in (
        lambda: db.xtrim(DOCUMENTS, maxlen=80, approximate=False),  # 20 entries it had read
        lambda: db.xdel(DOCUMENTS, "30-0"),  # behind it
        lambda: db.execute_command("XGROUP", "SETID", DOCUMENTS, READER, "50-0", "ENTRIESREAD", "50"),  # type: ignore[no-untyped-call]
        lambda: db.xreadgroup(READER, "worker-1", {DOCUMENTS: ">"}, count=25),
    ):
        await change()
        found = await truth_and_lag(db)
        page = await scrape_once(None, redis.url, signals="streams")
        check_page(page, found)
        counts.append(page.get(UNDELIVERED, stream=DOCUMENTS, group=READER))
    assert counts == [60, 60, 50, 25]
    assert page.get(UNKNOWN, stream=DOCUMENTS, group=READER) is None
    assert {dict(labels)["reason"] for labels in page.family(UNKNOWN_GROUPS)} == set(UNDELIVERED_UNKNOWN_REASONS)
