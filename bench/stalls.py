"""Where the event loop is held: a watcher thread that asks the loop for a
callback every few milliseconds and, while the callback waits, samples the
loop thread's stack; and every garbage collection with its generation and
duration. Installed into a served exporter by bench/bus_serve.py when
ORPYCAMCP_BENCH_STALLS names a file; each hold longer than the threshold is
written there as one JSON line: its length, the most frequent innermost
frames seen during it, and the collections that ran inside it.
"""

from __future__ import annotations

import asyncio
import collections
import gc
import json
import sys
import threading
import time
from pathlib import Path
from typing import Any

TICK_S = 0.002
THRESHOLD_S = 0.02
FRAMES = 6


def _where(frame: Any) -> str:
    """The innermost frames of a stack, innermost first, as file:line function."""
    parts: list[str] = []
    while frame is not None and len(parts) < FRAMES:
        code = frame.f_code
        parts.append(f"{Path(code.co_filename).name}:{frame.f_lineno} {code.co_name}")
        frame = frame.f_back
    return " < ".join(parts)


class StallWatch:
    def __init__(self, loop: asyncio.AbstractEventLoop, output: Path) -> None:
        self.loop = loop
        self.output = output
        self.loop_thread = threading.get_ident()
        self.collections: list[tuple[float, int, float, str]] = []  # (started, generation, seconds, thread)
        self._gc_started = 0.0
        gc.callbacks.append(self._on_gc)
        threading.Thread(target=self._watch, name="stall-watch", daemon=True).start()

    def _on_gc(self, phase: str, info: dict[str, int]) -> None:
        now = time.perf_counter()
        if phase == "start":
            self._gc_started = now
        else:
            thread = "loop" if threading.get_ident() == self.loop_thread else threading.current_thread().name
            self.collections.append((self._gc_started, info["generation"], now - self._gc_started, thread))
            del self.collections[:-1000]

    def mark(self, event: str) -> None:
        """A point of the served exporter's timeline, written among the holds."""
        with self.output.open("a") as out:
            out.write(json.dumps({"at": round(time.time(), 3), "event": event}) + "\n")

    def _watch(self) -> None:
        with self.output.open("a") as out:
            while True:
                answered = threading.Event()
                asked = time.perf_counter()
                self.loop.call_soon_threadsafe(answered.set)
                seen: collections.Counter[str] = collections.Counter()
                while not answered.wait(TICK_S):
                    frame = sys._current_frames().get(self.loop_thread)
                    seen[_where(frame)] += 1
                held = time.perf_counter() - asked
                if held >= THRESHOLD_S:
                    inside = [
                        {"generation": generation, "ms": round(seconds * 1000, 1), "thread": thread}
                        for started, generation, seconds, thread in list(self.collections)
                        if started >= asked - 0.001
                    ]
                    record = {
                        "at": round(time.time(), 3),
                        "held_ms": round(held * 1000, 1),
                        "where": [{"samples": count, "stack": stack} for stack, count in seen.most_common(4)],
                        "collections": inside,
                    }
                    out.write(json.dumps(record) + "\n")
                    out.flush()
                time.sleep(TICK_S)
