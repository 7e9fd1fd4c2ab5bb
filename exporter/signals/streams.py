"""streams: consumer-group pending entries lists and dead-letter streams on Redis.

A dead-letter stream that does not exist yet is a true 0. A missing source
stream or group (NOGROUP), or a reply or entry ID that does not parse, is a
failure.

The groups and dead-letter streams read are those of the registry: the
built-in ones and those declared at start, all in one round trip.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Mapping, Sequence

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals.base import Signal, Source, not_in_future
from exporter.sources import Sources
from exporter.sources.redis import StreamsReading
from registry import Registry
from registry.families import (
    DEADLETTER_ENTRIES,
    DEADLETTER_OLDEST,
    STREAM_OLDEST_PENDING,
    STREAM_PENDING,
)
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS

NAME = "streams"
ENTRY_ID = re.compile(r"([0-9]{1,20})-([0-9]{1,20})")
ID_PART_MAX = 2**64 - 1  # both parts of an entry ID are unsigned 64-bit integers


def entry_time(where: str, entry_id: object) -> float:
    """Seconds since the epoch encoded in a stream entry ID ("<ms>-<seq>")."""
    match = ENTRY_ID.fullmatch(entry_id) if isinstance(entry_id, str) else None
    if match is None or int(match.group(1)) > ID_PART_MAX or int(match.group(2)) > ID_PART_MAX:
        raise ContractViolation(NAME, where, f"entry ID {entry_id!r} does not parse")
    # An ID given explicitly to XADD can carry any time, the future included.
    return not_in_future(NAME, where, int(match.group(1)) / 1000)


def _count(where: str, value: object) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ContractViolation(NAME, where, f"count {value!r} is not a non-negative integer")
    return value


def pending_summary(where: str, summary: object) -> tuple[int, float | None]:
    """(pending count, time of the smallest pending ID or None) from an XPENDING summary."""
    if not isinstance(summary, Mapping) or "pending" not in summary:
        raise ContractViolation(NAME, where, f"summary {summary!r} is not an XPENDING summary")
    count = _count(where, summary["pending"])
    if count == 0:
        return 0, None
    return count, entry_time(where, summary.get("min"))


def first_entry_time(where: str, entries: object) -> float:
    """Time of the first entry of an XRANGE ... COUNT 1 reply that holds one."""
    if isinstance(entries, str | bytes) or not isinstance(entries, Sequence):
        raise ContractViolation(NAME, where, f"reply {entries!r} is not a list of entries")
    if not entries:
        raise ContractViolation(NAME, where, "stream has entries but no first entry")
    first = entries[0]
    if isinstance(first, str | bytes) or not isinstance(first, Sequence) or not first:
        raise ContractViolation(NAME, where, f"entry {first!r} is not an (ID, fields) pair")
    return entry_time(where, first[0])


def samples_of(
    reading: StreamsReading,
    groups: Sequence[tuple[str, str]] = STREAM_GROUPS,
    deadletter_streams: Sequence[str] = DEADLETTER_STREAMS,
) -> list[Sample]:
    samples: list[Sample] = []
    for (stream, group), summary in zip(groups, reading.pending, strict=True):
        count, oldest = pending_summary(f"XPENDING {stream} {group}", summary)
        samples.append(Sample(STREAM_PENDING.name, (stream, group), count))
        if oldest is not None:
            samples.append(Sample(STREAM_OLDEST_PENDING.name, (stream, group), oldest))
    for stream, length, first in zip(deadletter_streams, reading.lengths, reading.first_entries, strict=True):
        entries = _count(f"XLEN {stream}", length)
        samples.append(Sample(DEADLETTER_ENTRIES.name, (stream,), entries))
        if entries:
            samples.append(Sample(DEADLETTER_OLDEST.name, (stream,), first_entry_time(f"XRANGE {stream}", first)))
    return samples


async def measure(
    groups: tuple[tuple[str, str], ...], deadletter_streams: tuple[str, ...], sources: Sources
) -> list[Sample]:
    reading = await sources.require_redis(NAME).read(groups, deadletter_streams, signal=NAME)
    return samples_of(reading, groups, deadletter_streams)


def signal(groups: tuple[tuple[str, str], ...], deadletter_streams: tuple[str, ...]) -> Signal:
    """The streams signal reading these (stream, group) pairs and dead-letter streams."""
    return Signal(name=NAME, source=Source.REDIS, measure=functools.partial(measure, groups, deadletter_streams))


def signal_of(registry: Registry) -> Signal:
    """The streams signal reading every pair and dead-letter stream `registry` declares."""
    families = {family.name: family for family in registry.families_of(NAME)}
    groups = tuple((stream, group) for stream, group in families[STREAM_PENDING.name].combinations)
    return signal(groups, tuple(stream for (stream,) in families[DEADLETTER_ENTRIES.name].combinations))


SIGNAL = signal(STREAM_GROUPS, DEADLETTER_STREAMS)
