"""The process families: read as the Prometheus client libraries read them, and
sampled at most once a second whatever the scrape rate."""

from __future__ import annotations

import os
import resource

from prometheus_client import ProcessCollector
from prometheus_client.parser import text_string_to_metric_families

from exporter.process import ProcessTail, parse_stat, read_samples
from exporter.samples import Sample
from registry.families import PROCESS_FAMILIES
from tests.clock import FakeClock


def reference() -> dict[str, float]:
    """What client_python's own collector reads for this process."""
    collector = ProcessCollector(pid=lambda: "self", registry=None)
    return {sample.name: sample.value for family in collector.collect() for sample in family.samples}


def test_the_values_agree_with_client_python() -> None:
    ours = {sample.family: sample.value for sample in read_samples()}
    theirs = reference()
    assert set(ours) == {family.name for family in PROCESS_FAMILIES}
    assert ours["process_start_time_seconds"] == theirs["process_start_time_seconds"]
    assert ours["process_max_fds"] == theirs["process_max_fds"] == resource.getrlimit(resource.RLIMIT_NOFILE)[0]
    # These move between two reads: equal within what one read costs.
    assert abs(ours["process_cpu_seconds_total"] - theirs["process_cpu_seconds_total"]) < 0.5
    assert abs(ours["process_resident_memory_bytes"] - theirs["process_resident_memory_bytes"]) < 16 << 20
    assert abs(ours["process_virtual_memory_bytes"] - theirs["process_virtual_memory_bytes"]) < 64 << 20
    assert abs(ours["process_open_fds"] - theirs["process_open_fds"]) <= 2


def test_a_command_name_with_spaces_and_parentheses_is_skipped_whole() -> None:
    with open("/proc/self/stat") as file:
        real = file.read()
    pid, rest = real.split(" ", 1)
    hostile = pid + " (a) b (c d)" + rest[rest.rindex(")") + 1 :]
    assert parse_stat(hostile) == parse_stat(real)


def test_no_proc_no_process_families(tmp_path: os.PathLike[str]) -> None:
    assert read_samples(str(tmp_path)) == []


def test_a_flood_of_scrapes_reads_proc_once_a_second() -> None:
    clock = FakeClock()
    reads: list[int] = []

    def counted() -> list[Sample]:
        reads.append(1)
        return read_samples()

    tail = ProcessTail(clock.monotonic, counted)
    first = tail.tail()
    for _ in range(1000):
        assert tail.tail() is first
    clock.advance(1.0)
    tail.tail()
    assert len(reads) == 2
    parsed = {family.name: family for family in text_string_to_metric_families(first.decode())}
    assert parsed["process_cpu_seconds"].type == "counter"
    assert set(parsed) == {"process_cpu_seconds", "process_open_fds", "process_max_fds"} | {
        "process_virtual_memory_bytes",
        "process_resident_memory_bytes",
        "process_start_time_seconds",
    }
