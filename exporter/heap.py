"""The cyclic garbage collector, kept from stopping the event loop.

A full collection walks every container the process holds: with 100,000
declared pairs, the registry alone makes one take a quarter of a second, and
a measurement's replies several times that, each one a stall no health check
or cached scrape gets through. So what is built at start (the registry, the
settings) is frozen out of the collections, and no automatic collection runs
while a measurement is in flight: what a measurement allocates is acyclic and
freed by reference counting as soon as it ends, and a measurement ends by its
deadline. Collections resume when the last measurement in flight ends; what
it keeps, its outcome, is a few objects however many series it holds
(exporter/samples.py), so the first collection after it has little to walk.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

_in_flight = 0
_was_enabled = True


def freeze_startup() -> None:
    """What exists now lives as long as the process: out of every future collection."""
    gc.collect()
    gc.freeze()


@contextmanager
def collections_paused() -> Iterator[None]:
    """No automatic collection while the block (any such block) runs."""
    global _in_flight, _was_enabled
    if _in_flight == 0:
        _was_enabled = gc.isenabled()
        gc.disable()
    _in_flight += 1
    try:
        yield
    finally:
        _in_flight -= 1
        if _in_flight == 0 and _was_enabled:
            gc.enable()
