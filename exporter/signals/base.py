"""What a signal is: a name from the registry, the source it reads, and a
coroutine that measures it completely or raises."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterable
from dataclasses import dataclass
from datetime import datetime
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


def epoch_seconds(signal: str, where: str, value: datetime) -> float:
    """Seconds since the epoch of a timestamptz; 'infinity' and '-infinity'
    (read as datetime.max and datetime.min) break the contract."""
    naive = value.replace(tzinfo=None)
    if naive in (datetime.max, datetime.min):
        raise ContractViolation(signal, where, "infinite timestamp")
    return value.timestamp()
