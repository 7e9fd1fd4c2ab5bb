"""Value types of the registry: a family, its labels and their closed values.

Everything is validated when it is constructed, so a bad registry fails at
import time and never during a scrape.
"""

from __future__ import annotations

import itertools
import re
from dataclasses import dataclass, field
from enum import StrEnum

METRIC_NAME = re.compile(r"[a-zA-Z_:][a-zA-Z0-9_:]*")
LABEL_NAME = re.compile(r"[a-zA-Z_][a-zA-Z0-9_]*")
# A newline has an escape in the text format; no other control character has one.
_CONTROL = re.compile(r"[\x00-\x09\x0b-\x1f\x7f-\x9f]")


def _has_control(text: str) -> bool:
    """Control characters break a text line, a table row or a terminal: none is registered."""
    return _CONTROL.search(text) is not None


# Labels that would identify a tenant or a person: never allowed, whatever the family.
FORBIDDEN_LABELS = frozenset(
    {
        "tenant",
        "tenant_slug",
        "slug",
        "schema",
        "user",
        "user_id",
        "id",
        "event_id",
        "artifact_id",
        "document",
        "document_id",
        "document_number",
        "consumer",
    }
)


class RegistryError(ValueError):
    """The registry itself is malformed; raised at import, never at scrape time."""

    def __init__(self, family: str, problem: str) -> None:
        self.family = family
        self.problem = problem
        super().__init__(f"registry family {family!r}: {problem}")


class MetricType(StrEnum):
    GAUGE = "gauge"
    # Only ever increases while the process lives; its name ends in _total,
    # the name the text format 0.0.4 gives a counter's sample.
    COUNTER = "counter"


@dataclass(frozen=True)
class ValueRule:
    """The declared shape of a label value read from a source rather than listed
    here (a database's identity): the whole value must match `pattern`, never
    free text, and never longer than `max_length`."""

    pattern: str
    description: str
    max_length: int
    _compiled: re.Pattern[str] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        compiled = re.compile(self.pattern)
        if compiled.fullmatch("") or self.max_length < 1:
            raise RegistryError(self.pattern, "a value rule must refuse the empty value and bound the length")
        object.__setattr__(self, "_compiled", compiled)

    def accepts(self, value: object) -> bool:
        return isinstance(value, str) and len(value) <= self.max_length and self._compiled.fullmatch(value) is not None


@dataclass(frozen=True)
class Family:
    """One metric family and the closed set of label-value combinations it may carry.

    `combinations` lists every allowed tuple of label values, in `labels` order.
    A family without labels has exactly one combination, the empty tuple.
    """

    name: str
    help: str
    signal: str
    labels: tuple[str, ...] = ()
    combinations: tuple[tuple[str, ...], ...] = ((),)
    type: MetricType = MetricType.GAUGE
    # True for families that are absent rather than zero when there is nothing
    # to report (e.g. the timestamp of the oldest pending event).
    sparse: bool = False
    # `combinations` as a set, for a constant-time membership test at scrape time.
    allowed: frozenset[tuple[str, ...]] = field(init=False, repr=False, compare=False, hash=False)
    # A family whose one label takes values read from a source: each value is
    # held to this rule instead of a listed combination (then `combinations`
    # stays empty and the family is sparse).
    rule: ValueRule | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "allowed", frozenset(self.combinations))
        if not METRIC_NAME.fullmatch(self.name) or self.name.startswith("__"):
            raise RegistryError(self.name, "is not a valid metric name")
        if not self.help.strip():
            raise RegistryError(self.name, "needs a help text")
        if _has_control(self.help):
            raise RegistryError(self.name, "help text holds a control character (a carriage return, an escape, ...)")
        if (self.type is MetricType.COUNTER) != self.name.endswith("_total"):
            raise RegistryError(self.name, "a counter's name, and only a counter's, ends in _total")
        if len(set(self.labels)) != len(self.labels):
            raise RegistryError(self.name, f"repeats a label in {self.labels}")
        for label in self.labels:
            if not LABEL_NAME.fullmatch(label) or label.startswith("__"):
                raise RegistryError(self.name, f"label {label!r} is not a valid label name")
            if label.lower() in FORBIDDEN_LABELS:
                raise RegistryError(self.name, f"label {label!r} would identify a tenant or a person")
        if self.rule is not None:
            if len(self.labels) != 1 or self.combinations or not self.sparse:
                raise RegistryError(self.name, "a family under a value rule has one label, no listed values, is sparse")
            return
        if not self.combinations:
            raise RegistryError(self.name, "declares no label combination")
        if len(self.allowed) != len(self.combinations):
            raise RegistryError(self.name, "repeats a label combination")
        for combination in self.combinations:
            if len(combination) != len(self.labels):
                raise RegistryError(self.name, f"combination {combination} does not match labels {self.labels}")
            if any(_has_control(value) for value in combination):
                raise RegistryError(self.name, f"label value in {combination!r} holds a control character")
            for value in combination:
                if not isinstance(value, str) or not value:
                    raise RegistryError(self.name, f"label value {value!r} must be a non-empty string")


def product(*value_sets: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Every combination of the given closed value sets (a cross product)."""
    return tuple(itertools.product(*value_sets))


def single(values: tuple[str, ...]) -> tuple[tuple[str, ...], ...]:
    """Combinations of a family with a single label."""
    return tuple((value,) for value in values)


def check_unique(families: tuple[Family, ...]) -> None:
    seen: set[str] = set()
    for family in families:
        if family.name in seen:
            raise RegistryError(family.name, "is declared twice")
        seen.add(family.name)


@dataclass(frozen=True)
class Registry:
    """The closed registry of one running exporter: its families, in exposition
    order, and its signals, in measurement order. Built once at start.

    Several families may share a name when they are parts of one exposed
    family (e.g. one part per declared backlog): the parts then share help and
    type, sit next to each other, and belong to different signals.
    """

    families: tuple[Family, ...]
    signals: tuple[str, ...]
    meta: str
    _by_key: dict[tuple[str, str], Family] = field(init=False, repr=False, compare=False, hash=False)

    def __post_init__(self) -> None:
        if len(set(self.signals)) != len(self.signals):
            raise RegistryError(self.meta, f"signals {self.signals} repeat a name")
        by_key: dict[tuple[str, str], Family] = {}
        first: dict[str, Family] = {}
        previous: str | None = None
        for family in self.families:
            if family.signal != self.meta and family.signal not in self.signals:
                raise RegistryError(family.name, f"belongs to signal {family.signal!r}, which is not registered")
            key = (family.name, family.signal)
            if key in by_key:
                raise RegistryError(family.name, "is declared twice")
            seen = first.get(family.name)
            if seen is not None:
                if previous != family.name:
                    raise RegistryError(family.name, "parts of one family must be declared together")
                if (seen.help, seen.type) != (family.help, family.type):
                    raise RegistryError(family.name, "parts of one family must share help and type")
            else:
                first[family.name] = family
            by_key[key] = family
            previous = family.name
        for signal in self.signals:
            if not any(family.signal == signal for family in self.families):
                raise RegistryError(signal, "signal has no value family in the registry")
        object.__setattr__(self, "_by_key", by_key)

    def family(self, name: str, signal: str) -> Family | None:
        """The family (or the part of it) `signal` may emit under `name`."""
        return self._by_key.get((name, signal))

    def families_of(self, signal: str) -> tuple[Family, ...]:
        """The value families a signal emits, in registry order."""
        return tuple(family for family in self.families if family.signal == signal)
