"""Families from outcomes: what one scrape reports per signal, before any text is written."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.exposition.assemble import assemble, assemble_connections
from exporter.outcomes import Failure, Outcome
from exporter.process import assemble_process
from exporter.reasons import Reason
from exporter.samples import Sample
from registry import BUILTIN, TAIL_FAMILIES, VERSION
from registry.families import (
    AUDIT_BREAKS,
    BUILD_INFO,
    DATABASE_REPLAY_LAG,
    DLQ_OLDEST,
    DLQ_PENDING,
    SIGNAL_DATA_TIME,
    SIGNAL_DURATION,
    SIGNAL_FAILURE,
    SIGNAL_LAST_SUCCESS,
    SIGNAL_MEASURED,
)
from registry.values import FAILURE_REASONS

Series = dict[tuple[str, tuple[str, ...]], float]

DLQ_SAMPLES = (Sample(DLQ_PENDING.name, ("workflow-service",), 3.0),)
AUDIT_SAMPLES = (Sample(AUDIT_BREAKS.name, (), 0.0),)
TIMEOUT = Failure(Reason.TIMEOUT, "not complete within the 10 s deadline")


def series(
    enabled: Sequence[str], outcomes: Mapping[str, Outcome | None], last: Mapping[str, Outcome | None] | None = None
) -> Series:
    """Every sample of the scrape by (family, labels); a repeated series fails the test."""
    found: Series = {}
    for family in assemble(enabled, outcomes, last if last is not None else outcomes, BUILTIN):
        for sample in family.samples:
            assert sample.family == family.family.name, "a sample filed under another family"
            key = (sample.family, sample.labels)
            assert key not in found, f"series {key} twice"
            found[key] = sample.value
    return found


def of(found: Series, family: str) -> Series:
    return {key: value for key, value in found.items() if key[0] == family}


def test_every_registered_family_in_registry_order_even_when_empty() -> None:
    families = assemble((), {}, {}, BUILTIN)
    # The HTTP server's families close the page, appended per response.
    assert [f.family for f in families] == [f for f in BUILTIN.families if f not in TAIL_FAMILIES]
    tail = assemble_connections(1, 0) + assemble_process([])
    assert [f.family for f in families + tail] == list(BUILTIN.families)
    assert [f.family.name for f in families if f.samples] == [BUILD_INFO.name]


def test_build_info_names_the_version() -> None:
    assert of(series((), {}), BUILD_INFO.name) == {(BUILD_INFO.name, (VERSION,)): 1}


def test_a_measured_signal_has_its_values_and_its_meta() -> None:
    dlq = Outcome("dlq", DLQ_SAMPLES, 0.25, 1_764_600_000.0)
    found = series(["dlq"], {"dlq": dlq})
    assert found[(SIGNAL_MEASURED.name, ("dlq",))] == 1
    assert found[(SIGNAL_LAST_SUCCESS.name, ("dlq",))] == dlq.last_success
    assert found[(SIGNAL_DURATION.name, ("dlq",))] == dlq.duration
    assert of(found, DLQ_PENDING.name) == {(DLQ_PENDING.name, ("workflow-service",)): 3.0}


def test_a_failed_signal_has_no_values_and_keeps_its_last_success() -> None:
    failed = Outcome("dlq", None, 10.0, 1_764_500_000.0, TIMEOUT)
    found = series(["dlq"], {"dlq": failed})
    assert found[(SIGNAL_MEASURED.name, ("dlq",))] == 0
    assert found[(SIGNAL_LAST_SUCCESS.name, ("dlq",))] == failed.last_success
    assert found[(SIGNAL_DURATION.name, ("dlq",))] == failed.duration
    assert of(found, DLQ_PENDING.name) == {}


def test_a_signal_never_measured_successfully_has_no_last_success() -> None:
    failed = Outcome("dlq", None, 0.01, None, TIMEOUT)
    found = series(["dlq"], {"dlq": failed})
    assert found[(SIGNAL_MEASURED.name, ("dlq",))] == 0
    assert (SIGNAL_LAST_SUCCESS.name, ("dlq",)) not in found


def test_a_signal_not_ready_for_this_scrape_is_unmeasured_with_its_last_outcomes_meta() -> None:
    """Still being measured when the scrape had to answer: reported unmeasured, even though
    the previous outcome was a success; its last success and duration are still shown."""
    previous = Outcome("dlq", DLQ_SAMPLES, 0.4, 1_764_600_000.0)
    found = series(["dlq"], {"dlq": None}, {"dlq": previous})
    assert found[(SIGNAL_MEASURED.name, ("dlq",))] == 0
    assert found[(SIGNAL_LAST_SUCCESS.name, ("dlq",))] == previous.last_success
    assert found[(SIGNAL_DURATION.name, ("dlq",))] == previous.duration
    assert of(found, DLQ_PENDING.name) == {}  # never the previous values as if they were current


def test_the_data_time_only_beside_the_values_it_dates() -> None:
    """Measured: the time of the data read. Failed, or not ready for this scrape: absent,
    never the previous measurement's (the rules would pick a copy whose values are gone)."""
    dlq = Outcome("dlq", DLQ_SAMPLES, 0.25, 1_764_600_000.0, data_time=1_764_599_940.5)
    measured = of(series(["dlq"], {"dlq": dlq}), SIGNAL_DATA_TIME.name)
    assert measured == {(SIGNAL_DATA_TIME.name, ("dlq",)): 1_764_599_940.5}
    failed = Outcome("dlq", None, 10.0, 1_764_600_000.0, TIMEOUT)
    assert of(series(["dlq"], {"dlq": failed}, {"dlq": failed}), SIGNAL_DATA_TIME.name) == {}
    assert of(series(["dlq"], {"dlq": None}, {"dlq": dlq}), SIGNAL_DATA_TIME.name) == {}


def test_a_first_measurement_not_ready_has_only_measured_0() -> None:
    found = series(["dlq"], {"dlq": None}, {"dlq": None})
    assert of(found, SIGNAL_MEASURED.name) == {(SIGNAL_MEASURED.name, ("dlq",)): 0}
    assert of(found, SIGNAL_LAST_SUCCESS.name) == {}
    assert of(found, SIGNAL_DURATION.name) == {}


def test_only_enabled_signals_are_reported() -> None:
    dlq = Outcome("dlq", DLQ_SAMPLES, 0.25, 1_764_600_000.0)
    audit = Outcome("audit_chain", AUDIT_SAMPLES, 0.01, 1_764_600_000.0)
    found = series(["audit_chain"], {"dlq": dlq, "audit_chain": audit})
    assert of(found, SIGNAL_MEASURED.name) == {(SIGNAL_MEASURED.name, ("audit_chain",)): 1}
    assert of(found, DLQ_PENDING.name) == {}
    assert of(found, AUDIT_BREAKS.name) == {(AUDIT_BREAKS.name, ()): 0.0}


def test_one_signal_failing_leaves_the_others_whole() -> None:
    dlq = Outcome("dlq", None, 10.0, 1_764_500_000.0, TIMEOUT)
    audit = Outcome("audit_chain", AUDIT_SAMPLES, 0.01, 1_764_600_000.0)
    found = series(["dlq", "audit_chain"], {"dlq": dlq, "audit_chain": audit})
    assert of(found, SIGNAL_MEASURED.name) == {
        (SIGNAL_MEASURED.name, ("dlq",)): 0,
        (SIGNAL_MEASURED.name, ("audit_chain",)): 1,
    }
    assert of(found, AUDIT_BREAKS.name) == {(AUDIT_BREAKS.name, ()): 0.0}
    assert of(found, DLQ_PENDING.name) == {}


# Per signal: this scrape's outcome is fresh-success, fresh-failure, or not ready; the last one
# is a success, a failure or none.
states = st.sampled_from(["success", "failure", "none"])


def outcome_of(state: str, signal: str, samples: tuple[Sample, ...], at: float) -> Outcome | None:
    if state == "success":
        return Outcome(signal, samples, 0.5, at)
    if state == "failure":
        return Outcome(signal, None, 10.0, at - 60, TIMEOUT)
    return None


@given(
    st.fixed_dictionaries({"dlq": states, "audit_chain": states}),
    st.fixed_dictionaries({"dlq": states, "audit_chain": states}),
)
def test_values_appear_exactly_when_this_scrape_measured_the_signal(
    now: Mapping[str, str], before: Mapping[str, str]
) -> None:
    samples = {"dlq": DLQ_SAMPLES, "audit_chain": AUDIT_SAMPLES}
    outcomes = {s: outcome_of(now[s], s, samples[s], 2_000.0) for s in samples}
    last = {s: outcomes[s] or outcome_of(before[s], s, samples[s], 1_000.0) for s in samples}
    found = series(list(samples), outcomes, last)
    for signal, own in samples.items():
        measured = now[signal] == "success"
        assert found[(SIGNAL_MEASURED.name, (signal,))] == (1 if measured else 0)
        values = {key for key in found if key in {(sample.family, sample.labels) for sample in own}}
        assert bool(values) == measured  # never a value series of an unmeasured signal
        known = last[signal]
        expected_last_success = known.last_success if known is not None else None
        assert found.get((SIGNAL_LAST_SUCCESS.name, (signal,))) == expected_last_success


def test_meta_samples_measured_apart_are_emitted_as_given() -> None:
    """The replay lag is measured beside the signals, not by one: assembled as it comes."""
    lag = Sample(DATABASE_REPLAY_LAG.name, (), 1.5)
    found: Series = {}
    for family in assemble(["dlq"], {"dlq": None}, {"dlq": None}, BUILTIN, meta=[lag]):
        for sample in family.samples:
            found[(sample.family, sample.labels)] = sample.value
    assert found[(DATABASE_REPLAY_LAG.name, ())] == 1.5


def test_an_unmeasured_signal_says_why_and_a_measured_one_says_nothing() -> None:
    failed = Outcome("dlq", None, 0.2, 1_764_600_000.0, Failure(Reason.MISSING_TABLE, "tenant 'acme': no table"))
    found = series(
        ("dlq", "audit_chain"), {"dlq": failed, "audit_chain": Outcome("audit_chain", AUDIT_SAMPLES, 0.1, 1.0)}
    )
    assert of(found, SIGNAL_FAILURE.name) == {(SIGNAL_FAILURE.name, ("dlq", "missing_table")): 1}
    assert found[SIGNAL_MEASURED.name, ("dlq",)] == 0
    assert found[SIGNAL_MEASURED.name, ("audit_chain",)] == 1


def test_a_measurement_still_running_at_the_scrape_timeout_is_named_so() -> None:
    running = series(("dlq",), {"dlq": None}, {"dlq": None})
    assert of(running, SIGNAL_FAILURE.name) == {(SIGNAL_FAILURE.name, ("dlq", "scrape_timeout")): 1}


def test_the_registry_holds_exactly_the_reasons() -> None:
    assert tuple(reason.value for reason in Reason) == FAILURE_REASONS
    assert {combination[1] for combination in SIGNAL_FAILURE.combinations} == set(FAILURE_REASONS)


def test_the_connection_families_carry_the_counts_given() -> None:
    """Open and shed connections, each in its own family, unlabelled, as counted."""
    families = assemble_connections(3, 7)
    assert [(part.family, list(part.samples)) for part in families] == [
        (TAIL_FAMILIES[0], [Sample(TAIL_FAMILIES[0].name, (), 3)]),
        (TAIL_FAMILIES[1], [Sample(TAIL_FAMILIES[1].name, (), 7)]),
    ]


def test_samples_of_one_family_apart_in_an_outcome_are_all_kept() -> None:
    samples = (
        Sample(DLQ_PENDING.name, ("workflow-service",), 3.0),
        Sample(DLQ_OLDEST.name, ("workflow-service",), 1.0),
        Sample(DLQ_PENDING.name, ("knowledge-service",), 4.0),
    )
    found = series(["dlq"], {"dlq": Outcome("dlq", samples, 0.1, 100.0, None)})
    assert of(found, DLQ_PENDING.name) == {
        (DLQ_PENDING.name, ("workflow-service",)): 3.0,
        (DLQ_PENDING.name, ("knowledge-service",)): 4.0,
    }


def test_a_family_of_another_signal_in_an_outcome_is_named() -> None:
    outcome = Outcome("dlq", AUDIT_SAMPLES, 0.1, 100.0, None)
    with pytest.raises(KeyError) as raised:
        assemble(["dlq"], {"dlq": outcome}, {}, BUILTIN)
    assert raised.value.args == (f"family {AUDIT_BREAKS.name} is not registered for signal dlq",)
