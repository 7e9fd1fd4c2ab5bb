"""One measurement of one signal: run it within the deadline, hold its samples
to the registry, and turn any failure into an unmeasured outcome."""

from __future__ import annotations

import asyncio
import logging

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.freshness import ReplicaLink
from exporter.heap import collections_paused
from exporter.outcomes import Outcome, classify
from exporter.reasons import Reason
from exporter.signals import Signal, Source
from exporter.sources import Sources
from exporter.timeouts import Timeouts
from exporter.validate import completing
from registry import Registry

log = logging.getLogger("orpycamcp.measure")


async def measure(
    signal: Signal,
    sources: Sources,
    timeouts: Timeouts,
    registry: Registry,
    last_success: float | None = None,
    clock: Clock = SYSTEM_CLOCK,
) -> Outcome:
    """Measure `signal` completely or not at all; `last_success` is kept on failure."""
    with collections_paused():
        # The outcome is made inside: a failure's traceback, which holds what the
        # measurement read, is gone before collections resume (exporter/heap.py).
        return await _measured(signal, sources, timeouts, registry, last_success, clock)


async def _measured(
    signal: Signal,
    sources: Sources,
    timeouts: Timeouts,
    registry: Registry,
    last_success: float | None,
    clock: Clock,
) -> Outcome:
    started, began = clock.monotonic(), clock.wall()
    link: ReplicaLink | None = None
    try:
        async with asyncio.timeout(timeouts.deadline):
            if signal.source is Source.POSTGRES and sources.postgres is not None:
                # A standby too far behind its primary shows no value as current (exporter/freshness.py).
                link = await sources.postgres.require_fresh(signal.name)
            raw = await signal.measure(sources)
            if signal.source is Source.REDIS and sources.redis is not None:
                link = sources.redis.replica_link  # read in the streams' own round trip
            # Inside the deadline: holding a large measurement to the registry takes time too.
            samples = await completing(signal.name, raw, registry)
    except Exception as exc:  # every failure is mapped in one place: outcomes.classify
        failure = classify(exc, timeouts.deadline)
        duration = clock.monotonic() - started
        log.warning(
            "signal %s unmeasured: %s: %s",
            signal.name,
            failure.reason,
            failure.detail,
            extra={"signal": signal.name, "reason": str(failure.reason), "duration_ms": round(duration * 1000, 1)},
            exc_info=failure.reason is Reason.INTERNAL_ERROR,
        )
        return Outcome(signal.name, None, duration, last_success, failure)
    return Outcome(signal.name, samples, clock.monotonic() - started, clock.wall(), None, data_time(began, link))


def data_time(began: float, link: ReplicaLink | None) -> float:
    """When the data read was current: the measurement's start, less the lag of the
    replica it was read from (a replica without a bound never gets here: its
    signals are unmeasured, exporter/freshness.py)."""
    return began if link is None else began - link.staleness
