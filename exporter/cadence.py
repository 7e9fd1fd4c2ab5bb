"""Each signal's cadence: the TTL its outcome is served from cache and the
deadline of one measurement, given per declaration (`ttl:` and `deadline:` of a
declared backlog or stream signal), per built-in signal (`--signals.ttl`,
`--signals.deadline`), else the global `--ttl` and `--deadline`.

A duration is a number of seconds (`300`, `2.5`) or one with a unit (`90s`,
`5m`, `1h`). The rule between them is the global one, per signal: the deadline
below the TTL. The scrape-timeout header still bounds every answer: a scrape
waits for a signal at most its own deadline plus the grace, and never past
what the header allows (exporter.timeouts).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass

from exporter.options import Refused

DURATION = re.compile(r"([0-9]+(?:\.[0-9]+)?)(s|m|h)?")
UNITS = {None: 1, "s": 1, "m": 60, "h": 3600}
# The keys of a declaration (a backlog, a stream signal) that set its cadence.
CADENCE_KEYS = ("ttl", "deadline")


@dataclass(frozen=True)
class Cadence:
    ttl: float
    deadline: float


@dataclass(frozen=True)
class DeclaredCadence:
    """What a declaration sets of its cadence; None: inherited."""

    ttl: float | None = None
    deadline: float | None = None


INHERITED = DeclaredCadence()


def seconds(raw: object) -> float:
    """A positive duration: a number of seconds, or text with the unit s, m or h."""
    if isinstance(raw, bool):
        raise Refused(f"{raw!r} is not a duration (seconds, or 90s, 5m, 1h)")
    if isinstance(raw, int | float):
        value = float(raw)
    else:
        match = DURATION.fullmatch(raw.strip()) if isinstance(raw, str) else None
        if match is None:
            raise Refused(f"{str(raw)[:40]!r} is not a duration (seconds, or 90s, 5m, 1h)")
        value = float(match.group(1)) * UNITS[match.group(2)]
    if not math.isfinite(value) or value <= 0:
        raise Refused(f"must be a positive duration, got {str(raw)[:40]!r}")
    return value


@dataclass(frozen=True)
class PerSignal:
    """`NAME=DURATION,...`: a duration per signal, each signal once."""

    kind: str = "comma-separated signal=duration"

    def __call__(self, raw: str, env: Mapping[str, str]) -> tuple[tuple[str, float], ...]:
        pairs: dict[str, float] = {}
        for item in (part.strip() for part in raw.split(",")):
            if not item:
                continue
            name, equals, value = item.partition("=")
            if not equals or not name.strip():
                raise Refused(f"{item[:40]!r} is not signal=duration")
            if name.strip() in pairs:
                raise Refused(f"signal {name.strip()[:40]!r} is given twice")
            try:
                pairs[name.strip()] = seconds(value)
            except Refused as exc:
                raise Refused(f"signal {name.strip()[:40]!r}: {exc.problem}") from None
        if not pairs:
            raise Refused("names no signal")
        return tuple(pairs.items())


def resolved(declared: DeclaredCadence, ttl: float, deadline: float) -> Cadence:
    """The cadence of a signal: what it declares, else the global values."""
    return Cadence(
        declared.ttl if declared.ttl is not None else ttl,
        declared.deadline if declared.deadline is not None else deadline,
    )


def declared_cadence(raw: Mapping[object, object], fail: Callable[[str, str], Exception]) -> DeclaredCadence:
    """The `ttl:` and `deadline:` keys of one declaration; `fail(key, problem)` makes
    the error naming the key."""
    values: dict[str, float | None] = {}
    for key in CADENCE_KEYS:
        try:
            values[key] = seconds(raw[key]) if key in raw else None
        except Refused as exc:
            raise fail(key, exc.problem) from None
    declared = DeclaredCadence(values["ttl"], values["deadline"])
    if declared.ttl is not None and declared.deadline is not None and declared.deadline >= declared.ttl:
        raise fail("deadline", f"must be below the ttl ({declared.deadline:g} >= {declared.ttl:g})")
    return declared
