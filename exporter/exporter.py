"""The exporter: one scrape asks every enabled signal's cache and renders once per set of outcomes."""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from types import MappingProxyType

from exporter.cache import SignalCache
from exporter.exposition.assemble import assemble
from exporter.exposition.text import rendered
from exporter.freshness import redis_lag_samples
from exporter.identity import DatabaseIdentity
from exporter.outcomes import Outcome
from exporter.page import Page, PageCache
from exporter.replay_lag import ReplayLag
from exporter.samples import Sample
from exporter.sources import Sources
from exporter.timeouts import Timeouts
from registry import Registry

# Per signal, in order: the generation of its outcome, and whether this scrape reports it.
PageKey = tuple[tuple[int, bool], ...]


class Exporter:
    def __init__(
        self,
        caches: Sequence[SignalCache],
        sources: Sources,
        timeouts: Timeouts,
        registry: Registry,
        replay_lag: ReplayLag | None = None,
        identity: DatabaseIdentity | None = None,
    ) -> None:
        self.sources = sources
        self.registry = registry
        self.timeouts = timeouts
        self.replay_lag = replay_lag
        self.identity = identity
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
        key = tuple((cache.generation, ok) for cache, ok in zip(self._caches.values(), reported, strict=True))
        if self.replay_lag is not None:
            key += ((self.replay_lag.generation, self.replay_lag.fresh()),)
        if self.identity is not None:
            # Its samples are the last reading's, fresh or not: a TTL ending after the refresh changes nothing.
            key += ((self.identity.generation, True),)
        return key

    def cached_page(self) -> Page | None:
        """The page, if every signal's outcome is still fresh and already rendered."""
        if any(cache.fresh() is None for cache in self._caches.values()):
            return None
        if self.replay_lag is not None and not self.replay_lag.fresh():
            return None
        if self.identity is not None and not self.identity.fresh():
            return None
        return self._pages.get(self._key([True] * len(self._caches)))

    async def scrape(self, wait: float | None = None) -> Page:
        """Outcomes of every enabled signal, waiting at most `wait` seconds (default: the scrape budget)."""
        budget = self.timeouts.scrape_budget if wait is None else wait
        names = self.signals
        lag = self.replay_lag
        identity = self.identity
        results, _, _ = await asyncio.gather(
            asyncio.gather(*(self._caches[name].get(budget) for name in names)),
            lag.refresh(budget) if lag is not None else asyncio.sleep(0),
            identity.refresh(budget) if identity is not None else asyncio.sleep(0),
        )
        outcomes: dict[str, Outcome | None] = dict(zip(names, results, strict=True))
        last = {name: cache.last for name, cache in self._caches.items()}
        meta = (
            *(lag.samples() if lag is not None else ()),
            *(identity.samples() if identity is not None else ()),
            *self._redis_link(),
        )
        key = self._key([outcome is not None for outcome in results])
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
            self.replay_lag.close() if self.replay_lag is not None else asyncio.sleep(0),
            self.identity.close() if self.identity is not None else asyncio.sleep(0),
        )
        await self.sources.close()
