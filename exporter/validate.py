"""Holds a signal's samples to the closed registry and completes them.

Anything outside the registry raises a MeasurementError (the signal is then
unmeasured); a complete measurement gets every registered combination, with a
true 0 where nothing was counted.
"""

from __future__ import annotations

import math
from collections.abc import Iterable

from exporter.errors import DuplicateSample, InvalidValue, UnregisteredFamily, UnregisteredLabelValue
from exporter.samples import Sample
from registry import Registry


def complete(signal: str, samples: Iterable[Sample], registry: Registry) -> tuple[Sample, ...]:
    """Validate `samples` of `signal` against `registry` and return them in registry order, zeros filled in."""
    measured: dict[tuple[str, tuple[str, ...]], float] = {}
    # Every value outside the registry is gathered, so that one measurement names them all.
    outside: dict[str, list[tuple[tuple[str, ...], float]]] = {}
    labels_of: dict[str, tuple[str, ...]] = {}
    for sample in samples:
        family = registry.family(sample.family, signal)
        if family is None:
            raise UnregisteredFamily(signal, sample.family)
        if sample.labels not in family.combinations:
            count = sample.value if isinstance(sample.value, int | float) else math.nan
            outside.setdefault(family.name, []).append((sample.labels, float(count)))
            labels_of[family.name] = family.labels
            continue
        value = sample.value
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InvalidValue(signal, family.name, value)
        key = (family.name, sample.labels)
        if key in measured:
            raise DuplicateSample(signal, family.name, sample.labels)
        measured[key] = float(value)
    for name, met in outside.items():
        raise UnregisteredLabelValue(signal, name, labels_of[name], met)

    completed: list[Sample] = []
    for family in registry.families_of(signal):
        for combination in family.combinations:
            found = measured.get((family.name, combination))
            if found is None and not family.sparse:
                found = 0.0
            if found is not None:
                completed.append(Sample(family.name, combination, found))
    return tuple(completed)
