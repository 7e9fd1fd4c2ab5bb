"""Fresh exporters refreshed in a row, as every PostgreSQL benchmark measures
them: the first refresh (new connections, cold backends), then the steady ones
(the cache TTL forced to 0 so each scrape re-measures every signal), each with
its wall time, per-signal durations and failures, the statements it ran and
how many of them were planned anew; the counts are checked against what the
tenants hold (devkit.tenants.expected_totals) on the first complete refresh."""

from __future__ import annotations

import time
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass

from bench.figures import Backend, ExporterFigures, Spread
from bench.machine import session_backends
from devkit.tenants import expected_totals
from exporter.exporter import Exporter
from exporter.loading import load
from exporter.service import build_exporter
from exporter.sources.postgres.source import Postgres
from registry.families import DLQ_PENDING, PRESERVATION_EXHAUSTED

SIGNALS = "dlq,preservation,audit_chain"
# The application_name of the exporter's database sessions.
EXPORTER_APP = "orpycamcp-exporter"

CountsCheck = Callable[[Exporter], bool]


@dataclass(frozen=True)
class Refresh:
    wall: float
    durations: dict[str, float]
    failures: list[str]  # "<signal>: <reason>"
    statements: int
    prepares: int


@dataclass(frozen=True)
class Refreshes:
    first: Refresh
    steady: list[Refresh]
    correct: bool | None  # None: no refresh measured every signal

    def failures(self) -> list[str]:
        every = [self.first, *self.steady]
        return [f"refresh {number} {failure}" for number, done in enumerate(every) for failure in done.failures]


@asynccontextmanager
async def fresh_exporter(options: dict[str, object]) -> AsyncIterator[Exporter]:
    """An exporter built from `options` (defaults otherwise) whose every scrape refreshes every signal."""
    exporter = build_exporter(load(options, {}))
    for cache in exporter.caches.values():
        cache.ttl = 0
    try:
        yield exporter
    finally:
        await exporter.close()


async def refresh(exporter: Exporter, steady: int, check: CountsCheck) -> Refreshes:
    """The first refresh of `exporter` and `steady` more."""
    postgres = exporter.sources.postgres
    assert isinstance(postgres, Postgres)
    done: list[Refresh] = []
    correct: bool | None = None
    for _ in range(steady + 1):
        statements, prepares = postgres.statements, postgres.prepares
        started = time.monotonic()
        await exporter.scrape()
        wall = time.monotonic() - started
        durations: dict[str, float] = {}
        failures: list[str] = []
        for name, cache in exporter.caches.items():
            outcome = cache.last
            assert outcome is not None
            durations[name] = outcome.duration
            if outcome.failure is not None:
                failures.append(f"{name}: {outcome.failure.reason}")
        done.append(Refresh(wall, durations, failures, postgres.statements - statements, postgres.prepares - prepares))
        if correct is None and all(cache.last and cache.last.measured for cache in exporter.caches.values()):
            correct = check(exporter)
    return Refreshes(done[0], done[1:], correct)


def expected_series(tenants: int, first: int = 1) -> tuple[int, int]:
    """Pending dead letters and exhausted artifacts of tenants first..tenants."""
    totals = expected_totals(first, tenants)
    return sum(totals.pending.values()), sum(totals.exhausted.values())


def counts_check(tenants: int, first: int = 1) -> CountsCheck:
    """Whether an exporter's last samples hold the dead letters and exhausted artifacts of tenants first..tenants."""
    want_pending, want_exhausted = expected_series(tenants, first)

    def check(exporter: Exporter) -> bool:
        return check_counts(exporter, want_pending, want_exhausted)

    return check


def check_counts(exporter: Exporter, want_pending: int, want_exhausted: int) -> bool:
    def total(signal: str, family: str) -> int | None:
        outcome = exporter.caches[signal].last
        if outcome is None or outcome.samples is None:
            return None
        return int(sum(sample.value for sample in outcome.samples if sample.family == family))

    return total("dlq", DLQ_PENDING.name) == want_pending and (
        total("preservation", PRESERVATION_EXHAUSTED.name) == want_exhausted
    )


async def measure_exporter(
    url: str,
    admin_url: str,
    tenants: int,
    runs: int,
    steady: int,
    first: int = 1,
    deadline: float | None = None,
) -> ExporterFigures:
    """`runs` fresh exporters over tenants first..tenants (default settings, or `deadline`)."""
    options: dict[str, object] = {"database_url": url, "signals": SIGNALS}
    if deadline is not None:
        options.update(deadline=deadline, ttl=2 * deadline)
    check = counts_check(tenants, first)
    every: list[Refreshes] = []
    backends: list[Backend] = []
    for run in range(runs):
        async with fresh_exporter(options) as exporter:
            every.append(await refresh(exporter, steady, check))
            if run == runs - 1:
                backends = await session_backends(admin_url, EXPORTER_APP)
    firsts = [done.first for done in every]
    steadies = [one for done in every for one in done.steady]
    last = every[-1]
    return ExporterFigures(
        first=Spread.of([one.wall for one in firsts]),
        steady=Spread.of([one.wall for one in steadies]),
        first_by_signal=by_signal(firsts),
        steady_by_signal=by_signal(steadies),
        failures=[f"run {run} {failure}" for run, done in enumerate(every) for failure in done.failures()],
        statements_first=last.first.statements,
        statements_steady=last.steady[-1].statements if last.steady else 0,
        prepares_first=last.first.prepares,
        prepares_steady=last.steady[-1].prepares if last.steady else 0,
        backends=backends,
        correct=bool(next((done.correct for done in every if done.correct is not None), False)),
    )


def by_signal(refreshes: list[Refresh]) -> dict[str, Spread]:
    durations: dict[str, list[float]] = {}
    for one in refreshes:
        for name, duration in one.durations.items():
            durations.setdefault(name, []).append(duration)
    return {name: Spread.of(values) for name, values in durations.items()}
