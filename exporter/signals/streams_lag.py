"""Whether Redis's `lag` of a consumer group may be published.

Redis 7.0 and 7.2 miscount `lag` after a trim (redis/redis#13957, fixed by
redis/redis#13473 and #13958): a group that read 1 of 10 entries before an
`XTRIM MAXLEN 5` is said to lag 9 with 5 entries left, and 4 for good once it
has read everything. The count is published only when it agrees with what the
same round trip says of the stream (`XINFO STREAM`): it cannot exceed the
stream's length, it is 0 when the group's last delivered ID is the stream's
last generated ID, and it is `entries-added - entries-read` when the group
knows its reads. Otherwise it is withheld, with the first rule it failed
(registry UNDELIVERED_UNKNOWN_REASONS). A right count passes every rule, on
any Redis version: each rule only states what the true count must satisfy.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from exporter.errors import ContractViolation
from exporter.signals.stream_replies import NAME, entry_id, reply_count
from exporter.sources.redis.errors import RedisTooOld

LAG_SINCE = "7.0"  # the Redis version whose XINFO GROUPS has `lag`

NOT_COUNTED = "not_counted"
EXCEEDS_LENGTH = "exceeds_length"
NOT_ZERO_AT_LAST_ID = "not_zero_at_last_id"
COUNTERS_DISAGREE = "counters_disagree"


@dataclass(frozen=True)
class StreamState:
    """What XINFO STREAM says of the stream, in the round trip of its groups' lag."""

    length: int
    last_generated: tuple[int, int]
    entries_added: int | None  # absent before Redis 7.0


def stream_state(where: str, reply: object) -> StreamState:
    """The fields of an XINFO STREAM reply the rules compare `lag` with."""
    if not isinstance(reply, Mapping):
        raise ContractViolation(NAME, where, f"reply {reply!r} is not a map of fields")
    added = reply.get("entries-added")
    return StreamState(
        length=reply_count(where, reply.get("length")),
        last_generated=entry_id(where, reply.get("last-generated-id")),
        entries_added=None if added is None else reply_count(where, added),
    )


def undelivered(where: str, record: Mapping[str, object] | None, stream: StreamState) -> int | str:
    """The group's entries not delivered yet (`lag`), or why they are withheld (a reason of
    UNDELIVERED_UNKNOWN_REASONS)."""
    if record is None:
        raise ContractViolation(NAME, where, "the group is not in the stream's XINFO GROUPS")
    if "lag" not in record:
        raise RedisTooOld(where, "lag", LAG_SINCE)
    raw = record["lag"]
    if raw is None:
        return NOT_COUNTED
    lag = reply_count(where, raw)
    last_delivered = entry_id(where, record.get("last-delivered-id"))
    if lag > stream.length:
        return EXCEEDS_LENGTH
    if lag and last_delivered == stream.last_generated:
        return NOT_ZERO_AT_LAST_ID
    read = record.get("entries-read")
    if read is not None and stream.entries_added is not None and lag != stream.entries_added - reply_count(where, read):
        return COUNTERS_DISAGREE
    return lag
