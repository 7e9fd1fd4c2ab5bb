"""What a signal is: a name from the registry, the source it reads, and a
coroutine that measures it completely or raises."""

from __future__ import annotations

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


def epoch_seconds(signal: str, where: str, value: datetime, now: float | None = None) -> float:
    """Seconds since the epoch of a timestamptz; 'infinity' and '-infinity'
    (read as datetime.max and datetime.min) break the contract, and so does a
    time in the future (see FUTURE_TOLERANCE_SECONDS)."""
    naive = value.replace(tzinfo=None)
    if naive in (datetime.max, datetime.min):
        raise ContractViolation(signal, where, "infinite timestamp")
    return not_in_future(signal, where, value.timestamp(), now)
