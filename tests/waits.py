"""Waiting on an observable condition instead of sleeping for a guessed time."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Awaitable, Callable


async def wait_until(condition: Callable[[], Awaitable[bool]], timeout: float, step: float = 0.05) -> bool:  # noqa: ASYNC109
    """Poll `condition` until it holds (True) or `timeout` seconds have passed (False)."""
    end = time.monotonic() + timeout
    while True:
        if await condition():
            return True
        if time.monotonic() > end:
            return False
        await asyncio.sleep(step)


def wait_until_sync(condition: Callable[[], bool], timeout: float, step: float = 0.05) -> bool:
    """`wait_until` for code outside an event loop (a process's log, a server's files)."""
    end = time.monotonic() + timeout
    while True:
        if condition():
            return True
        if time.monotonic() > end:
            return False
        time.sleep(step)
