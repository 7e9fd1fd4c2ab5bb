"""Open until closed: the state every long-lived object of the exporter keeps
(the signal caches, the sources, the replay-lag reader), and the one way each
of them ends what it owns within a bound."""

from __future__ import annotations

import asyncio
from collections.abc import Iterable
from typing import Any

from exporter.errors import Closed

# How long one object's close waits for what it cancelled: the whole shutdown
# (caches, replay lag, PostgreSQL, Redis) stays within a few seconds.
CLOSE_SECONDS = 2.0


class Lifecycle:
    """Whether an object is closed; a use after close is a `Closed` error, never a new connection."""

    def __init__(self, what: str) -> None:
        self.what = what
        self.closed = False

    def close(self) -> None:
        self.closed = True

    def ensure_open(self) -> None:
        if self.closed:
            raise Closed(self.what)


async def cancel_and_wait(tasks: Iterable[asyncio.Task[Any] | None], bound: float = CLOSE_SECONDS) -> None:
    """Cancel the tasks still running and wait for them to end, at most `bound` seconds."""
    running = [task for task in tasks if task is not None and not task.done()]
    for task in running:
        task.cancel()
    if running:
        await asyncio.wait(running, timeout=bound)
