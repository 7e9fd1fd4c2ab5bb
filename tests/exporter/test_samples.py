from __future__ import annotations

import pytest

from exporter.samples import CompletedSamples, FamilyValues, Sample, family_parts
from registry import BUILTIN
from tests.completion import complete

PENDING = "orpycamcp_dlq_pending_events"


def test_family_values_read_as_samples() -> None:
    part = FamilyValues("f", (("a",), ("b",)), (1.0, 2.5))
    assert len(part) == 2
    assert list(part) == [Sample("f", ("a",), 1.0), Sample("f", ("b",), 2.5)]
    assert part[1] == Sample("f", ("b",), 2.5)
    assert part[-1] == part[1]
    assert part[0:1] == (Sample("f", ("a",), 1.0),)


def test_family_values_refuse_a_value_count_other_than_the_combinations() -> None:
    with pytest.raises(ValueError, match="f: 2 label combinations for 1 values"):
        FamilyValues("f", (("a",), ("b",)), (1.0,))


def test_completed_samples_chain_their_parts_and_drop_empty_ones() -> None:
    first = FamilyValues("f", (("a",),), (1.0,))
    empty = FamilyValues("g", (), ())
    last = FamilyValues("h", ((),), (0.0,))
    samples = CompletedSamples([first, empty, last])
    assert samples.parts == (first, last)
    assert len(samples) == 2
    assert list(samples) == [Sample("f", ("a",), 1.0), Sample("h", (), 0.0)]
    assert samples[1] == Sample("h", (), 0.0)
    assert list(family_parts(samples)) == [("f", first), ("h", last)]


def test_plain_samples_are_grouped_by_consecutive_family() -> None:
    samples = [Sample("f", ("a",), 1), Sample("f", ("b",), 2), Sample("g", (), 3), Sample("f", ("c",), 4)]
    assert [(name, list(part)) for name, part in family_parts(samples)] == [
        ("f", samples[:2]),
        ("g", samples[2:3]),
        ("f", samples[3:]),
    ]
    assert list(family_parts([])) == []


def test_a_completed_family_keeps_the_registrys_own_label_tuples() -> None:
    # The point of the layout: nothing per series is made for an outcome kept for the TTL.
    completed = complete("dlq", [Sample(PENDING, ("workflow-service",), 2)], BUILTIN)
    (family,) = [family for family in BUILTIN.families_of("dlq") if family.name == PENDING]
    (part,) = [part for part in completed.parts if part.family == PENDING]
    assert part.combinations is family.combinations
    assert dict(zip(part.combinations, part.values, strict=True))[("workflow-service",)] == 2.0


def test_samples_show_what_they_hold_when_printed() -> None:
    # What an assertion or a log line shows of them: one family's count, a measurement's samples.
    part = FamilyValues("f", (("a",), ("b",)), (1.0, 2.5))
    assert repr(part) == "FamilyValues('f', 2 samples)"
    assert repr(CompletedSamples([part])) == (
        "CompletedSamples([Sample(family='f', labels=('a',), value=1.0), Sample(family='f', labels=('b',), value=2.5)])"
    )
