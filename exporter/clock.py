"""Where time comes from: the monotonic and wall clocks, and the timers that
fire on them. The exporter reads the system's; the tests drive their own
(tests/clock.py), so a TTL or an idle close passes when a test says so."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Protocol


class Timer(Protocol):
    def cancel(self) -> None: ...


def loop_call_later(delay: float, callback: Callable[[], None]) -> Timer:
    """`callback` after `delay` seconds on the running event loop."""
    return asyncio.get_running_loop().call_later(delay, callback)


@dataclass(frozen=True)
class Clock:
    monotonic: Callable[[], float] = time.monotonic
    wall: Callable[[], float] = time.time
    call_later: Callable[[float, Callable[[], None]], Timer] = loop_call_later


SYSTEM_CLOCK = Clock()
