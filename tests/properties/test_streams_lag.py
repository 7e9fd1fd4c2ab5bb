"""The lag rule over any reply (exporter/signals/streams_lag.py): a count is
published only when it satisfies every rule, and a count made from a true
stream history is always published, whatever the trims before it."""

from __future__ import annotations

from hypothesis import given, settings
from hypothesis import strategies as st

from exporter.signals.streams_lag import (
    COUNTERS_DISAGREE,
    EXCEEDS_LENGTH,
    NOT_COUNTED,
    NOT_ZERO_AT_LAST_ID,
    StreamState,
    undelivered,
)
from registry.values import UNDELIVERED_UNKNOWN_REASONS
from tests.hypotheses import examples

counts = st.integers(min_value=0, max_value=2**63 - 1)
ids = st.tuples(st.integers(0, 2**64 - 1), st.integers(0, 2**64 - 1))


def raw(entry: tuple[int, int]) -> bytes:
    return f"{entry[0]}-{entry[1]}".encode()


def test_the_reasons_are_the_registrys() -> None:
    assert (NOT_COUNTED, EXCEEDS_LENGTH, NOT_ZERO_AT_LAST_ID, COUNTERS_DISAGREE) == UNDELIVERED_UNKNOWN_REASONS


@settings(max_examples=examples(fast=300, ci=5000), deadline=None)
@given(
    length=counts,
    last=ids,
    added=st.none() | counts,
    lag=st.none() | counts,
    delivered=ids,
    read=st.none() | counts,
    same_id=st.booleans(),
)
def test_a_published_count_breaks_no_rule(
    length: int,
    last: tuple[int, int],
    added: int | None,
    lag: int | None,
    delivered: tuple[int, int],
    read: int | None,
    same_id: bool,
) -> None:
    delivered = last if same_id else delivered
    record = {"lag": lag, "last-delivered-id": raw(delivered), "entries-read": read}
    result = undelivered("XINFO GROUPS s (g)", record, StreamState(length, last, added))
    if isinstance(result, str):
        assert result in UNDELIVERED_UNKNOWN_REASONS
        return
    assert result == lag
    assert result <= length
    assert delivered != last or result == 0
    assert read is None or added is None or result == added - read


@settings(max_examples=examples(fast=300, ci=5000), deadline=None)
@given(added=st.integers(0, 10_000), data=st.data())
def test_a_true_count_is_published(added: int, data: st.DataObject) -> None:
    """A stream that had `added` entries (IDs 1..added), trimmed to its last `length`;
    a group that read the first `read` of them: a right lag and counters are published."""
    length = data.draw(st.integers(0, added))
    read = data.draw(st.integers(0, added))
    truth = min(added - read, length)
    counters_right = added - read <= length  # the trim removed no entry the group had not read
    record = {
        "lag": added - read,
        "last-delivered-id": raw((read, 0)),
        "entries-read": read,
    }
    result = undelivered("XINFO GROUPS s (g)", record, StreamState(length, (added, 0), added))
    if counters_right:
        assert result == truth
    else:
        assert result == EXCEEDS_LENGTH  # Redis 7.0's count, which counts the trimmed entries too
