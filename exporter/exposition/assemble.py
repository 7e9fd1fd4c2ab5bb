"""From outcomes to the families the renderer writes. Pure."""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from exporter.exposition.text import FamilySamples
from exporter.outcomes import Outcome
from exporter.reasons import Reason
from exporter.samples import Sample, family_parts
from registry import TAIL_FAMILIES, VERSION, Registry
from registry.families import (
    BUILD_INFO,
    HTTP_CONNECTIONS,
    HTTP_CONNECTIONS_SHED,
    SIGNAL_DATA_TIME,
    SIGNAL_DURATION,
    SIGNAL_FAILURE,
    SIGNAL_LAST_SUCCESS,
    SIGNAL_MEASURED,
)


def assemble(
    enabled: Sequence[str],
    outcomes: Mapping[str, Outcome | None],
    last: Mapping[str, Outcome | None],
    registry: Registry,
    meta: Sequence[Sample] = (),
) -> list[FamilySamples]:
    """Families for one scrape.

    `outcomes` holds, per enabled signal, the outcome this scrape may report
    (None: not measured in time for it); `last` the last finished outcome,
    whose last-success time and duration are kept when this scrape has none;
    `meta` the samples of meta families measured apart from the signals (the
    replay lag), emitted as given.
    """
    # Keyed by family and signal: the parts of a shared family (one per
    # declared backlog) each keep their own labels. A measured part is passed
    # on as the outcome keeps it (exporter/samples.py): no Sample is made here.
    by_family: dict[tuple[str, str], Sequence[Sample]] = {(f.name, f.signal): () for f in registry.families}
    meta_key = registry.meta
    # The exporter's own families (measured, failure, durations, meta): made here.
    own: dict[str, list[Sample]] = {f.name: [] for f in registry.families if f.signal == meta_key}
    for signal in enabled:
        outcome = outcomes.get(signal)
        known = outcome or last.get(signal)
        measured = outcome is not None and outcome.samples is not None
        own[SIGNAL_MEASURED.name].append(Sample(SIGNAL_MEASURED.name, (signal,), 1 if measured else 0))
        if not measured:
            reason = outcome.failure.reason if outcome is not None and outcome.failure else Reason.SCRAPE_TIMEOUT
            own[SIGNAL_FAILURE.name].append(Sample(SIGNAL_FAILURE.name, (signal, reason.value), 1))
        if known is not None and known.last_success is not None:
            own[SIGNAL_LAST_SUCCESS.name].append(Sample(SIGNAL_LAST_SUCCESS.name, (signal,), known.last_success))
        if known is not None:
            own[SIGNAL_DURATION.name].append(Sample(SIGNAL_DURATION.name, (signal,), known.duration))
        if outcome is not None and outcome.samples is not None:
            if outcome.data_time is not None:
                own[SIGNAL_DATA_TIME.name].append(Sample(SIGNAL_DATA_TIME.name, (signal,), outcome.data_time))
            for name, part in family_parts(outcome.samples):
                key = (name, signal)
                if key not in by_family:
                    raise KeyError(f"family {name} is not registered for signal {signal}")
                by_family[key] = [*by_family[key], *part] if by_family[key] else part
    for sample in meta:
        own[sample.family].append(sample)
    own[BUILD_INFO.name].append(Sample(BUILD_INFO.name, (VERSION,), 1))
    return [
        FamilySamples(family, own[family.name] if family.signal == meta_key else by_family[family.name, family.signal])
        for family in registry.families
        if family not in TAIL_FAMILIES
    ]


def assemble_connections(open_now: int, shed: int) -> list[FamilySamples]:
    """The HTTP server's families, which close the page (see registry.TAIL_FAMILIES)."""
    return [
        FamilySamples(HTTP_CONNECTIONS, [Sample(HTTP_CONNECTIONS.name, (), open_now)]),
        FamilySamples(HTTP_CONNECTIONS_SHED, [Sample(HTTP_CONNECTIONS_SHED.name, (), shed)]),
    ]
