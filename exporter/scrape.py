"""One scrape: ask every enabled signal's cache, render once per set of outcomes."""

from __future__ import annotations

import asyncio
import gzip
from collections.abc import Sequence

from exporter.exposition import exposition
from exporter.measure import SignalCache
from exporter.outcomes import Outcome
from exporter.postgres import Postgres, PostgresSettings
from exporter.render import render
from exporter.settings import Settings
from exporter.signals import BY_NAME, Signal, Sources
from exporter.streams import RedisSettings, Streams


class RenderedBody:
    """A rendered page; its gzip form is made once, on first demand."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._gzipped: bytes | None = None

    @property
    def gzipped(self) -> bytes:
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.raw, compresslevel=6, mtime=0)
        return self._gzipped


class Exporter:
    def __init__(self, signals: Sequence[Signal], sources: Sources, ttl: float, deadline: float) -> None:
        self.sources = sources
        self.deadline = deadline
        self.caches = {signal.name: SignalCache(signal, sources, ttl, deadline) for signal in signals}
        self._body_key: tuple[tuple[int, bool], ...] | None = None
        self._body = RenderedBody(b"")

    @classmethod
    def from_settings(cls, settings: Settings) -> Exporter:
        postgres = redis = None
        if settings.database_url is not None:
            postgres = Postgres(
                PostgresSettings(
                    url=settings.database_url,
                    statement_timeout=settings.deadline,
                    connect_timeout=settings.deadline,
                    max_connections=settings.max_connections,
                    batch_size=settings.batch_size,
                    idle_close_seconds=settings.idle_close,
                    max_queries_per_connection=settings.max_queries,
                )
            )
        if settings.redis_url is not None:
            redis = Streams(RedisSettings(url=settings.redis_url, timeout=settings.deadline))
        signals = [BY_NAME[name] for name in settings.signals]
        return cls(signals, Sources(postgres=postgres, redis=redis), settings.ttl, settings.deadline)

    def cached_body(self) -> RenderedBody | None:
        """The page, if every signal's outcome is still fresh and already rendered."""
        for cache in self.caches.values():
            if not cache.fresh():
                return None
        key = tuple((cache.generation, True) for cache in self.caches.values())
        return self._body if key == self._body_key else None

    async def scrape(self, wait: float | None = None) -> RenderedBody:
        """Outcomes of every enabled signal, waiting at most `wait` seconds for any."""
        budget = self.deadline + 0.5 if wait is None else wait
        names = list(self.caches)
        results = await asyncio.gather(*(self.caches[name].get(budget) for name in names))
        outcomes: dict[str, Outcome | None] = dict(zip(names, results, strict=True))
        last = {name: cache.last for name, cache in self.caches.items()}
        # Render (and gzip) once per distinct set of outcomes, never per request.
        key = tuple((self.caches[name].generation, outcomes[name] is not None) for name in names)
        if key != self._body_key:
            self._body = RenderedBody(render(exposition(names, outcomes, last)))
            self._body_key = key
        return self._body

    async def close(self) -> None:
        if self.sources.postgres is not None:
            await self.sources.postgres.close()
        if self.sources.redis is not None:
            await self.sources.redis.close()
