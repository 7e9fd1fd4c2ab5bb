"""Scraping an in-process exporter and reading the page back with the
reference parser (prometheus_client), for assertions."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, TypeVar

from prometheus_client.parser import text_string_to_metric_families

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.exporter import Exporter
from exporter.loading import load
from exporter.meta import MetaReader
from exporter.service import build_exporter
from exporter.signals import SIGNALS, Source

# The signals a database URL alone enables, in the table's order.
DATABASE_SIGNALS = tuple(signal.name for signal in SIGNALS if signal.source is Source.POSTGRES)

Key = tuple[str, tuple[tuple[str, str], ...]]


@dataclass(frozen=True)
class Page:
    values: dict[Key, float]
    raw: bytes

    def get(self, name: str, **labels: str) -> float | None:
        return self.values.get((name, tuple(sorted(labels.items()))))

    def family(self, name: str) -> dict[tuple[tuple[str, str], ...], float]:
        return {labels: value for (family, labels), value in self.values.items() if family == name}

    def measured(self, signal: str) -> float | None:
        return self.get("orpycamcp_signal_measured", signal=signal)

    def failure_reasons(self, signal: str) -> set[str]:
        """The reasons orpycamcp_signal_failure_info gives for `signal` (none while it is measured)."""
        series = self.family("orpycamcp_signal_failure_info")
        return {
            dict(labels)["reason"] for labels, value in series.items() if dict(labels)["signal"] == signal and value
        }

    def series_of(self, prefix: str) -> list[Key]:
        return [key for key in self.values if key[0].startswith(prefix)]


R = TypeVar("R", bound=MetaReader[Any])


def meta_reader(exporter: Exporter, kind: type[R]) -> R:
    """The exporter's meta reader of this kind (the replay lag, the database identity)."""
    (reader,) = (reader for reader in exporter.meta if isinstance(reader, kind))
    return reader


def parse(raw: bytes) -> Page:
    values: dict[Key, float] = {}
    for family in text_string_to_metric_families(raw.decode("utf-8")):
        for sample in family.samples:
            key = (sample.name, tuple(sorted(sample.labels.items())))
            assert key not in values, f"duplicate series {key}"
            values[key] = sample.value
    return Page(values, raw)


def make_exporter(
    database_url: str | None, redis_url: str | None = None, clock: Clock = SYSTEM_CLOCK, /, **options: str
) -> Exporter:
    """An in-process exporter from settings by name (`ttl="2"`); `clock` drives its caches' TTL
    (tests pass `FakeClock().clock` to expire a TTL without sleeping). Positional, so that
    no setting can be mistaken for it."""
    values: Mapping[str, str | None] = {"database_url": database_url, "redis_url": redis_url, **options}
    return build_exporter(load(values, {}), clock=clock)


async def scrape(exporter: Exporter, wait: float | None = None) -> Page:
    body = await exporter.scrape(wait)
    return parse(body.raw)


async def scrape_once(database_url: str | None, redis_url: str | None = None, **options: str) -> Page:
    """One scrape of a new exporter, closed afterwards."""
    exporter = make_exporter(database_url, redis_url, **options)
    try:
        return await scrape(exporter)
    finally:
        await exporter.close()


def value_series(page: Page, signal_prefixes: tuple[str, ...]) -> list[Key]:
    return [key for key in page.values if key[0].startswith(signal_prefixes)]


DLQ_PREFIX = ("orpycamcp_dlq_",)
PRESERVATION_PREFIX = ("orpycamcp_preservation_",)
AUDIT_PREFIX = ("orpycamcp_audit_chain_",)
HOUSEKEEPING_PREFIX = ("orpycamcp_housekeeping_",)
STREAMS_PREFIX = ("orpycamcp_stream_", "orpycamcp_deadletter_")
