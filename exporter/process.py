"""The process families (process_cpu_seconds_total, process_open_fds, ...), read
from /proc the way the Prometheus client libraries read them.

They follow the cached page as part of its tail, so they never invalidate it;
a sample is reused for up to a second, so a flood of scrapes costs one read of
/proc a second, not one per request."""

from __future__ import annotations

import os
import resource
import time
from collections.abc import Callable
from typing import NamedTuple

from exporter.exposition.text import FamilySamples, render
from exporter.samples import Sample
from registry.families import (
    PROCESS_CPU,
    PROCESS_FAMILIES,
    PROCESS_MAX_FDS,
    PROCESS_OPEN_FDS,
    PROCESS_RESIDENT_MEMORY,
    PROCESS_START_TIME,
    PROCESS_VIRTUAL_MEMORY,
)

SAMPLE_EVERY = 1.0  # seconds a sample is reused for
PROC = "/proc"


class StatFields(NamedTuple):
    """What /proc/<pid>/stat says of the process, in its own units."""

    cpu_ticks: int  # utime + stime
    start_ticks: int  # since boot
    virtual_bytes: int
    resident_pages: int


def parse_stat(text: str) -> StatFields:
    """The fields of a /proc/<pid>/stat line. The command name (field 2) is in
    parentheses and may hold spaces and parentheses itself: fields are counted
    after its last closing parenthesis."""
    rest = text[text.rindex(")") + 2 :].split()
    # rest[0] is field 3 (state): field n is rest[n - 3].
    return StatFields(
        cpu_ticks=int(rest[11]) + int(rest[12]),
        start_ticks=int(rest[19]),
        virtual_bytes=int(rest[20]),
        resident_pages=int(rest[21]),
    )


def boot_time(stat_text: str) -> float:
    """`btime` of /proc/stat: the boot, in seconds since the epoch."""
    for line in stat_text.splitlines():
        if line.startswith("btime "):
            return float(line.split()[1])
    raise ValueError("no btime line in /proc/stat")


def read_samples(proc: str = PROC) -> list[Sample]:
    """The process families now; none where /proc cannot be read (not Linux)."""
    try:
        with open(f"{proc}/self/stat") as file:
            stat = parse_stat(file.read())
        with open(f"{proc}/stat") as file:
            booted = boot_time(file.read())
        open_fds = len(os.listdir(f"{proc}/self/fd"))
    except (OSError, ValueError, IndexError):
        return []
    ticks = os.sysconf("SC_CLK_TCK")
    page = os.sysconf("SC_PAGE_SIZE")
    max_fds = resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    samples = [
        Sample(PROCESS_CPU.name, (), stat.cpu_ticks / ticks),
        Sample(PROCESS_OPEN_FDS.name, (), open_fds),
        Sample(PROCESS_VIRTUAL_MEMORY.name, (), stat.virtual_bytes),
        Sample(PROCESS_RESIDENT_MEMORY.name, (), stat.resident_pages * page),
        Sample(PROCESS_START_TIME.name, (), booted + stat.start_ticks / ticks),
    ]
    if max_fds != resource.RLIM_INFINITY:
        samples.append(Sample(PROCESS_MAX_FDS.name, (), max_fds))
    return samples


def assemble_process(samples: list[Sample]) -> list[FamilySamples]:
    return [FamilySamples(family, [s for s in samples if s.family == family.name]) for family in PROCESS_FAMILIES]


class ProcessTail:
    """The rendered process families, sampled at most once per SAMPLE_EVERY seconds."""

    def __init__(self, clock: Callable[[], float] = time.monotonic, read: Callable[[], list[Sample]] = read_samples):
        self._clock = clock
        self._read = read
        self._at = -SAMPLE_EVERY
        self._rendered = b""

    def tail(self) -> bytes:
        now = self._clock()
        if now - self._at >= SAMPLE_EVERY:
            self._rendered = render(assemble_process(self._read()))
            self._at = now
        return self._rendered
