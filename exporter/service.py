"""Wiring: from the settings to the clients, the signal caches and the exporter."""

from __future__ import annotations

from exporter.cache import SignalCache
from exporter.measure import SYSTEM_CLOCK, Clock
from exporter.scrape import Exporter
from exporter.settings import Settings
from exporter.signals import BY_NAME
from exporter.sources import Sources
from exporter.sources.postgres import Postgres, PostgresSettings
from exporter.sources.redis import RedisSettings, RedisStreams
from exporter.timeouts import Timeouts


def timeouts_of(settings: Settings) -> Timeouts:
    return Timeouts(deadline=settings.deadline)


def build_sources(settings: Settings) -> Sources:
    """The clients of the configured sources; none connects before its first use."""
    timeouts = timeouts_of(settings)
    postgres = redis = None
    if settings.database_url is not None:
        postgres = Postgres(
            PostgresSettings(
                url=settings.database_url,
                max_connections=settings.max_connections,
                batch_size=settings.batch_size,
                idle_close_seconds=settings.idle_close,
                max_queries_per_connection=settings.max_queries,
                pool_mode=settings.pool_mode,
            ),
            timeouts,
        )
    if settings.redis_url is not None:
        redis = RedisStreams(RedisSettings(url=settings.redis_url), timeouts)
    return Sources(postgres=postgres, redis=redis)


def build_exporter(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> Exporter:
    timeouts = timeouts_of(settings)
    sources = build_sources(settings)
    caches = [SignalCache(BY_NAME[name], sources, settings.ttl, timeouts, clock) for name in settings.signals]
    return Exporter(caches, sources, timeouts)
