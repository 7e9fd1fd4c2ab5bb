"""Samples: the values a signal measured, before and after validation."""

from __future__ import annotations

from collections.abc import Iterable, Iterator, Sequence
from itertools import chain, repeat
from typing import NamedTuple, overload


class Sample(NamedTuple):
    """One value of a family; `labels` are label values in the family's label order."""

    family: str
    labels: tuple[str, ...]
    value: float


class FamilyValues(Sequence[Sample]):
    """One family's samples, kept as its label combinations (the registry's own
    tuples) and one value per combination: a handful of objects however many
    samples, where Sample objects would be hundreds of thousands for the
    garbage collector to walk and free. A Sample is made when one is read."""

    __slots__ = ("combinations", "family", "values")

    def __init__(self, family: str, combinations: tuple[tuple[str, ...], ...], values: tuple[float, ...]) -> None:
        if len(combinations) != len(values):
            raise ValueError(f"{family}: {len(combinations)} label combinations for {len(values)} values")
        self.family = family
        self.combinations = combinations
        self.values = values

    def __len__(self) -> int:
        return len(self.values)

    def __iter__(self) -> Iterator[Sample]:
        return map(Sample, repeat(self.family), self.combinations, self.values)

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Sample, ...]: ...
    def __getitem__(self, index: int | slice) -> Sample | tuple[Sample, ...]:
        if isinstance(index, slice):
            return tuple(self)[index]
        return Sample(self.family, self.combinations[index], self.values[index])

    def __repr__(self) -> str:
        return f"FamilyValues({self.family!r}, {len(self)} samples)"


class CompletedSamples(Sequence[Sample]):
    """A measurement's samples after validation, family by family in registry order."""

    __slots__ = ("_length", "parts")

    def __init__(self, parts: Iterable[FamilyValues]) -> None:
        self.parts = tuple(part for part in parts if part)
        self._length = sum(len(part) for part in self.parts)

    def __len__(self) -> int:
        return self._length

    def __iter__(self) -> Iterator[Sample]:
        return chain.from_iterable(self.parts)

    @overload
    def __getitem__(self, index: int) -> Sample: ...
    @overload
    def __getitem__(self, index: slice) -> tuple[Sample, ...]: ...
    def __getitem__(self, index: int | slice) -> Sample | tuple[Sample, ...]:
        return tuple(self)[index]

    def __repr__(self) -> str:
        return f"CompletedSamples({list(self)!r})"


def family_parts(samples: Iterable[Sample]) -> Iterator[tuple[str, Sequence[Sample]]]:
    """Consecutive samples of one family, as (family name, its samples)."""
    if isinstance(samples, CompletedSamples):
        for part in samples.parts:
            yield part.family, part
        return
    current: list[Sample] = []
    for sample in samples:
        if current and current[0].family != sample.family:
            yield current[0].family, current
            current = []
        current.append(sample)
    if current:
        yield current[0].family, current
