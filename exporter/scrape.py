"""One scrape: ask every enabled signal's cache, render once per set of outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from exporter.cache import SignalCache
from exporter.exposition.assemble import assemble
from exporter.exposition.text import render
from exporter.outcomes import Outcome
from exporter.page import Page, PageCache
from exporter.sources import Sources
from exporter.timeouts import Timeouts
from registry import Registry

# Per signal, in order: the generation of its outcome, and whether this scrape reports it.
PageKey = tuple[tuple[int, bool], ...]


class Exporter:
    def __init__(self, caches: Sequence[SignalCache], sources: Sources, timeouts: Timeouts, registry: Registry) -> None:
        self.sources = sources
        self.registry = registry
        self.timeouts = timeouts
        self._caches = {cache.signal.name: cache for cache in caches}
        self._pages = PageCache()

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(self._caches)

    @property
    def caches(self) -> Mapping[str, SignalCache]:
        """Each enabled signal's cache, read-only (the tests and benchmarks count measurements)."""
        return MappingProxyType(self._caches)

    def _key(self, reported: Sequence[bool]) -> PageKey:
        return tuple((cache.generation, ok) for cache, ok in zip(self._caches.values(), reported, strict=True))

    def cached_page(self) -> Page | None:
        """The page, if every signal's outcome is still fresh and already rendered."""
        if any(cache.fresh() is None for cache in self._caches.values()):
            return None
        return self._pages.get(self._key([True] * len(self._caches)))

    async def scrape(self, wait: float | None = None) -> Page:
        """Outcomes of every enabled signal, waiting at most `wait` seconds (default: the scrape budget)."""
        budget = self.timeouts.scrape_budget if wait is None else wait
        names = self.signals
        results = await asyncio.gather(*(self._caches[name].get(budget) for name in names))
        outcomes: dict[str, Outcome | None] = dict(zip(names, results, strict=True))
        last = {name: cache.last for name, cache in self._caches.items()}
        key = self._key([outcome is not None for outcome in results])
        return self._pages.get_or_render(key, lambda: render(assemble(names, outcomes, last, self.registry)))

    async def close(self) -> None:
        await self.sources.close()
