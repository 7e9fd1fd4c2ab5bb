from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Awaitable, Callable, Iterator, Mapping
from typing import Any

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis, start_redis
from devkit.streams import create_stream_groups
from exporter.errors import ConfigError, ContractViolation, SourceNotConfigured
from exporter.outcomes import classify
from exporter.samples import Sample
from exporter.signals.base import FUTURE_TOLERANCE_SECONDS
from exporter.signals.streams import SIGNAL, entry_time, first_entry_time, pending_summary, samples_from
from exporter.sources import Sources
from exporter.sources.redis.errors import RedisTooOld
from exporter.sources.redis.source import StreamsReading
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS, UNDELIVERED_UNKNOWN_REASONS
from tests.clock import FakeClock
from tests.platform import Platform
from tests.scrapes import STREAMS_PREFIX, Page, make_exporter, scrape, scrape_once, value_series
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

DOCUMENTS = "orpycamcp.document.events"
WORKFLOWS = "orpycamcp.workflow.events"
SIGNATURE_DL = "orpycamcp.signature.deadletter"
WORKFLOW_DL = "orpycamcp.workflow.deadletter"
NOTIFICATION_DL = "orpycamcp.notification.deadletter"

PENDING = "orpycamcp_stream_pending_messages"
OLDEST_PENDING = "orpycamcp_stream_oldest_pending_timestamp_seconds"
DL_ENTRIES = "orpycamcp_deadletter_stream_entries"
UNDELIVERED = "orpycamcp_stream_undelivered_entries"
UNKNOWN = "orpycamcp_stream_undelivered_unknown"
UNKNOWN_GROUPS = "orpycamcp_stream_undelivered_unknown_groups"
CONSUMERS = "orpycamcp_stream_consumers"
CONSUMER_IDLE = "orpycamcp_stream_consumer_idle_seconds"
DL_OLDEST = "orpycamcp_deadletter_stream_oldest_entry_timestamp_seconds"
DL_ENTRY_101 = "orpycamcp_deadletter_stream_entry_101_timestamp_seconds"
POSTGRES_SIGNALS = ("dlq", "preservation", "audit_chain")


def samples_of(reading: StreamsReading) -> list[Sample]:
    """The built-in streams signal's samples of a reading (its pairs and dead-letter streams)."""
    return list(samples_from(reading, STREAM_GROUPS, DEADLETTER_STREAMS))


def pair(stream: str, group: str) -> tuple[tuple[str, str], ...]:
    return (("group", group), ("stream", stream))


def only(stream: str) -> tuple[tuple[str, str], ...]:
    return (("stream", stream),)


def connect(url: str) -> Redis:
    return Redis.from_url(url, decode_responses=True)


@pytest.fixture
def own_redis() -> Iterator[LocalRedis]:
    """A Redis of this test's own, free to be stopped, paused and restarted."""
    server = start_redis()
    try:
        yield server
    finally:
        server.remove()


def delivered_ids(reply: Any) -> list[str]:
    """The entry IDs an XREADGROUP of one stream delivered."""
    ((_, entries),) = reply
    return [entry_id for entry_id, _ in entries]


async def groups_and_dead_letters(url: str, dead_letters: Mapping[str, str] | None = None) -> None:
    """The consumer groups, and one entry (with this ID) in each dead-letter stream named."""
    client = connect(url)
    try:
        await create_stream_groups(client)
        for stream, entry_id in (dead_letters or {}).items():
            await client.xadd(stream, {"event": "failed"}, id=entry_id)
    finally:
        await client.aclose()


async def debug_sleep(client: Redis, seconds: float) -> object:
    """Keeps the server busy (single-threaded) for `seconds`."""
    reply: object = await client.execute_command("DEBUG", "SLEEP", str(seconds))  # type: ignore[no-untyped-call]
    return reply


async def server_is_busy(port: int) -> bool:
    """Whether the server leaves a PING unanswered for a moment: it is inside a long command.
    A raw socket, so the unanswered PING leaves no client state behind."""
    reader, writer = await asyncio.open_connection("127.0.0.1", port)
    try:
        writer.write(b"PING\r\n")
        await writer.drain()
        await asyncio.wait_for(reader.readline(), 0.2)
    except TimeoutError:
        return True
    finally:
        writer.close()
        await writer.wait_closed()
    return False


def reasons(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        str(record.__dict__["reason"])
        for record in caplog.records
        if record.name == "orpycamcp.measure" and record.__dict__.get("signal") == "streams"
    ]


def assert_unmeasured(page: Page) -> None:
    assert page.measured("streams") == 0
    assert value_series(page, STREAMS_PREFIX) == []


# --- Realistic flows --------------------------------------------------------------------------------------------


async def test_pending_lists_and_dead_letters_follow_the_ids_written(redis: LocalRedis, db: Redis) -> None:
    await create_stream_groups(db)
    for entry_id in ("1764680000000-0", "1764680000000-1", "1764680005000-0", "1764680010123-4"):
        await db.xadd(DOCUMENTS, {"event": "document.signed"}, id=entry_id)

    # signature-service reads all four, acknowledges the two oldest: the two later ones stay pending.
    read = await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"}, count=4)
    assert delivered_ids(read) == [
        "1764680000000-0",
        "1764680000000-1",
        "1764680005000-0",
        "1764680010123-4",
    ]
    assert await db.xack(DOCUMENTS, "signature-service", "1764680000000-0", "1764680000000-1") == 2

    # workflow-service reads two; one is claimed by another consumer (still pending), the other acknowledged.
    await db.xreadgroup("workflow-service", "wf-1", {DOCUMENTS: ">"}, count=2)
    claimed = await db.xclaim(DOCUMENTS, "workflow-service", "wf-2", min_idle_time=0, message_ids=["1764680000000-0"])
    assert [entry[0] for entry in claimed] == ["1764680000000-0"]
    assert await db.xack(DOCUMENTS, "workflow-service", "1764680000000-1") == 1

    # notification-service on the document stream reads everything and acknowledges everything.
    await db.xreadgroup("notification-service", "notif-1", {DOCUMENTS: ">"})
    await db.xack(
        DOCUMENTS, "notification-service", "1764680000000-0", "1764680000000-1", "1764680005000-0", "1764680010123-4"
    )

    # notification-service on the workflow stream: two read, a third added later and not read yet.
    await db.xadd(WORKFLOWS, {"event": "workflow.step"}, id="1764690000500-7")
    await db.xadd(WORKFLOWS, {"event": "workflow.step"}, id="1764690001000-0")
    await db.xreadgroup("notification-service", "notif-1", {WORKFLOWS: ">"})
    await db.xadd(WORKFLOWS, {"event": "workflow.step"}, id="1764690002000-0")

    # Dead letters: three entries, the first trimmed away by MINID.
    for entry_id in ("1764600000000-0", "1764600000500-0", "1764600001000-3"):
        await db.xadd(SIGNATURE_DL, {"event": "signature.failed"}, id=entry_id)
    assert await db.xtrim(SIGNATURE_DL, minid="1764600000500", approximate=False) == 1
    # One dead letter, then trimmed away: the stream exists and is empty.
    await db.xadd(WORKFLOW_DL, {"event": "workflow.failed"}, id="1764600002000-0")
    assert await db.xtrim(WORKFLOW_DL, minid="1764600003000", approximate=False) == 1
    assert await db.exists(WORKFLOW_DL) == 1
    # The notification dead-letter stream was never written.

    page = await scrape_once(None, redis.url, signals="streams")

    assert page.measured("streams") == 1
    assert page.family(PENDING) == {
        pair(DOCUMENTS, "signature-service"): 2,
        pair(DOCUMENTS, "workflow-service"): 1,
        pair(DOCUMENTS, "notification-service"): 0,
        pair(WORKFLOWS, "notification-service"): 2,
    }
    assert page.family(OLDEST_PENDING) == {
        pair(DOCUMENTS, "signature-service"): 1764680005.0,
        pair(DOCUMENTS, "workflow-service"): 1764680000.0,
        pair(WORKFLOWS, "notification-service"): 1764690000.5,
    }
    assert page.family(DL_ENTRIES) == {only(SIGNATURE_DL): 2, only(WORKFLOW_DL): 0, only(NOTIFICATION_DL): 0}
    assert page.family(DL_OLDEST) == {only(SIGNATURE_DL): 1764600000.5}
    assert page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="streams") is not None


async def test_a_group_whose_consumers_died_shows_entries_waiting_and_nobody_reading(
    redis: LocalRedis, db: Redis
) -> None:
    await create_stream_groups(db)
    for index in range(1000):
        await db.xadd(DOCUMENTS, {"n": str(index)})
    # signature-service: one consumer read 10, acknowledged none, and died.
    await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"}, count=10)
    # notification-service: reads everything and acknowledges it, alive.
    read = await db.xreadgroup("notification-service", "notif-1", {DOCUMENTS: ">"})
    await db.xack(DOCUMENTS, "notification-service", *delivered_ids(read))
    # workflow-service: no consumer ever joined.
    await asyncio.sleep(1.2)
    await db.xadd(DOCUMENTS, {"n": "1000"})
    read = await db.xreadgroup("notification-service", "notif-1", {DOCUMENTS: ">"})  # alive: gets it at once
    await db.xack(DOCUMENTS, "notification-service", *delivered_ids(read))

    page = await scrape_once(None, redis.url, signals="streams")
    after = {c["name"]: c["idle"] / 1000 for c in await db.xinfo_consumers(DOCUMENTS, "signature-service")}

    assert page.measured("streams") == 1
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="signature-service") == 991
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 10
    assert page.get(CONSUMERS, stream=DOCUMENTS, group="signature-service") == 1
    idle = page.get(CONSUMER_IDLE, stream=DOCUMENTS, group="signature-service")
    assert idle is not None
    assert 1.2 <= idle <= after["sig-1"]
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="workflow-service") == 1001
    assert page.get(CONSUMERS, stream=DOCUMENTS, group="workflow-service") == 0
    assert page.get(CONSUMER_IDLE, stream=DOCUMENTS, group="workflow-service") is None  # nobody: absent
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="notification-service") == 0
    print("\n" + "\n".join(line for line in page.raw.decode().splitlines() if DOCUMENTS in line))
    alive = page.get(CONSUMER_IDLE, stream=DOCUMENTS, group="notification-service")
    alive_after = {c["name"]: c["idle"] / 1000 for c in await db.xinfo_consumers(DOCUMENTS, "notification-service")}
    assert alive is not None
    # Read 1.2 s after the dead one's last read: less idle than it, however long
    # the scrape itself took on a loaded machine.
    assert alive <= alive_after["notif-1"]
    assert alive < idle
    assert page.get(UNDELIVERED, stream=WORKFLOWS, group="notification-service") == 0  # an empty stream


async def test_undelivered_entries_redis_cannot_count_are_absent_and_the_rest_measured(
    redis: LocalRedis, db: Redis
) -> None:
    await create_stream_groups(db)
    ids = [await db.xadd(DOCUMENTS, {"n": str(index)}) for index in range(5)]
    await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"}, count=2)
    await db.xdel(DOCUMENTS, ids[3])  # after the group's last delivered ID: Redis cannot count what is left
    (info,) = [g for g in await db.xinfo_groups(DOCUMENTS) if g["name"] == "signature-service"]
    assert info["lag"] is None

    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="signature-service") is None
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 2
    assert page.get(CONSUMERS, stream=DOCUMENTS, group="signature-service") == 1

    await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"})  # read past the gap: counted again
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="signature-service") == 0
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 4


async def test_binary_payloads_and_names_are_measured_exactly(redis: LocalRedis, db: Redis) -> None:
    """msgpack field values, a field and a consumer named with bytes that are not UTF-8,
    a group of the same stream with such a name: nothing is decoded, nothing fails."""
    await create_stream_groups(db)
    raw = Redis.from_url(redis.url)  # bytes, as a msgpack or protobuf producer writes them
    try:
        field, value = b"\x82\xa4\xff\xfe", b"\x82\xa4type\xa6signed\xa2id\xcd\x04\xd2\xff\xfe\x00"
        for key, entry_id in (
            (SIGNATURE_DL, "1764600000000-1"),
            (SIGNATURE_DL, "1764600000500-0"),
            (DOCUMENTS, "1764680000000-0"),
        ):
            await raw.execute_command("XADD", key, entry_id, field, value)  # type: ignore[no-untyped-call]
        await raw.execute_command("XGROUP", "CREATE", DOCUMENTS, b"\xc3\x28-legacy", "0")  # type: ignore[no-untyped-call]
        for group, consumer in (("signature-service", b"\xff\xfe-worker"), (b"\xc3\x28-legacy", b"\xc0\xaf")):
            await raw.execute_command("XREADGROUP", "GROUP", group, consumer, "STREAMS", DOCUMENTS, ">")  # type: ignore[no-untyped-call]
    finally:
        await raw.aclose()

    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    assert page.get(DL_ENTRIES, stream=SIGNATURE_DL) == 2
    assert page.get(DL_OLDEST, stream=SIGNATURE_DL) == 1764600000.0
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 1
    assert page.get(OLDEST_PENDING, stream=DOCUMENTS, group="signature-service") == 1764680000.0
    assert page.get(CONSUMERS, stream=DOCUMENTS, group="signature-service") == 1
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="signature-service") == 0
    assert page.get(UNDELIVERED, stream=DOCUMENTS, group="workflow-service") == 1


async def test_the_oldest_pending_is_the_smallest_id_whoever_holds_it(redis: LocalRedis, db: Redis) -> None:
    await create_stream_groups(db)
    for entry_id in ("1764680000100-0", "1764680000200-0", "1764680000300-0"):
        await db.xadd(DOCUMENTS, {"event": "document.created"}, id=entry_id)
    await db.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"}, count=1)
    await db.xreadgroup("signature-service", "sig-2", {DOCUMENTS: ">"})
    # The oldest moves from sig-1 to sig-2: still pending, still the oldest.
    await db.xclaim(DOCUMENTS, "signature-service", "sig-2", min_idle_time=0, message_ids=["1764680000100-0"])
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 3
    assert page.get(OLDEST_PENDING, stream=DOCUMENTS, group="signature-service") == 1764680000.1

    # Acknowledging the oldest moves the oldest to the next smallest pending ID.
    await db.xack(DOCUMENTS, "signature-service", "1764680000100-0")
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 2
    assert page.get(OLDEST_PENDING, stream=DOCUMENTS, group="signature-service") == 1764680000.2


async def test_dead_letter_streams_that_do_not_exist_are_a_true_zero(redis: LocalRedis, db: Redis) -> None:
    await create_stream_groups(db)
    for stream in DEADLETTER_STREAMS:
        assert await db.exists(stream) == 0
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1
    assert page.family(DL_ENTRIES) == {only(stream): 0 for stream in DEADLETTER_STREAMS}
    assert page.family(DL_OLDEST) == {}
    assert page.family(PENDING) == {pair(stream, group): 0 for stream, group in STREAM_GROUPS}
    assert page.family(OLDEST_PENDING) == {}


async def test_measured_values_are_cached_for_the_ttl_and_shared_by_concurrent_scrapes(
    redis: LocalRedis, db: Redis
) -> None:
    await create_stream_groups(db)
    await db.xadd(SIGNATURE_DL, {"event": "signature.failed"}, id="1764600000000-0")
    clock = FakeClock()
    exporter = make_exporter(None, redis.url, clock.clock, ttl="100", deadline="30")
    try:
        pages = await asyncio.gather(*(scrape(exporter) for _ in range(5)))
        assert exporter.caches["streams"].measurements == 1
        assert {page.get(DL_ENTRIES, stream=SIGNATURE_DL) for page in pages} == {1}

        await db.xadd(SIGNATURE_DL, {"event": "signature.failed"}, id="1764600001000-0")
        cached = await scrape(exporter)
        assert cached.get(DL_ENTRIES, stream=SIGNATURE_DL) == 1  # still the cached measurement
        assert exporter.caches["streams"].measurements == 1

        clock.advance(110)
        fresh = await scrape(exporter)
        assert fresh.get(DL_ENTRIES, stream=SIGNATURE_DL) == 2
        assert fresh.get(DL_OLDEST, stream=SIGNATURE_DL) == 1764600000.0
        assert exporter.caches["streams"].measurements == 2
    finally:
        await exporter.close()


# --- One round trip, known keys only ----------------------------------------------------------------------------


async def test_one_measurement_runs_only_the_known_commands(redis: LocalRedis, db: Redis) -> None:
    await create_stream_groups(db)
    await db.config_resetstat()
    page = await scrape_once(None, redis.url, signals="streams")
    assert page.measured("streams") == 1

    stats = await db.info("commandstats")
    calls = {name.removeprefix("cmdstat_"): int(stat["calls"]) for name, stat in stats.items()}
    assert calls["xpending"] == 2 * len(STREAM_GROUPS) == 8  # the summary, and the oldest entry alone
    assert calls["xlen"] == len(DEADLETTER_STREAMS) == 3
    assert calls["xrange"] == len(DEADLETTER_STREAMS) == 3
    assert calls["xinfo|consumers"] == len(STREAM_GROUPS)
    assert calls["xinfo|groups"] == len({stream for stream, _ in STREAM_GROUPS}) == 2  # one per stream
    assert calls["xinfo|stream"] == calls["xinfo|groups"]
    for command in ("keys", "scan", "type", "exists"):
        assert command not in calls
    # Besides the reads: the connection handshake, and this test's own CONFIG RESETSTAT and INFO.
    handshake = {"hello", "client|setname", "client|setinfo"}
    reads = {
        "xpending",
        "xinfo|consumers",
        "xinfo|groups",
        "xinfo|stream",
        "xlen",
        "xrange",
        "config|resetstat",
        "info",
    }
    assert set(calls) - reads <= handshake


# --- Failures ---------------------------------------------------------------------------------------------------


async def test_a_missing_group_leaves_the_signal_unmeasured_and_postgres_measured(
    redis: LocalRedis, db: Redis, platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    for stream, group in STREAM_GROUPS:
        if group != "workflow-service":
            await db.xgroup_create(stream, group, id="0", mkstream=True)
    await db.xadd(SIGNATURE_DL, {"event": "signature.failed"}, id="1764600000000-0")
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")

    page = await scrape_once(platform.exporter_url, redis.url)

    assert_unmeasured(page)
    assert page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="streams") is None
    assert reasons(caplog) == ["missing_group"]
    for signal in POSTGRES_SIGNALS:
        assert page.measured(signal) == 1


async def nothing_there(db: Redis) -> None:
    assert await db.dbsize() == 0


async def a_dead_letter_key_of_another_type(db: Redis) -> None:
    await create_stream_groups(db)
    await db.set(WORKFLOW_DL, "not a stream")


@pytest.mark.parametrize(
    ("setup", "reason"),
    [(nothing_there, "missing_group"), (a_dead_letter_key_of_another_type, "redis_error")],
    ids=["a-missing-source-stream-is-a-missing-group", "a-dead-letter-key-of-another-type"],
)
async def test_what_redis_holds_leaves_the_signal_unmeasured(
    redis: LocalRedis,
    db: Redis,
    caplog: pytest.LogCaptureFixture,
    setup: Callable[[Redis], Awaitable[None]],
    reason: str,
) -> None:
    await setup(db)
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")
    page = await scrape_once(None, redis.url, signals="streams")
    assert_unmeasured(page)
    assert reasons(caplog) == [reason]


async def test_redis_stopped_fails_fast_and_recovers_without_a_new_exporter(
    own_redis: LocalRedis, platform: Platform, caplog: pytest.LogCaptureFixture
) -> None:
    await groups_and_dead_letters(own_redis.url, {NOTIFICATION_DL: "1764600000000-0"})
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")
    clock = FakeClock()
    exporter = make_exporter(platform.exporter_url, own_redis.url, clock.clock, ttl="3", deadline="2")
    try:
        page = await scrape(exporter)
        assert page.get(DL_ENTRIES, stream=NOTIFICATION_DL) == 1

        own_redis.stop()
        clock.advance(3.1)
        page = await scrape(exporter)
        assert_unmeasured(page)
        # A refused connection is reported as such, not retried until the deadline cuts it
        # (which would read `timeout`).
        assert reasons(caplog) == ["connection_error"]
        for signal in POSTGRES_SIGNALS:
            assert page.measured(signal) == 1
        last_success = page.get("orpycamcp_signal_last_success_timestamp_seconds", signal="streams")
        assert last_success is not None  # the last success is kept while failing

        own_redis.start()
        await groups_and_dead_letters(own_redis.url)  # nothing persisted across the restart
        clock.advance(3.1)
        page = await scrape(exporter)
        assert page.measured("streams") == 1
        assert page.get(DL_ENTRIES, stream=NOTIFICATION_DL) == 0
        assert page.family(PENDING) == {pair(stream, group): 0 for stream, group in STREAM_GROUPS}
        for signal in POSTGRES_SIGNALS:
            assert page.measured(signal) == 1
    finally:
        await exporter.close()


async def test_a_restart_between_measurements_costs_no_measurement(own_redis: LocalRedis) -> None:
    await groups_and_dead_letters(own_redis.url)
    clock = FakeClock()
    exporter = make_exporter(None, own_redis.url, clock.clock, ttl="100", deadline="30")
    try:
        assert (await scrape(exporter)).measured("streams") == 1
        own_redis.stop()
        own_redis.start()
        await groups_and_dead_letters(own_redis.url, {SIGNATURE_DL: "1764600004000-0"})
        clock.advance(110)
        # The pooled connection the server closed is replaced when taken, not reported as a failure.
        page = await scrape(exporter)
        assert page.measured("streams") == 1
        assert page.get(DL_OLDEST, stream=SIGNATURE_DL) == 1764600004.0
    finally:
        await exporter.close()


async def test_a_redis_slower_than_the_deadline_is_cut_at_the_deadline_and_recovers(
    own_redis: LocalRedis, caplog: pytest.LogCaptureFixture
) -> None:
    client = connect(own_redis.url)
    await create_stream_groups(client)
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")
    deadline = 3.0
    clock = FakeClock()
    exporter = make_exporter(None, own_redis.url, clock.clock, ttl="100", deadline=str(deadline))
    try:
        assert (await scrape(exporter)).measured("streams") == 1  # the connection is open and pooled
        clock.advance(110)
        own_redis.pause()
        try:
            started = time.monotonic()
            page = await scrape(exporter)
            elapsed = time.monotonic() - started
        finally:
            own_redis.resume()
        assert_unmeasured(page)
        assert deadline - 0.05 <= elapsed < deadline + 2
        assert reasons(caplog) == ["timeout"]

        # Whatever the cut measurement left unread is not served to the next one.
        await client.xadd(DOCUMENTS, {"event": "document.signed"}, id="1764680020000-0")
        await client.xreadgroup("signature-service", "sig-1", {DOCUMENTS: ">"})
        clock.advance(110)
        page = await scrape(exporter)
        assert page.measured("streams") == 1
        assert page.get(PENDING, stream=DOCUMENTS, group="signature-service") == 1
        assert page.get(OLDEST_PENDING, stream=DOCUMENTS, group="signature-service") == 1764680020.0
    finally:
        await exporter.close()
        await client.aclose()


async def test_a_new_connection_to_a_frozen_redis_is_cut_at_the_deadline(
    own_redis: LocalRedis, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")
    deadline = 0.5
    exporter = make_exporter(None, own_redis.url, ttl="1", deadline=str(deadline))
    own_redis.pause()  # the kernel still accepts the connection; the handshake gets no answer
    try:
        started = time.monotonic()
        page = await scrape(exporter)
        elapsed = time.monotonic() - started
    finally:
        own_redis.resume()
        await exporter.close()
    assert_unmeasured(page)
    assert elapsed < deadline + 2
    assert reasons(caplog) == ["timeout"]


async def test_a_server_busy_past_the_deadline_is_a_timeout(
    redis: LocalRedis, db: Redis, caplog: pytest.LogCaptureFixture
) -> None:
    await create_stream_groups(db)
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")
    deadline = 0.5
    exporter = make_exporter(None, redis.url, ttl="1", deadline=str(deadline))
    busy = connect(redis.url)
    try:
        assert await busy.ping()
        # Busy 3 s (below the clients' 5 s socket timeout): seen busy within 1.5 s, the scrape's
        # commands still wait past its 0.5 s deadline, with time to spare on a loaded machine.
        sleeping = asyncio.create_task(debug_sleep(busy, 3))
        try:
            assert await wait_until(lambda: server_is_busy(redis.port), 1.5), "DEBUG SLEEP never started"
            started = time.monotonic()
            page = await scrape(exporter)
            elapsed = time.monotonic() - started
        finally:
            assert await sleeping == "OK"
        assert_unmeasured(page)
        assert elapsed < deadline + 2
        assert reasons(caplog) == ["timeout"]
    finally:
        await busy.aclose()
        await exporter.close()


# --- Configuration ----------------------------------------------------------------------------------------------


async def test_without_redis_the_signal_is_not_enabled(platform: Platform) -> None:
    exporter = make_exporter(platform.exporter_url)
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert "streams" not in exporter.caches
    assert [key for key in page.values if ("signal", "streams") in key[1]] == []
    assert value_series(page, STREAMS_PREFIX) == []
    for signal in POSTGRES_SIGNALS:
        assert page.measured(signal) == 1
    with pytest.raises(ConfigError, match="redis"):
        make_exporter(platform.exporter_url, signals="streams")


# --- Parsing the replies ----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("entry_id", "seconds"),
    [
        (b"1764680000000-0", 1764680000.0),
        (b"1764680000500-42", 1764680000.5),
        (b"1764680000123-18446744073709551615", 1764680000.123),
        (b"0-1", 0.0),
    ],
)
async def test_entry_time_is_the_millisecond_part(entry_id: bytes, seconds: float) -> None:
    assert entry_time("XRANGE s", entry_id) == seconds


@pytest.mark.parametrize("ahead", [FUTURE_TOLERANCE_SECONDS + 60, 10 * 365 * 86400.0, 18446744073709551615 / 1000])
async def test_an_entry_id_in_the_future_is_a_contract_violation(ahead: float) -> None:
    # An ID given explicitly to XADD can carry any time; an age computed from it would be negative.
    milliseconds = min(int((time.time() + ahead) * 1000), 18446744073709551615)
    with pytest.raises(ContractViolation, match="in the future") as raised:
        entry_time("XRANGE s", f"{milliseconds}-0".encode())
    assert classify(raised.value, 1.0).reason == "contract_violation"


async def test_an_entry_id_within_the_clock_skew_tolerance_is_kept() -> None:
    milliseconds = int((time.time() + FUTURE_TOLERANCE_SECONDS - 60) * 1000)
    assert entry_time("XRANGE s", f"{milliseconds}-0".encode()) == milliseconds / 1000


@pytest.mark.parametrize(
    "entry_id",
    [
        None,
        b"",
        b"1764680000000",
        b"1764680000000-",
        b"-0",
        b"1764680000000-0-0",
        b"1764680000000-0\n",
        b" 1764680000000-0",
        b"1764680000000-x",
        b"-1764680000000-0",
        b"1.5-0",
        b"18446744073709551616-0",
        b"0-18446744073709551616",
        "١٢٣-0".encode(),
        "1764680000000-0",  # text, not the bytes Redis sends
        1764680000000,
        ["1764680000000-0"],
    ],
)
async def test_entry_time_rejects_what_is_not_an_entry_id(entry_id: object) -> None:
    with pytest.raises(ContractViolation) as raised:
        entry_time("XPENDING s g", entry_id)
    assert raised.value.signal == "streams"
    assert raised.value.where == "XPENDING s g"
    assert classify(raised.value, 1.0).reason == "contract_violation"


@pytest.mark.parametrize(
    "summary",
    [
        None,
        [3, b"1-0", b"2-0", []],
        {},
        {"pending": None, "min": b"1-0"},
        {"pending": "3", "min": b"1-0"},
        {"pending": True, "min": b"1-0"},
        {"pending": -1, "min": None},
        {"pending": 2, "min": None},
        {"pending": 2},
        {"pending": 2, "min": b"not-an-id"},
    ],
)
async def test_a_malformed_pending_summary_is_a_contract_violation(summary: object) -> None:
    with pytest.raises(ContractViolation) as raised:
        pending_summary("XPENDING s g", summary)
    assert raised.value.reason == "contract_violation"


async def test_pending_summaries_parse() -> None:
    assert pending_summary("w", {"pending": 0, "min": None, "max": None, "consumers": []}) == (0, None)
    summary = {"pending": 3, "min": b"1764680000250-0", "max": b"1764680009000-0", "consumers": []}
    assert pending_summary("w", summary) == (3, 1764680000.25)


@pytest.mark.parametrize("entries", [None, b"1-0", [], [None], [()], [(b"bad", {})], 5])
async def test_a_malformed_first_entry_is_a_contract_violation(entries: object) -> None:
    with pytest.raises(ContractViolation):
        first_entry_time("XRANGE s", entries)


SOURCE_STREAMS = tuple(dict.fromkeys(stream for stream, _ in STREAM_GROUPS))


def groups_reply(stream: str, lag: object = 0) -> list[dict[str, object]]:
    """An XINFO GROUPS reply as redis-py parses it: field names text, values bytes or integers."""
    return [
        {"name": group.encode(), "consumers": 0, "pending": 0, "last-delivered-id": b"0-0", "lag": lag}
        for named, group in STREAM_GROUPS
        if named == stream
    ]


def stream_reply(length: int = 0, last: bytes = b"0-0", added: int = 0) -> dict[str, object]:
    """An XINFO STREAM reply as redis-py parses it (the fields the lag is checked with)."""
    return {"length": length, "last-generated-id": last, "entries-added": added, "first-entry": None}


def reading(**replace: tuple[object, ...]) -> StreamsReading:
    fields: dict[str, tuple[object, ...]] = {
        "pending": tuple({"pending": 0, "min": None} for _ in STREAM_GROUPS),
        "oldest_pending": tuple([] for _ in STREAM_GROUPS),
        "consumers": tuple([] for _ in STREAM_GROUPS),
        "groups": tuple(groups_reply(stream) for stream in SOURCE_STREAMS),
        "stream_infos": tuple(stream_reply() for _ in SOURCE_STREAMS),
        "lengths": tuple(0 for _ in DEADLETTER_STREAMS),
        "first_entries": tuple([] for _ in DEADLETTER_STREAMS),
    }
    fields.update(replace)
    return StreamsReading(
        pending=fields["pending"],
        oldest_pending=fields["oldest_pending"],
        consumers=fields["consumers"],
        groups=fields["groups"],
        stream_infos=fields["stream_infos"],
        lengths=fields["lengths"],
        first_entries=fields["first_entries"],
    )


async def test_samples_of_a_well_formed_reading() -> None:
    samples = samples_of(
        reading(
            pending=({"pending": 1, "min": b"1764680000000-0"}, *({"pending": 0, "min": None},) * 3),
            lengths=(2, 0, 0),
            first_entries=([(b"1764600000000-1", {"e": "x"})], [], []),
        )
    )
    assert {(sample.family, sample.labels, sample.value) for sample in samples} == {
        (PENDING, STREAM_GROUPS[0], 1),
        (OLDEST_PENDING, STREAM_GROUPS[0], 1764680000.0),
        *((PENDING, group, 0) for group in STREAM_GROUPS[1:]),
        *((UNDELIVERED, group, 0) for group in STREAM_GROUPS),
        *((UNKNOWN_GROUPS, (reason,), 0) for reason in UNDELIVERED_UNKNOWN_REASONS),
        *((CONSUMERS, group, 0) for group in STREAM_GROUPS),
        (DL_ENTRIES, (DEADLETTER_STREAMS[0],), 2),
        (DL_OLDEST, (DEADLETTER_STREAMS[0],), 1764600000.0),
        *((DL_ENTRIES, (stream,), 0) for stream in DEADLETTER_STREAMS[1:]),
    }


@pytest.mark.parametrize(
    "replace",
    [
        {"pending": ({"pending": 1, "min": b"1764680000000"}, *({"pending": 0, "min": None},) * 3)},
        {"pending": ("garbage", *({"pending": 0, "min": None},) * 3)},
        {"lengths": (None, 0, 0)},
        {"lengths": (-1, 0, 0)},
        {"lengths": (1, 0, 0)},  # one entry, but no first entry
        {"lengths": (1, 0, 0), "first_entries": ([(b"1764600000000", {})], [], [])},
        {"groups": ([], *(groups_reply(stream) for stream in SOURCE_STREAMS[1:]))},  # a group not listed
        {"groups": (groups_reply(SOURCE_STREAMS[0], lag=-1), *(groups_reply(s) for s in SOURCE_STREAMS[1:]))},
        {"groups": ("garbage", *(groups_reply(stream) for stream in SOURCE_STREAMS[1:]))},
        {"consumers": ([{"name": b"c", "idle": None}], *([] for _ in STREAM_GROUPS[1:]))},
        {"consumers": (b"garbage", *([] for _ in STREAM_GROUPS[1:]))},
        {"stream_infos": ("garbage", stream_reply())},
        {"stream_infos": (stream_reply(length=-1), stream_reply())},
        {"stream_infos": (stream_reply(last=b"10"), stream_reply())},
        {"stream_infos": (stream_reply(added=-1), stream_reply())},
    ],
)
async def test_a_malformed_reading_is_a_contract_violation(replace: dict[str, tuple[object, ...]]) -> None:
    with pytest.raises(ContractViolation):
        samples_of(reading(**replace))


async def test_the_entry_past_the_first_node_is_read_from_101_entries_and_not_from_100() -> None:
    """XRANGE ... COUNT 101: the 101st entry's time (its ID's milliseconds), none with 100 entries."""
    entries: list[tuple[bytes, dict[str, str]]] = [(f"{1764600000000 + n}-0".encode(), {}) for n in range(101)]
    samples = samples_of(reading(lengths=(101, 0, 0), first_entries=(entries, [], [])))
    assert [(s.labels, s.value) for s in samples if s.family == DL_ENTRY_101] == [((DEAD,), 1764600000.1)]
    hundred = samples_of(reading(lengths=(100, 0, 0), first_entries=(entries[:100], [], [])))
    assert [s for s in hundred if s.family == DL_ENTRY_101] == []


async def test_undelivered_and_consumers_parse_from_the_xinfo_replies() -> None:
    consumers = [
        {"name": b"\xff\xfe-dead", "pending": 3, "idle": 90_000, "inactive": 90_000},
        {"name": b"alive", "pending": 0, "idle": 1_500, "inactive": 600_000},
    ]
    samples = samples_of(
        reading(
            groups=(groups_reply(SOURCE_STREAMS[0], lag=1000), *(groups_reply(s) for s in SOURCE_STREAMS[1:])),
            stream_infos=(stream_reply(length=1000, last=b"1000-0"), stream_reply()),
            consumers=(consumers, *([] for _ in STREAM_GROUPS[1:])),
        )
    )
    values = {(sample.family, sample.labels): sample.value for sample in samples}
    assert values[(UNDELIVERED, STREAM_GROUPS[0])] == 1000
    assert values[(CONSUMERS, STREAM_GROUPS[0])] == 2
    assert values[(CONSUMER_IDLE, STREAM_GROUPS[0])] == 1.5  # the most recently seen consumer
    assert (CONSUMER_IDLE, STREAM_GROUPS[1]) not in values  # no consumer: absent, not 0


async def test_a_lag_redis_cannot_count_leaves_only_that_series_absent() -> None:
    samples = samples_of(
        reading(groups=(groups_reply(SOURCE_STREAMS[0], lag=None), *(groups_reply(s) for s in SOURCE_STREAMS[1:])))
    )
    values = {(sample.family, sample.labels): sample.value for sample in samples}
    first_stream = {pair for pair in STREAM_GROUPS if pair[0] == SOURCE_STREAMS[0]}
    assert {labels for family, labels in values if family == UNDELIVERED} == set(STREAM_GROUPS) - first_stream
    assert all(values[(PENDING, pair)] == 0 for pair in STREAM_GROUPS)


async def test_a_server_without_lag_is_redis_too_old() -> None:
    old = [{key: value for key, value in group.items() if key != "lag"} for group in groups_reply(SOURCE_STREAMS[0])]
    with pytest.raises(RedisTooOld) as raised:
        samples_of(reading(groups=(old, *(groups_reply(s) for s in SOURCE_STREAMS[1:]))))
    assert classify(raised.value, 1.0).reason == "redis_too_old"
    assert "7.0" in str(raised.value)


async def test_a_wrong_redis_password_is_authentication_failed(caplog: pytest.LogCaptureFixture) -> None:
    capture_measure(caplog)
    server = start_redis()
    try:
        client = Redis.from_url(server.url)
        try:
            await client.config_set("requirepass", "right-secret-4b1")
        finally:
            await client.aclose()
        base = f"redis://:{{}}@127.0.0.1:{server.port}/0"
        for password in ("wrong-secret-77c", ""):
            caplog.clear()
            exporter = make_exporter(None, base.format(password) if password else server.url)
            try:
                page = await scrape(exporter)
            finally:
                await exporter.close()
            assert page.measured("streams") == 0
            assert value_series(page, STREAMS_PREFIX) == []
            logged = [r for r in caplog.records if r.name == "orpycamcp.measure"]
            assert [str(r.__dict__["reason"]) for r in logged] == ["authentication_failed"]
            assert all("wrong-secret-77c" not in r.getMessage() for r in logged)
    finally:
        server.remove()


def capture_measure(caplog: pytest.LogCaptureFixture) -> None:
    caplog.set_level(logging.WARNING, logger="orpycamcp.measure")


def first_replaced(field: str, value: object, **also: tuple[object, ...]) -> dict[str, tuple[object, ...]]:
    """A reading's fields with the first reply of `field` replaced by `value`."""
    default = {
        "pending": ({"pending": 0, "min": None},) * len(STREAM_GROUPS),
        "oldest_pending": ([],) * len(STREAM_GROUPS),
        "consumers": ([],) * len(STREAM_GROUPS),
        "groups": tuple(groups_reply(stream) for stream in SOURCE_STREAMS),
        "stream_infos": tuple(stream_reply() for _ in SOURCE_STREAMS),
        "lengths": (0,) * len(DEADLETTER_STREAMS),
        "first_entries": ([],) * len(DEADLETTER_STREAMS),
    }
    return {field: (value, *default[field][1:]), **also}


STREAM, GROUP = STREAM_GROUPS[0]
DEAD = DEADLETTER_STREAMS[0]
PAST_ID = b"18446744073709551616-0"  # a millisecond part one past 64 bits


@pytest.mark.parametrize(
    ("replace", "where", "problem"),
    [
        (
            first_replaced("pending", "garbage"),
            f"XPENDING {STREAM} {GROUP}",
            "summary 'garbage' is not an XPENDING summary",
        ),
        (
            first_replaced("pending", {"min": None}),
            f"XPENDING {STREAM} {GROUP}",
            "summary {'min': None} is not an XPENDING summary",
        ),
        (
            first_replaced("pending", {"pending": "3"}),
            f"XPENDING {STREAM} {GROUP}",
            "count '3' is not a non-negative integer",
        ),
        (
            first_replaced("pending", {"pending": 1, "min": PAST_ID}),
            f"XPENDING {STREAM} {GROUP}",
            f"entry ID {PAST_ID!r} does not parse",
        ),
        (first_replaced("groups", "garbage"), f"XINFO GROUPS {STREAM}", "reply 'garbage' is not a list of records"),
        (first_replaced("groups", [None]), f"XINFO GROUPS {STREAM}", "record None is not a map of fields"),
        (first_replaced("groups", [{"name": "text"}]), f"XINFO GROUPS {STREAM}", "group name 'text' is not a string"),
        (
            first_replaced("groups", []),
            f"XINFO GROUPS {STREAM} ({GROUP})",
            "the group is not in the stream's XINFO GROUPS",
        ),
        (
            first_replaced("groups", groups_reply(STREAM, lag=-1)),
            f"XINFO GROUPS {STREAM} ({GROUP})",
            "count -1 is not a non-negative integer",
        ),
        (
            first_replaced("consumers", b"garbage"),
            f"XINFO CONSUMERS {STREAM} {GROUP}",
            "reply b'garbage' is not a list of records",
        ),
        (
            first_replaced("consumers", [{"idle": None}]),
            f"XINFO CONSUMERS {STREAM} {GROUP}",
            "count None is not a non-negative integer",
        ),
        (
            first_replaced("oldest_pending", b"garbage"),
            f"XPENDING {STREAM} {GROUP} - + 1",
            "reply b'garbage' is not a list of pending entries",
        ),
        (
            first_replaced("oldest_pending", [{"message_id": b"1-0"}]),
            f"XPENDING {STREAM} {GROUP} - + 1",
            "entry {'message_id': b'1-0'} is not a pending entry",
        ),
        (first_replaced("oldest_pending", [5]), f"XPENDING {STREAM} {GROUP} - + 1", "entry 5 is not a pending entry"),
        (
            first_replaced("oldest_pending", [{"message_id": PAST_ID, "times_delivered": 1}]),
            f"XPENDING {STREAM} {GROUP} - + 1",
            f"entry ID {PAST_ID!r} does not parse",
        ),
        (
            first_replaced("oldest_pending", [{"message_id": b"1-0", "times_delivered": -1}]),
            f"XPENDING {STREAM} {GROUP} - + 1",
            "count -1 is not a non-negative integer",
        ),
        (first_replaced("stream_infos", "garbage"), f"XINFO STREAM {STREAM}", "reply 'garbage' is not a map of fields"),
        (
            first_replaced("first_entries", [(b"1-0", {}), *((b"2-0", {}),) * 99, b"junk"], lengths=(101, 0, 0)),
            f"XRANGE {DEAD}",
            "entry b'junk' is not an (ID, fields) pair",
        ),
        (first_replaced("lengths", True), f"XLEN {DEAD}", "count True is not a non-negative integer"),
        (
            first_replaced("first_entries", [], lengths=(1, 0, 0)),
            f"XRANGE {DEAD}",
            "stream has entries but no first entry",
        ),
        (
            first_replaced("first_entries", b"1-0", lengths=(1, 0, 0)),
            f"XRANGE {DEAD}",
            "reply b'1-0' is not a list of entries",
        ),
        (
            first_replaced("first_entries", [()], lengths=(1, 0, 0)),
            f"XRANGE {DEAD}",
            "entry () is not an (ID, fields) pair",
        ),
        (
            first_replaced("first_entries", [b"1-0"], lengths=(1, 0, 0)),
            f"XRANGE {DEAD}",
            "entry b'1-0' is not an (ID, fields) pair",
        ),
        (
            first_replaced("first_entries", [(PAST_ID, {})], lengths=(1, 0, 0)),
            f"XRANGE {DEAD}",
            f"entry ID {PAST_ID!r} does not parse",
        ),
    ],
)
async def test_a_malformed_reply_names_its_command_and_what_is_wrong(
    replace: dict[str, tuple[object, ...]], where: str, problem: str
) -> None:
    with pytest.raises(ContractViolation) as raised:
        samples_of(reading(**replace))
    assert (raised.value.signal, raised.value.where, raised.value.problem) == ("streams", where, problem)


async def test_an_entry_id_in_the_future_names_its_command() -> None:
    milliseconds = int((time.time() + FUTURE_TOLERANCE_SECONDS + 3600) * 1000)
    with pytest.raises(ContractViolation) as raised:
        entry_time("XRANGE s", f"{milliseconds}-0".encode())
    assert (raised.value.signal, raised.value.where) == ("streams", "XRANGE s")


async def test_a_server_without_lag_is_named_with_the_command_and_the_field() -> None:
    old = [{key: value for key, value in group.items() if key != "lag"} for group in groups_reply(STREAM)]
    with pytest.raises(RedisTooOld) as raised:
        samples_of(reading(**first_replaced("groups", old)))
    assert (raised.value.command, raised.value.missing, raised.value.version) == (
        f"XINFO GROUPS {STREAM} ({GROUP})",
        "lag",
        "7.0",
    )


@pytest.mark.parametrize("idle", [[1_500, 90_000, 30_000], [90_000, 30_000, 1_500], [30_000, 1_500, 90_000]])
async def test_the_consumers_idle_time_is_the_smallest_in_any_order(idle: list[int]) -> None:
    consumers = [{"name": f"c{n}".encode(), "idle": ms} for n, ms in enumerate(idle)]
    samples = samples_of(reading(**first_replaced("consumers", consumers)))
    values = {(sample.family, sample.labels): sample.value for sample in samples}
    assert values[(CONSUMERS, STREAM_GROUPS[0])] == 3
    assert values[(CONSUMER_IDLE, STREAM_GROUPS[0])] == 1.5


async def test_without_redis_streams_names_itself_unconfigured() -> None:
    with pytest.raises(SourceNotConfigured) as raised:
        await SIGNAL.measure(Sources())
    assert raised.value.signal == "streams"


@pytest.mark.parametrize(
    ("group", "stream", "reason"),
    [
        ({"lag": None}, stream_reply(length=9, last=b"9-0", added=9), "not_counted"),
        ({"lag": 9}, stream_reply(length=5, last=b"9-0", added=9), "exceeds_length"),
        ({"lag": 4, "last-delivered-id": b"9-0"}, stream_reply(length=5, last=b"9-0", added=9), "not_zero_at_last_id"),
        ({"lag": 4, "entries-read": 3}, stream_reply(length=5, last=b"9-0", added=9), "counters_disagree"),
    ],
)
async def test_a_lag_that_breaks_a_rule_is_withheld_naming_it(
    group: dict[str, object], stream: dict[str, object], reason: str
) -> None:
    first, *others = groups_reply(SOURCE_STREAMS[0])
    samples = samples_of(
        reading(
            groups=([first | group, *others], groups_reply(SOURCE_STREAMS[1])), stream_infos=(stream, stream_reply())
        )
    )
    values = {(sample.family, sample.labels): sample.value for sample in samples}
    assert (UNDELIVERED, STREAM_GROUPS[0]) not in values
    assert values[(UNKNOWN, STREAM_GROUPS[0])] == 1
    assert {labels for family, labels in values if family == UNKNOWN} == {STREAM_GROUPS[0]}
    assert {labels[0]: value for (family, labels), value in values.items() if family == UNKNOWN_GROUPS} == {
        other: int(other == reason) for other in UNDELIVERED_UNKNOWN_REASONS
    }
    assert values[(PENDING, STREAM_GROUPS[0])] == 0  # the group's other series stay
