from __future__ import annotations

import math

import pytest

from exporter.errors import DuplicateSample, InvalidValue, UnregisteredFamily, UnregisteredLabelValue
from exporter.samples import Sample
from exporter.validate import complete
from registry import BUILTIN


def test_zeros_are_filled_and_sparse_families_stay_absent() -> None:
    samples = complete("dlq", [Sample("orpycamcp_dlq_pending_events", ("workflow-service",), 2)], BUILTIN)
    assert samples == (
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
    with pytest.raises(UnregisteredFamily):
        complete("dlq", [Sample("orpycamcp_audit_chain_breaks", (), 1)], BUILTIN)
    with pytest.raises(UnregisteredFamily):
        complete("dlq", [Sample("orpycamcp_nope", (), 1)], BUILTIN)


@pytest.mark.parametrize("value", [math.nan, math.inf, -1, True])
def test_invalid_values(value: float) -> None:
    with pytest.raises(InvalidValue):
        complete("audit_chain", [Sample("orpycamcp_audit_chain_breaks", (), value)], BUILTIN)


def test_duplicates_are_refused() -> None:
    sample = Sample("orpycamcp_audit_chain_breaks", (), 1)
    with pytest.raises(DuplicateSample):
        complete("audit_chain", [sample, sample], BUILTIN)
