"""The smallest pieces of the streams signal's replies: counts and entry IDs,
each checked or refused as a contract violation naming where it was read."""

from __future__ import annotations

import re

from exporter.errors import ContractViolation

NAME = "streams"
ENTRY_ID = re.compile(rb"([0-9]{1,20})-([0-9]{1,20})")
ID_PART_MAX = 2**64 - 1  # both parts of an entry ID are unsigned 64-bit integers


def entry_id(where: str, raw: object) -> tuple[int, int]:
    """(milliseconds, sequence) of a stream entry ID ("<ms>-<seq>"), in the order Redis sorts them."""
    match = ENTRY_ID.fullmatch(raw) if isinstance(raw, bytes) else None
    if match is None or int(match.group(1)) > ID_PART_MAX or int(match.group(2)) > ID_PART_MAX:
        raise ContractViolation(NAME, where, f"entry ID {raw!r} does not parse")
    return int(match.group(1)), int(match.group(2))


def reply_count(where: str, value: object) -> int:
    """A non-negative integer of a reply."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        raise ContractViolation(NAME, where, f"count {value!r} is not a non-negative integer")
    return value
