"""One value read when asked: at most once per TTL, one read in flight that
every caller shares, closeable: the signal caches, the meta readers and the
PostgreSQL reader's shared reads are all this.

A read returns its failure as a value (an `Outcome` with a failure, a
`Reason`), so failures are cached for the TTL like successes. An exception a
read raises reaches the callers waiting for that read and is not cached (the
next caller reads again). A caller that stops waiting leaves the read running:
it serves the next caller. With `serve_last`, a caller whose read does not end
within its wait gets the last reading instead of none. Closing cancels the read
in flight; a closed reading reads nothing more.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from exporter.clock import SYSTEM_CLOCK, Clock
from exporter.lifecycle import Lifecycle, cancel_and_wait

T = TypeVar("T")


@dataclass(frozen=True, slots=True)
class Reading(Generic[T]):
    """One read's value, when it ended (monotonic) and its number (1 for the first)."""

    value: T
    at: float
    generation: int


class CachedReading(Generic[T]):
    """`read` run when asked and its value kept for `keep_for` seconds (0: shared only while in flight)."""

    def __init__(
        self,
        read: Callable[[], Awaitable[T]],
        *,
        keep_for: float,
        task: str,
        life: Lifecycle | str,
        clock: Clock = SYSTEM_CLOCK,
        serve_last: bool = False,
    ) -> None:
        self._read = read
        self.keep_for = keep_for
        self._task_name = task
        # Its own lifecycle, or the one of the object it belongs to (closed with it).
        self._life = Lifecycle(life) if isinstance(life, str) else life
        self.clock = clock
        self.serve_last = serve_last
        self.last: Reading[T] | None = None
        self.reads = 0  # reads started, for the tests and benchmarks
        self._in_flight: asyncio.Task[Reading[T]] | None = None

    @property
    def generation(self) -> int:
        """The last reading's number, 0 before the first one ended: it changes with every new reading."""
        return 0 if self.last is None else self.last.generation

    @property
    def in_flight(self) -> asyncio.Task[Any] | None:
        return self._in_flight

    def fresh(self) -> bool:
        """Whether the last reading is younger than `keep_for` seconds (the TTL)."""
        return self.last is not None and self.clock.monotonic() - self.last.at < self.keep_for

    async def get(self, wait: float) -> Reading[T] | None:
        """The fresh reading, or the next one waited for at most `wait` seconds; when it
        does not end in time, the last reading with `serve_last`, else None."""
        task = self._ask()
        if isinstance(task, Reading):
            return task
        try:
            return await asyncio.wait_for(asyncio.shield(task), timeout=max(wait, 0.0))
        except TimeoutError:
            return self.last if self.serve_last else None

    async def value(self) -> T:
        """The fresh value, or the next one, however long it takes (the caller's own deadline bounds it)."""
        task = self._ask()
        if isinstance(task, Reading):
            return task.value
        return (await asyncio.shield(task)).value

    def _ask(self) -> Reading[T] | asyncio.Task[Reading[T]]:
        self._life.ensure_open()
        if self.last is not None and self.fresh():
            return self.last
        if self._in_flight is None:
            self.reads += 1
            task = asyncio.get_running_loop().create_task(self._run(), name=self._task_name)
            self._in_flight = task
            task.add_done_callback(self._ended)
        return self._in_flight

    async def _run(self) -> Reading[T]:
        try:
            value = await self._read()
            self.last = Reading(value, self.clock.monotonic(), self.generation + 1)
            return self.last
        finally:
            self._in_flight = None  # a caller after this one reads again (or gets the reading just kept)

    def _ended(self, task: asyncio.Task[Reading[T]]) -> None:
        if self._in_flight is task:
            self._in_flight = None
        if not task.cancelled():
            task.exception()  # retrieved here too, in case every caller gave up waiting

    async def close(self) -> None:
        """Cancel the read in flight and wait for it to end (bounded)."""
        self._life.close()
        await cancel_and_wait([self._in_flight])
