"""Holds a signal's samples to the closed registry and completes them.

Anything outside the registry raises a MeasurementError (the signal is then
unmeasured); a complete measurement gets every registered combination, with a
true 0 where nothing was counted.

The cost is linear in the samples and the registered combinations (a set
lookup per sample). With a hundred thousand declared pairs that is still a
fraction of a second of CPU: `completing` does it in steps, handing the event
loop back between them, so a health check or a cached scrape is not held up
and the measurement's deadline can cut it. What it returns is kept per
family as one value per registered combination (exporter/samples.py), not as
a Sample object per value: an outcome kept for the TTL is then a few objects
for the garbage collector, however many series it holds.
"""

from __future__ import annotations

import asyncio
import math
from collections.abc import Generator, Iterable

from exporter.errors import DuplicateSample, InvalidValue, UnregisteredFamily, UnregisteredLabelValue
from exporter.samples import CompletedSamples, FamilyValues, Sample
from registry import Registry

STEP = 500  # samples between two hand-backs of the event loop (a few milliseconds of work)


def _steps(signal: str, samples: Iterable[Sample], registry: Registry) -> Generator[None, None, CompletedSamples]:
    """The completion, yielding every STEP samples; returns the completed samples."""
    # Per family, the value of each label combination measured: keyed by the
    # signal's own label tuples, so no key is built per sample.
    measured: dict[str, dict[tuple[str, ...], float]] = {}
    # Every value outside the registry is gathered, so that one measurement names them all.
    outside: dict[str, list[tuple[tuple[str, ...], float]]] = {}
    labels_of: dict[str, tuple[str, ...]] = {}
    for count, sample in enumerate(samples, 1):
        if count % STEP == 0:
            yield
        family = registry.family(sample.family, signal)
        if family is None:
            raise UnregisteredFamily(signal, sample.family)
        if sample.labels not in family.allowed:
            count_met = sample.value if isinstance(sample.value, int | float) else math.nan
            outside.setdefault(family.name, []).append((sample.labels, float(count_met)))
            labels_of[family.name] = family.labels
            continue
        value = sample.value
        if isinstance(value, bool) or not isinstance(value, int | float) or not math.isfinite(value) or value < 0:
            raise InvalidValue(signal, family.name, value)
        values = measured.setdefault(family.name, {})
        if sample.labels in values:
            raise DuplicateSample(signal, family.name, sample.labels)
        values[sample.labels] = float(value)
    for name, met in outside.items():
        raise UnregisteredLabelValue(signal, name, labels_of[name], met)

    parts: list[FamilyValues] = []
    for family in registry.families_of(signal):
        values = measured.pop(family.name, {})
        found: list[float] = []
        kept: list[tuple[str, ...]] = []  # a sparse family's combinations measured, in registry order
        for count, combination in enumerate(family.combinations, 1):
            if count % STEP == 0:
                yield
            got = values.get(combination)
            if family.sparse:
                if got is None:
                    continue
                kept.append(combination)
            found.append(0.0 if got is None else got)
        parts.append(FamilyValues(family.name, tuple(kept) if family.sparse else family.combinations, tuple(found)))
    return CompletedSamples(parts)


async def completing(signal: str, samples: Iterable[Sample], registry: Registry) -> CompletedSamples:
    """Validate `samples` of `signal` against `registry` and return them in registry order,
    zeros filled in, handing the event loop back every STEP samples."""
    steps = _steps(signal, samples, registry)
    while True:
        completed = _step(steps)
        if completed is not None:
            return completed
        await asyncio.sleep(0)


def _step(steps: Generator[None, None, CompletedSamples]) -> CompletedSamples | None:
    """One step of the completion; its result once it is done."""
    try:
        next(steps)
    except StopIteration as done:
        result: CompletedSamples = done.value
        return result
    return None
