"""streams: consumer groups (pending, undelivered, their consumers) and
dead-letter streams on Redis.

A dead-letter stream that does not exist yet is a true 0. A missing source
stream or group (NOGROUP), or a reply or entry ID that does not parse, is a
failure. Replies are bytes; a group is found in `XINFO GROUPS` by its name's
UTF-8 bytes, and nothing else is decoded (a payload or a consumer's name can
be any bytes).

Undelivered entries are `XINFO GROUPS`' `lag` (Redis 7.0+; an older server,
whose reply has no `lag`, makes the signal unmeasured with `redis_too_old`),
published only when it agrees with the stream's `XINFO STREAM` of the same
round trip (exporter/signals/streams_lag.py); otherwise, or when Redis answers
nil, the series is absent, never a guess, and the group is marked unknown with
the rule it failed.
The consumers' idle time is the smallest `idle` of `XINFO CONSUMERS` (any
Redis with streams); absent when the group has no consumer.

The delivery count of each group's oldest pending entry comes from XPENDING's
extended form limited to one entry (bounded, whatever the size of the pending
list), sent right after the summary; it is absent unless that entry is the
summary's smallest pending ID (an acknowledgement between the two commands).
Each dead-letter stream's first 101 entries are read (bounded): the first
gives the oldest entry, the 101st one that cannot share the first stream node
with it, whose age tells a trim that stopped (docs/streams.md).

The groups and dead-letter streams read are those of the registry: the
built-in ones and those declared at start, all in one round trip.
"""

from __future__ import annotations

import functools
from collections import Counter
from collections.abc import Iterator, Mapping, Sequence
from typing import cast

from exporter.errors import ContractViolation, MeasurementError
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, not_in_future
from exporter.signals.stream_replies import NAME as NAME  # the signal's name, imported from here
from exporter.signals.stream_replies import entry_id, reply_count
from exporter.signals.streams_lag import StreamState, stream_state, undelivered
from exporter.sources import Sources
from exporter.sources.redis.source import FIRST_NODE_ENTRIES, StreamsQuery, StreamsReading
from registry import Registry
from registry.families import (
    DEADLETTER_ENTRIES,
    DEADLETTER_ENTRY_101,
    DEADLETTER_OLDEST,
    STREAM_CONSUMER_IDLE,
    STREAM_CONSUMERS,
    STREAM_OLDEST_PENDING,
    STREAM_OLDEST_PENDING_DELIVERIES,
    STREAM_PENDING,
    STREAM_UNDELIVERED,
    STREAM_UNDELIVERED_UNKNOWN,
    STREAM_UNDELIVERED_UNKNOWN_GROUPS,
)
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS, UNDELIVERED_UNKNOWN_REASONS


def entry_time(where: str, raw: object) -> float:
    """Seconds since the epoch encoded in a stream entry ID ("<ms>-<seq>")."""
    # An ID given explicitly to XADD can carry any time, the future included.
    return not_in_future(NAME, where, entry_id(where, raw)[0] / 1000)


def pending_summary(where: str, summary: object) -> tuple[int, float | None]:
    """(pending count, time of the smallest pending ID or None) from an XPENDING summary."""
    if not isinstance(summary, Mapping) or "pending" not in summary:
        raise ContractViolation(NAME, where, f"summary {summary!r} is not an XPENDING summary")
    count = reply_count(where, summary["pending"])
    if count == 0:
        return 0, None
    return count, entry_time(where, summary.get("min"))


def oldest_pending_deliveries(where: str, summary: object, entries: object) -> int | None:
    """The delivery count of the oldest pending entry, from an XPENDING ... - + 1 reply
    (as redis-py parses it); None when it holds no entry or another entry than
    the summary's smallest pending ID."""
    listed = _list(where, entries, "pending entries")
    if not listed:
        return None
    entry = listed[0]
    if not isinstance(entry, Mapping) or "message_id" not in entry or "times_delivered" not in entry:
        raise ContractViolation(NAME, where, f"entry {entry!r} is not a pending entry")
    entry_time(where, entry["message_id"])
    deliveries = reply_count(where, entry["times_delivered"])
    if not isinstance(summary, Mapping) or summary.get("min") != entry["message_id"]:
        return None
    return deliveries


def _list(where: str, reply: object, what: str) -> Sequence[object]:
    """A reply that must be a list (of `what`)."""
    if isinstance(reply, str | bytes) or not isinstance(reply, Sequence):
        raise ContractViolation(NAME, where, f"reply {reply!r} is not a list of {what}")
    return reply


def _records(where: str, reply: object) -> Sequence[Mapping[str, object]]:
    """An XINFO reply: a list of records, each a map from field name to value."""
    records = _list(where, reply, "records")
    for record in records:
        if not isinstance(record, Mapping):
            raise ContractViolation(NAME, where, f"record {record!r} is not a map of fields")
    return cast(Sequence[Mapping[str, object]], records)


def groups_by_name(where: str, reply: object) -> dict[bytes, Mapping[str, object]]:
    """The records of an XINFO GROUPS reply by the group's name, as bytes."""
    groups: dict[bytes, Mapping[str, object]] = {}
    for record in _records(where, reply):
        name = record.get("name")
        if not isinstance(name, bytes):
            raise ContractViolation(NAME, where, f"group name {name!r} is not a string")
        groups[name] = record
    return groups


def consumers_idle(where: str, reply: object) -> tuple[int, float | None]:
    """(consumers, seconds since the most recently seen one was idle or None) from XINFO CONSUMERS."""
    records = _records(where, reply)
    idle: float | None = None
    for record in records:
        ms = reply_count(where, record.get("idle"))
        idle = ms / 1000 if idle is None else min(idle, ms / 1000)
    return len(records), idle


def _pair_time(where: str, entry: object) -> float:
    """Time of an XRANGE entry, an (ID, fields) pair."""
    if isinstance(entry, str | bytes) or not isinstance(entry, Sequence) or not entry:
        raise ContractViolation(NAME, where, f"entry {entry!r} is not an (ID, fields) pair")
    return entry_time(where, entry[0])


def first_entry_time(where: str, entries: object) -> float:
    """Time of the first entry of an XRANGE ... COUNT n reply that holds one."""
    listed = _list(where, entries, "entries")
    if not listed:
        raise ContractViolation(NAME, where, "stream has entries but no first entry")
    return _pair_time(where, listed[0])


def entry_101_time(where: str, entries: Sequence[object]) -> float | None:
    """Time of the entry past the first stream node's capacity in an XRANGE ... COUNT 101
    reply; None when the reply holds 100 entries or fewer."""
    if len(entries) <= FIRST_NODE_ENTRIES:
        return None
    return _pair_time(where, entries[FIRST_NODE_ENTRIES])


def samples_from(
    reading: StreamsReading,
    groups: Sequence[tuple[str, str]] = STREAM_GROUPS,
    deadletter_streams: Sequence[str] = DEADLETTER_STREAMS,
    withheld_counts: bool = True,
) -> Iterator[Sample]:
    """The samples of `reading`, made as they are read: the validation that
    consumes them hands the event loop back as it goes (exporter/validate.py),
    and each stream's XINFO GROUPS is looked at when its first pair is."""
    streams = reading.streams if reading.streams is not None else dict.fromkeys(stream for stream, _ in groups)
    group_replies = dict(zip(streams, reading.groups, strict=True))
    stream_replies = dict(zip(streams, reading.stream_infos, strict=True))
    infos: dict[str, tuple[dict[bytes, Mapping[str, object]], StreamState]] = {}
    withheld: Counter[str] = Counter()
    for (stream, group), summary, oldest_entry, consumers in zip(
        groups, reading.pending, reading.oldest_pending, reading.consumers, strict=True
    ):
        labels = (stream, group)
        count, oldest = pending_summary(f"XPENDING {stream} {group}", summary)
        yield Sample(STREAM_PENDING.name, labels, count)
        if oldest is not None:
            yield Sample(STREAM_OLDEST_PENDING.name, labels, oldest)
        deliveries = oldest_pending_deliveries(f"XPENDING {stream} {group} - + 1", summary, oldest_entry)
        if deliveries is not None:
            yield Sample(STREAM_OLDEST_PENDING_DELIVERIES.name, labels, deliveries)
        info = infos.get(stream)
        if info is None:
            info = infos[stream] = (
                groups_by_name(f"XINFO GROUPS {stream}", group_replies[stream]),
                stream_state(f"XINFO STREAM {stream}", stream_replies[stream]),
            )
        lag = undelivered(f"XINFO GROUPS {stream} ({group})", info[0].get(group.encode()), info[1])
        if isinstance(lag, int):
            yield Sample(STREAM_UNDELIVERED.name, labels, lag)
        else:
            withheld[lag] += 1
            yield Sample(STREAM_UNDELIVERED_UNKNOWN.name, labels, 1)
        known, idle = consumers_idle(f"XINFO CONSUMERS {stream} {group}", consumers)
        yield Sample(STREAM_CONSUMERS.name, labels, known)
        if idle is not None:
            yield Sample(STREAM_CONSUMER_IDLE.name, labels, idle)
    # Counted by the streams signal only (registry.families.PAIR_FAMILIES).
    for reason in UNDELIVERED_UNKNOWN_REASONS if withheld_counts else ():
        yield Sample(STREAM_UNDELIVERED_UNKNOWN_GROUPS.name, (reason,), withheld[reason])
    for stream, length, first in zip(deadletter_streams, reading.lengths, reading.first_entries, strict=True):
        entries = reply_count(f"XLEN {stream}", length)
        yield Sample(DEADLETTER_ENTRIES.name, (stream,), entries)
        if entries:
            yield Sample(DEADLETTER_OLDEST.name, (stream,), first_entry_time(f"XRANGE {stream}", first))
            entry_101 = entry_101_time(f"XRANGE {stream}", _list(f"XRANGE {stream}", first, "entries"))
            if entry_101 is not None:
                yield Sample(DEADLETTER_ENTRY_101.name, (stream,), entry_101)


def _named(name: str, samples: Iterator[Sample]) -> Iterator[Sample]:
    """`samples`, a failure among them named by the signal that reads them (a stream signal declared apart)."""
    try:
        yield from samples
    except MeasurementError as exc:
        exc.signal = name
        raise


async def measure(query: StreamsQuery, name: str, sources: Sources) -> Iterator[Sample]:
    reading = await sources.require_redis(name).read(query, signal=name)
    if name == NAME:
        return samples_from(reading, query.groups, query.deadletter_streams)
    return _named(name, samples_from(reading, query.groups, query.deadletter_streams, withheld_counts=False))


def signal(groups: tuple[tuple[str, str], ...], deadletter_streams: tuple[str, ...], name: str = NAME) -> Signal:
    """The signal `name` (streams, or a stream signal declared apart) reading these
    (stream, group) pairs and dead-letter streams."""
    query = StreamsQuery(groups, deadletter_streams)
    return Signal(name=name, source=Source.REDIS, measure=functools.partial(measure, query, name))


def signal_of(registry: Registry) -> Signal:
    """The streams signal reading every pair and dead-letter stream `registry` declares."""
    families = {family.name: family for family in registry.families_of(NAME)}
    groups = tuple((stream, group) for stream, group in families[STREAM_PENDING.name].combinations)
    return signal(groups, tuple(stream for (stream,) in families[DEADLETTER_ENTRIES.name].combinations))


SIGNAL = signal(STREAM_GROUPS, DEADLETTER_STREAMS)
