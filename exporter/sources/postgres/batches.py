"""Cutting the tenants into batches, and reporting a long pass over them."""

from __future__ import annotations

import logging
import zlib
from collections.abc import Callable, Sequence
from typing import TypeVar

T = TypeVar("T")

log = logging.getLogger("orpycamcp.postgres")


def tenant_batches(slugs: Sequence[str], size: int) -> list[list[str]]:
    """Slugs (in order) cut into batches of at most `size`.

    A batch ends after a slug whose hash is 0 modulo `size`, or when full: the
    boundaries depend on the slugs around them, not on their positions, so a
    tenant added or removed changes (and re-plans) its own batch and rarely
    more. Batches average ~0.63 x size.
    """
    batches: list[list[str]] = []
    current: list[str] = []
    for slug in slugs:
        current.append(slug)
        if len(current) >= size or zlib.crc32(slug.encode("utf-8")) % size == 0:
            batches.append(current)
            current = []
    if current:
        batches.append(current)
    return batches


def lane_shares(items: Sequence[T], lanes: int) -> list[Sequence[T]]:
    """`items` cut into `lanes` contiguous shares, in order, every item in exactly
    one; the sizes differ by at most one (the remainder spread, never dropped)."""
    return [items[i * len(items) // lanes : (i + 1) * len(items) // lanes] for i in range(lanes)]


class BatchProgress:
    """Logs how far a pass over the tenants got, once a second after the first."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.clock = clock
        self.started = clock()
        self.next_report = self.started + 1.0
        self.batches = 0

    def done(self, signal: str, total: int) -> None:
        self.batches += 1
        now = self.clock()
        if now >= self.next_report and self.batches < total:
            self.next_report = now + 1.0
            log.info(
                "signal %s: %d of %d batches read after %.1f s",
                signal,
                self.batches,
                total,
                now - self.started,
                extra={"signal": signal, "duration_ms": round((now - self.started) * 1000, 1)},
            )
