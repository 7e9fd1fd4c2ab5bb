from __future__ import annotations

import asyncio
import contextlib
import math
from collections.abc import AsyncIterator

import pytest

from exporter.errors import DuplicateSample, InvalidValue, UnregisteredFamily, UnregisteredLabelValue
from exporter.samples import Sample
from exporter.validate import STEP, completing
from registry import BUILTIN, Registry
from registry.backlogs import OLDEST_PENDING, PENDING_ITEMS, oldest_part, pending_part
from tests.completion import complete


@contextlib.asynccontextmanager
async def hand_backs_counted() -> AsyncIterator[list[int]]:
    """How many times the code under test hands the event loop back: counted by a
    task that runs once each time (the count in the one-item list)."""
    ticks = [0]

    async def tick() -> None:
        while True:
            ticks[0] += 1
            await asyncio.sleep(0)

    ticker = asyncio.create_task(tick())
    try:
        yield ticks
    finally:
        ticker.cancel()


def test_zeros_are_filled_and_sparse_families_stay_absent() -> None:
    samples = complete("dlq", [Sample("orpycamcp_dlq_pending_events", ("workflow-service",), 2)], BUILTIN)
    assert tuple(samples) == (
        Sample("orpycamcp_dlq_pending_events", ("signature-service",), 0.0),
        Sample("orpycamcp_dlq_pending_events", ("workflow-service",), 2.0),
        Sample("orpycamcp_dlq_pending_events", ("notification-service",), 0.0),
        Sample("orpycamcp_dlq_pending_events", ("knowledge-service",), 0.0),
    )


def test_value_outside_the_registry_names_its_context() -> None:
    with pytest.raises(UnregisteredLabelValue) as raised:
        complete("dlq", [Sample("orpycamcp_dlq_pending_events", ("billing",), 1)], BUILTIN)
    assert raised.value.signal == "dlq"
    assert raised.value.family == "orpycamcp_dlq_pending_events"
    assert raised.value.values == ("billing",)
    assert "origin_group='billing'" in str(raised.value)


def test_family_of_another_signal_is_refused() -> None:
    with pytest.raises(UnregisteredFamily) as raised:
        complete("dlq", [Sample("orpycamcp_audit_chain_breaks", (), 1)], BUILTIN)
    assert (raised.value.signal, raised.value.family) == ("dlq", "orpycamcp_audit_chain_breaks")
    with pytest.raises(UnregisteredFamily) as raised:
        complete("dlq", [Sample("orpycamcp_nope", (), 1)], BUILTIN)
    assert "'orpycamcp_nope'" in str(raised.value)


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf, -1, -0.5, True, "1", None])
def test_invalid_values(value: float) -> None:
    with pytest.raises(InvalidValue) as raised:
        complete("audit_chain", [Sample("orpycamcp_audit_chain_breaks", (), value)], BUILTIN)
    assert raised.value.signal == "audit_chain"
    assert raised.value.family == "orpycamcp_audit_chain_breaks"
    assert raised.value.value is value
    assert repr(value) in str(raised.value)


@pytest.mark.parametrize("value", [0, 0.0, 0.5, 1, 2**53])
def test_zero_and_fractions_are_values(value: float) -> None:
    """Non-negative is the bound: a true 0 and a fraction below 1 are measured as they are."""
    (sample,) = complete("audit_chain", [Sample("orpycamcp_audit_chain_breaks", (), value)], BUILTIN)
    assert sample.value == value


def test_duplicates_are_refused() -> None:
    sample = Sample("orpycamcp_audit_chain_breaks", (), 1)
    with pytest.raises(DuplicateSample) as raised:
        complete("audit_chain", [sample, sample], BUILTIN)
    assert (raised.value.signal, raised.value.family, raised.value.values) == (
        "audit_chain",
        "orpycamcp_audit_chain_breaks",
        (),
    )
    assert "orpycamcp_audit_chain_breaks" in str(raised.value)


def test_every_value_outside_the_registry_is_counted_and_the_largest_named() -> None:
    samples = [Sample("orpycamcp_dlq_pending_events", (f"group-{n}",), n) for n in range(1, 1001)]
    with pytest.raises(UnregisteredLabelValue) as raised:
        complete("dlq", [Sample("orpycamcp_dlq_pending_events", ("workflow-service",), 1), *samples], BUILTIN)
    assert len(raised.value.found) == 1000
    message = str(raised.value)
    assert "1,000 combinations outside the registry" in message
    assert "origin_group='group-1000': 1000" in message
    assert f"origin_group='group-{1000 - UnregisteredLabelValue.SHOWN + 1}'" in message
    assert f"origin_group='group-{1000 - UnregisteredLabelValue.SHOWN}'" not in message
    assert f"; {1000 - UnregisteredLabelValue.SHOWN:,} more)" in message
    assert len(message) < 1500


def test_a_long_value_is_quoted_shortened_with_its_length() -> None:
    value = "x" * 4096
    with pytest.raises(UnregisteredLabelValue) as raised:
        complete("dlq", [Sample("orpycamcp_dlq_pending_events", (value,), 3)], BUILTIN)
    message = str(raised.value)
    assert value not in message
    assert "(4,098 characters)" in message  # its repr: the value and its quotes
    assert len(message) < 300


def test_a_sparse_family_keeps_only_what_was_measured_in_registry_order() -> None:
    oldest = "orpycamcp_dlq_oldest_pending_timestamp_seconds"
    samples = complete(
        "dlq",
        [Sample(oldest, ("knowledge-service",), 20.0), Sample(oldest, ("workflow-service",), 10.0)],
        BUILTIN,
    )
    assert [sample for sample in samples if sample.family == oldest] == [
        Sample(oldest, ("workflow-service",), 10.0),
        Sample(oldest, ("knowledge-service",), 20.0),
    ]


@pytest.mark.parametrize("value", [None, "1", math.nan])
def test_a_value_outside_the_registry_is_named_whatever_its_value(value: float) -> None:
    with pytest.raises(UnregisteredLabelValue) as raised:
        complete("dlq", [Sample("orpycamcp_dlq_pending_events", ("billing",), value)], BUILTIN)
    assert raised.value.values == ("billing",)


@pytest.mark.anyio
@pytest.mark.parametrize(("count", "handed_back"), [(STEP - 1, 0), (STEP, 1), (2 * STEP - 1, 1), (2 * STEP, 2)])
async def test_completing_hands_the_event_loop_back_every_step_of_samples(count: int, handed_back: int) -> None:
    # Values outside the registry are all gathered before one error names them: every sample is looked at.
    samples = [Sample("orpycamcp_dlq_pending_events", (f"group-{n}",), 1) for n in range(count)]
    async with hand_backs_counted() as ticks:
        with pytest.raises(UnregisteredLabelValue):
            await completing("dlq", samples, BUILTIN)
        assert ticks[0] == handed_back


@pytest.mark.anyio
async def test_completing_hands_the_event_loop_back_every_step_of_combinations() -> None:
    # A declared backlog of 2 * STEP - 1 groups: each of its two families hands the loop back once.
    groups = tuple(f"g{n}" for n in range(2 * STEP - 1))
    registry = Registry(
        families=(pending_part("big", groups), oldest_part("big", groups)), signals=("big",), meta=BUILTIN.meta
    )
    samples = [Sample(PENDING_ITEMS, ("big", "g7"), 3), Sample(OLDEST_PENDING, ("big", "g7"), 9.0)]
    async with hand_backs_counted() as ticks:
        completed = await completing("big", samples, registry)
        assert ticks[0] == 2
    assert list(completed) == list(complete("big", samples, registry))
    assert [sample for sample in completed if sample.value] == samples
    assert len(list(completed)) == len(groups) + 1
