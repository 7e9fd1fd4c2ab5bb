"""The meta families read beside the signals (the replay lag, the database
identity): each one cached like a signal, its last reading served while the
next one runs, never making a signal unmeasured.

A scrape asks each reader once (`scraped`) and renders what that call
returned: a TTL that ends between the reading and the page changes nothing,
so a page never shows a failure or an absence for a read that did not fail.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from typing import ClassVar, Generic, NamedTuple, TypeVar

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.reading import CachedReading
from exporter.samples import Sample
from exporter.sources.postgres.source import Postgres
from exporter.timeouts import Timeouts

T = TypeVar("T")


class Served(NamedTuple):
    """What one scrape shows of a meta family: the number of the reading (0: none yet) and its samples."""

    generation: int
    samples: tuple[Sample, ...]


class MetaReader(ABC, Generic[T]):
    """A meta family read from PostgreSQL at most once per TTL, when scraped; never raises while open."""

    task: ClassVar[str]  # the name of its reading's task
    what: ClassVar[str]  # what it is called once closed

    def __init__(self, postgres: Postgres, ttl: float, timeouts: Timeouts, clock: Clock = SYSTEM_CLOCK) -> None:
        self.postgres = postgres
        self.timeouts = timeouts
        self._reading = CachedReading(
            self.read, keep_for=ttl, task=self.task, life=self.what, clock=clock, serve_last=True
        )

    @property
    def generation(self) -> int:
        return self._reading.generation

    def fresh(self) -> bool:
        return self._reading.fresh()

    async def scraped(self, wait: float) -> Served:
        """Read again if the TTL has ended, waiting at most `wait` seconds; the samples of
        the reading this returns (the last one while the next runs past the wait)."""
        reading = await self._reading.get(wait)
        if reading is None:
            return Served(0, self.samples_of(None))
        return Served(reading.generation, self.samples_of(reading.value))

    @abstractmethod
    async def read(self) -> T:
        """One reading, its failure as a value: never raises but when cancelled."""

    @abstractmethod
    def samples_of(self, value: T | None) -> tuple[Sample, ...]:
        """The samples of a reading's value, None before any reading ended."""

    async def close(self) -> None:
        """Cancel the reading in flight and wait for it to end (bounded)."""
        await self._reading.close()
