"""One added signal's cost: the refresh of the PostgreSQL signals with it against
the same refresh without it, in the same run, on the same tenants.

`runs` pairs of fresh exporters, alternated (without, with: the load of a shared
machine drifts), each doing a first refresh and `steady` refreshes with every
signal re-measured; the wall time of each steady refresh and the added signal's
own duration are kept. Every refresh must be complete, the dead-letter counts
exact, and the added signal's samples what `exact` says they must be.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from bench.figures import Spread
from bench.refreshes import SIGNALS, counts_check, fresh_exporter


@dataclass
class Paired:
    without: Spread
    with_signal: Spread
    own_read: Spread
    ratio: float
    failures: list[str]
    correct: bool


async def paired_refreshes(
    url: str,
    tenants: int,
    added: str,
    exact: Callable[[Sequence[Any]], bool],
    runs: int,
    steady: int,
    deadline: float,
) -> Paired:
    with_added = f"{SIGNALS},{added}"
    walls: dict[str, list[float]] = {SIGNALS: [], with_added: []}
    own: list[float] = []
    failures: list[str] = []
    check = counts_check(tenants)
    correct = True
    for run in range(runs):
        for signals in (SIGNALS, with_added):
            options: dict[str, object] = {
                "database_url": url,
                "signals": signals,
                "deadline": deadline,
                "ttl": 2 * deadline,
            }
            async with fresh_exporter(options) as exporter:
                for refresh in range(steady + 1):
                    started = time.monotonic()
                    await exporter.scrape()
                    wall = time.monotonic() - started
                    for name, cache in exporter.caches.items():
                        outcome = cache.last
                        assert outcome is not None
                        if outcome.failure is not None:
                            failures.append(f"run {run} refresh {refresh} {name}: {outcome.failure.reason}")
                    if refresh == 0:
                        correct = correct and check(exporter)
                        continue
                    walls[signals].append(wall)
                    read = exporter.caches.get(added)
                    if read is not None and read.last is not None:
                        own.append(read.last.duration)
                        correct = correct and read.last.samples is not None and exact(read.last.samples)
    without, with_signal = Spread.of(walls[SIGNALS]), Spread.of(walls[with_added])
    return Paired(
        without=without,
        with_signal=with_signal,
        own_read=Spread.of(own),
        ratio=round(with_signal.median / without.median, 3),
        failures=failures,
        correct=correct and not failures,
    )
