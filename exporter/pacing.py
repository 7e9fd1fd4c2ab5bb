"""Long loops on the event loop, handed back every few milliseconds.

A measurement of a hundred thousand series runs loops of hundreds of
thousands of steps (packing commands, parsing replies, checking them): run in
one go, each holds the event loop for a tenth of a second or more, and no
health check or cached scrape is served meanwhile. A Pacer is asked at every
step whether SLICE seconds have passed (a clock read, no await), and only
then is the loop handed back: the cost is a time rather than a count, since
a step's cost varies with its size and the machine's load.
"""

from __future__ import annotations

import asyncio
import time

# Seconds of work between two hand-backs of the event loop. A request needs
# several turns of the loop (accept, read, respond), each of which may wait
# for a slice of every paced task: short slices keep a health check within
# tens of milliseconds; a hand-back costs microseconds.
SLICE = 0.002


class Pacer:
    def __init__(self, slice_seconds: float = SLICE) -> None:
        self.slice_seconds = slice_seconds
        self._since = time.perf_counter()

    def due(self) -> bool:
        """True when the work since the last hand-back has taken a slice."""
        return time.perf_counter() - self._since > self.slice_seconds

    async def hand_back(self) -> None:
        """Let every other ready task run, then start a new slice."""
        await asyncio.sleep(0)
        self._since = time.perf_counter()
