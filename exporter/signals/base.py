"""What a signal is: a name from the registry, the source it reads, and a
coroutine that measures it completely or raises."""

from __future__ import annotations

import math
import time
from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.sources import Sources


class Source(StrEnum):
    POSTGRES = "postgres"
    REDIS = "redis"


@dataclass(frozen=True)
class Signal:
    name: str
    source: Source
    measure: Callable[[Sources], Awaitable[Iterable[Sample]]]
    # True for signals that read every tenant's schema (diagnose then looks
    # for the first tenant that fails on its own).
    reads_tenants: bool = False


# How far in the future a timestamp read from a source may lie: the clocks of
# the platform's hosts and of the exporter may disagree by this much. Beyond
# it, the value is bad data or a clock gone wrong, and an age computed from it
# (time() - timestamp) would be negative: the signal is unmeasured instead.
FUTURE_TOLERANCE_SECONDS = 300.0


def not_in_future(signal: str, where: str, seconds: float, now: float | None = None) -> float:
    """`seconds` (since the epoch), unless it lies more than the tolerance past `now` (default: the wall clock)."""
    current = time.time() if now is None else now
    ahead = seconds - current
    if ahead > FUTURE_TOLERANCE_SECONDS:
        try:
            shown = datetime.fromtimestamp(seconds, UTC).isoformat(timespec="seconds")
        except (ValueError, OverflowError):  # past year 9999
            shown = f"{seconds:.0f} (Unix time)"
        raise ContractViolation(
            signal,
            where,
            f"timestamp {shown} is {ahead:.0f} s in the future"
            f" (more than the {FUTURE_TOLERANCE_SECONDS:.0f} s of clock skew tolerated)",
        )
    return seconds


# The instants Python's datetime holds (years 1 to 9999), in seconds since the
# epoch: PostgreSQL holds more (4713 BC to 294276 AD), and no such time is a
# creation or a verification the platform wrote.
FIRST_SECOND = float(datetime(1, 1, 1, tzinfo=UTC).timestamp())
PAST_LAST_SECOND = float(datetime(9999, 12, 31, 23, 59, 59, tzinfo=UTC).timestamp() + 1)


def instant_seconds(signal: str, where: str, value: object, now: float | None = None) -> float:
    """Seconds since the epoch of a time the statement read as such
    (exporter.zones.epoch_sql): a number; 'infinity' and '-infinity', a year
    before 1 (BC) or past 9999, and a time in the future (see
    FUTURE_TOLERANCE_SECONDS) break the contract."""
    if isinstance(value, bool) or not isinstance(value, float | int):
        raise ContractViolation(signal, where, f"not read as an instant ({type(value).__name__})")
    seconds = float(value)
    if math.isinf(seconds) or math.isnan(seconds):
        raise ContractViolation(signal, where, "infinite timestamp")
    if seconds < FIRST_SECOND:
        raise ContractViolation(signal, where, f"timestamp {seconds:.0f} (Unix time) is before the year 1 (BC)")
    if seconds >= PAST_LAST_SECOND:
        raise ContractViolation(signal, where, f"timestamp {seconds:.0f} (Unix time) is past the year 9999")
    return not_in_future(signal, where, seconds, now)
