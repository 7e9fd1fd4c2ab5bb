"""The exporter: one scrape asks every enabled signal's cache and renders once per set of outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import Any

from exporter.cache import SignalCache
from exporter.exposition.assemble import assemble
from exporter.exposition.text import rendered
from exporter.freshness import redis_lag_samples
from exporter.meta import MetaReader
from exporter.outcomes import Outcome
from exporter.page import Page, PageCache
from exporter.samples import Sample
from exporter.sources import Sources
from exporter.timeouts import Timeouts
from registry import Registry
from registry.families import SIGNAL_TTL

# Per signal, in order: the generation of its outcome, and whether this scrape reports it;
# then per meta reader, in order: the generation of the reading it serves.
PageKey = tuple[tuple[tuple[int, bool], ...], tuple[int, ...]]


class Exporter:
    def __init__(
        self,
        caches: Sequence[SignalCache],
        sources: Sources,
        timeouts: Timeouts,
        registry: Registry,
        meta: Sequence[MetaReader[Any]] = (),
    ) -> None:
        self.sources = sources
        self.registry = registry
        self.timeouts = timeouts
        self.meta = tuple(meta)  # the meta families' readers (exporter.meta), in page order
        self._caches = {cache.signal.name: cache for cache in caches}
        self._pages = PageCache()
        # Each signal's own TTL, for the rules that follow its cadence: constant for the process.
        self._ttls = tuple(Sample(SIGNAL_TTL.name, (name,), cache.ttl) for name, cache in self._caches.items())

    @property
    def signals(self) -> tuple[str, ...]:
        return tuple(self._caches)

    @property
    def caches(self) -> Mapping[str, SignalCache]:
        """Each enabled signal's cache, read-only (the tests and benchmarks count measurements)."""
        return MappingProxyType(self._caches)

    def _key(self, reported: Sequence[bool], meta: Sequence[int]) -> PageKey:
        signals = tuple((cache.generation, ok) for cache, ok in zip(self._caches.values(), reported, strict=True))
        return signals, tuple(meta)

    def cached_page(self) -> Page | None:
        """The page, if every signal's outcome and every meta reading is still fresh and already rendered."""
        if not all(cache.fresh() for cache in self._caches.values()) or not all(r.fresh() for r in self.meta):
            return None
        return self._pages.get(self._key([True] * len(self._caches), [reader.generation for reader in self.meta]))

    async def scrape(self, wait: float | None = None) -> Page:
        """Outcomes of every enabled signal, waiting at most `wait` seconds (the bound the
        scrape-timeout header sets, exporter.timeouts.header_wait) and for each signal at
        most its own scrape budget (default: that budget)."""
        budget = self.timeouts.bounded_wait(wait)
        names = self.signals
        results, served = await asyncio.gather(
            asyncio.gather(*(self._caches[name].get(self._caches[name].timeouts.bounded_wait(wait)) for name in names)),
            asyncio.gather(*(reader.scraped(budget) for reader in self.meta)),
        )
        outcomes: dict[str, Outcome | None] = dict(zip(names, results, strict=True))
        last = {name: cache.last for name, cache in self._caches.items()}
        meta = (*self._ttls, *(sample for one in served for sample in one.samples), *self._redis_link())
        key = self._key([outcome is not None for outcome in results], [one.generation for one in served])
        return await self._pages.get_or_render_aside(
            key, lambda: rendered(assemble(names, outcomes, last, self.registry, meta))
        )

    def _redis_link(self) -> tuple[Sample, ...]:
        """The Redis replica's lag as the last streams reading found it, measured or not."""
        redis = self.sources.redis
        return redis_lag_samples(redis.replica_link) if redis is not None and "streams" in self._caches else ()

    async def close(self) -> None:
        """End every measurement in flight, then the sources' connections and clients."""
        await asyncio.gather(
            *(cache.close() for cache in self._caches.values()),
            *(reader.close() for reader in self.meta),
        )
        await self.sources.close()
