"""Wiring: from the settings to the clients, the signal caches and the exporter.
Every component takes its options here, by keyword: a renamed field is a type error."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from exporter.cache import SignalCache
from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.declarations import NO_DECLARATIONS, Declarations
from exporter.exporter import Exporter
from exporter.identity import DatabaseIdentity
from exporter.meta import MetaReader
from exporter.replay_lag import ReplayLag
from exporter.settings import Settings
from exporter.signals import BY_NAME, Signal, Source, audit_chain, backlog, streams
from exporter.sources import Sources
from exporter.sources.postgres import dsn
from exporter.sources.postgres.source import APPLICATION_NAME, Postgres, PostgresSettings
from exporter.sources.redis.source import RedisSettings, RedisStreams
from exporter.timeouts import Timeouts
from registry import BUILTIN, Registry


@dataclass(frozen=True)
class Catalog:
    """What this process can measure: the registry, extended at start with the
    declared backlogs' families and the declared streams' label values, and
    every signal by name (built-in first)."""

    registry: Registry
    signals: Mapping[str, Signal]


BUILTIN_CATALOG = Catalog(BUILTIN, BY_NAME)


def declared_catalog(declarations: Declarations) -> Catalog:
    """The catalog of everything a declarations file declares and replaces."""
    if declarations == NO_DECLARATIONS:
        return BUILTIN_CATALOG
    registry = declarations.registry()
    # The streams signal reads what the extended registry holds, declared streams included.
    builtin = {
        **BY_NAME,
        **{table.name: backlog.signal(table) for table in declarations.tables},
        **({audit_chain.NAME: audit_chain.signal(declarations.audit)} if declarations.audit is not None else {}),
        streams.NAME: streams.signal_of(registry),
    }
    apart = {s.name: streams.signal(s.groups, s.deadletter_streams, s.name) for s in declarations.streams.signals}
    return Catalog(registry, {**builtin, **{b.name: backlog.signal(b) for b in declarations.backlogs}, **apart})


# Each component's settings, from the options, field by field: the one place
# an option reaches a component.


def timeouts_of(settings: Settings) -> Timeouts:
    return Timeouts(deadline=settings.deadline)


def signal_timeouts(settings: Settings, signal: str) -> Timeouts:
    """The limits of one signal's measurement: its own deadline (exporter.cadence)."""
    return Timeouts(deadline=settings.cadence(signal).deadline)


def source_timeouts(settings: Settings, source: Source) -> Timeouts:
    """The limits a source's client sets on every statement and connection: the longest
    deadline of the signals reading it (a signal's own deadline cuts its measurement),
    never below --deadline (the identity and replay-lag reads)."""
    catalog = declared_catalog(settings.declarations)
    deadlines = [settings.cadence(name).deadline for name in settings.signals if catalog.signals[name].source is source]
    return Timeouts(deadline=max([settings.deadline, *deadlines]))


def _configured(url: str | None, source: str) -> str:
    if url is None:
        raise ValueError(f"no {source} URL is configured")
    return url


def postgres_settings(settings: Settings) -> PostgresSettings:
    url = _configured(settings.database_url, "PostgreSQL")
    # A URL's application_name is the operator's choice; else the exporter names itself.
    return PostgresSettings(
        url=url,
        max_connections=settings.database_max_connections,
        batch_size=settings.database_batch_size,
        idle_close=settings.database_idle_close,
        max_queries_per_connection=settings.database_max_queries_per_connection,
        pool_mode=settings.database_pool_mode,
        replica_max_staleness=settings.database_replica_max_staleness,
        application_name=dsn.parse(url).application_name or APPLICATION_NAME,
        tenants=settings.tenants,
    )


def redis_settings(settings: Settings) -> RedisSettings:
    return RedisSettings(
        url=_configured(settings.redis_url, "Redis"),
        replica_max_staleness=settings.redis_replica_max_staleness,
        tls=settings.redis_tls,
        sentinel_majority=settings.redis_sentinel_majority,
    )


def build_sources(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> Sources:
    """The clients of the configured sources; none connects before its first use."""
    postgres = (
        Postgres(postgres_settings(settings), source_timeouts(settings, Source.POSTGRES), clock=clock)
        if settings.database_url is not None
        else None
    )
    redis = (
        RedisStreams(redis_settings(settings), source_timeouts(settings, Source.REDIS))
        if settings.redis_url is not None
        else None
    )
    return Sources(postgres=postgres, redis=redis)


def build_exporter(settings: Settings, clock: Clock = SYSTEM_CLOCK) -> Exporter:
    timeouts = timeouts_of(settings)
    sources = build_sources(settings, clock)
    catalog = declared_catalog(settings.declarations)
    caches = [
        SignalCache(
            catalog.signals[name],
            sources,
            settings.cadence(name).ttl,
            signal_timeouts(settings, name),
            catalog.registry,
            clock,
        )
        for name in settings.signals
    ]
    reads_postgres = any(catalog.signals[name].source is Source.POSTGRES for name in settings.signals)
    meta: list[MetaReader[Any]] = []
    if sources.postgres is not None and reads_postgres:
        meta = [
            ReplayLag(sources.postgres, settings.ttl, timeouts, clock),
            DatabaseIdentity(sources.postgres, settings.ttl, timeouts, clock),
        ]
    return Exporter(caches, sources, timeouts, catalog.registry, meta)
