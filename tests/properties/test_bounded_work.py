"""Generated large configuration files (600 KB to 1 MiB, under the size cap):
flow lists and maps, block lists and maps, nested flow lists, under a key the
format does not know or in a list the format reads, in the web configuration
and in the declarations file; and a megabyte of what the node count does not
count (one scalar, quotes, spaces, a comment). Every one is refused or loaded,
and the composer's work is bounded by the node count, not by the bytes: it is
counted as the events the composer takes from the parser (LibYAML's, which
scans only as far as the composer asks). The time each file takes is recorded
(as an event of the statistics), never asserted (timings are bench/'s:
bench/config_files.py)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from exporter import yamlfile
from exporter.backlogs import load_declarations
from exporter.errors import ConfigError
from exporter.http.webconfig import load_web_config
from exporter.yamlfile import MAX_BYTES, MAX_DEPTH, MAX_LINES, MAX_NODES, YamlError, parse_yaml
from tests.hypotheses import examples

# A node is at most a scalar or a collection's start and end; the composer peeks one
# event ahead, and a refusal at the depth bound leaves its own collections open.
LOOKAHEAD = 2 * MAX_DEPTH + 16
ITEMS = st.one_of(
    st.sampled_from(["a", "1", "x-frame-options", "'q'", '"d"', "~", "true", "$2b$04$x"]),
    st.text(alphabet="abcdefghijklmnopqrstuvwxyz0123456789_", min_size=1, max_size=12),
)


def _flow_list(item: str, count: int) -> str:
    return "[" + ", ".join([item] * count) + "]"


def _flow_map(item: str, count: int) -> str:
    return "{" + ", ".join(f"k{i}: {item}" for i in range(count)) + "}"


def _block_list(item: str, count: int) -> str:
    return "\n" + "".join(f"  - {item}\n" for _ in range(count))


def _block_map(item: str, count: int) -> str:
    return "\n" + "".join(f"  k{i}: {item}\n" for i in range(count))


def _nested_flow(item: str, count: int) -> str:
    return "[" + ", ".join(f"[{item}, [{item}]]" for _ in range(count // 3)) + "]"


SHAPES: dict[str, Callable[[str, int], str]] = {
    "flow list": _flow_list,
    "flow map": _flow_map,
    "block list": _block_list,
    "block map": _block_map,
    "nested flow lists": _nested_flow,
}


def _scalar(item: str, size: int) -> str:
    return item * max(1, size // len(item))


def _quoted(item: str, size: int) -> str:
    return "'" + "''" * (size // 2) + "'"


# What the node count does not count: bytes in one node, or in none.
MEGABYTES: dict[str, Callable[[str, int], str]] = {
    "one scalar": _scalar,
    "one quoted scalar of quotes": _quoted,
}
# Where the generated value goes: under a key the format does not know, or where it reads a list.
PLACES = {
    "web, unknown key": ("web", "basic_auth_users: {}\nunknown:"),
    "declarations, unknown key": ("declarations", "unknown:"),
    "declarations, groups": ("declarations", "backlogs:\n  b:\n    help: x\n    scope: global\n    groups:"),
}


@st.composite
def large_files(draw: st.DrawFn) -> tuple[str, str, str]:
    """(the shape, web or declarations, a file of 600 KB to 1 MiB holding it where PLACES say)."""
    place = draw(st.sampled_from(sorted(PLACES)))
    kind, head = PLACES[place]
    shape = draw(st.sampled_from(sorted(SHAPES) + sorted(MEGABYTES) + ["spaces", "a comment"]))
    item = draw(ITEMS)
    size = draw(st.integers(min_value=600_000, max_value=MAX_BYTES - 100))
    if shape in SHAPES:
        one = len(SHAPES[shape](item, 3)) / 3
        text = head + " " + SHAPES[shape](item, max(3, int(size / one)))
    elif shape in MEGABYTES:
        text = head + " " + MEGABYTES[shape](item, size)
    elif shape == "spaces":
        text = head + " a\n" + " " * size + "\n"
    else:
        text = "#" + "c" * size + "\n" + head + " a\n"
    text = text[: MAX_BYTES - 1] if len(text.encode()) >= MAX_BYTES else text
    return f"{place}: {shape}", kind, text


class Work:
    """The events the composer took from the parser while it is counted."""

    def __init__(self) -> None:
        self.events = 0


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    work = Work()
    get_event: Callable[[Any], Any] = yamlfile.LOADER.get_event

    def counted_event(parser: Any) -> Any:
        work.events += 1
        return get_event(parser)

    with monkeypatch.context() as patch:
        patch.setattr(yamlfile.LOADER, "get_event", counted_event)
        yield work


@settings(
    max_examples=examples(fast=15, ci=60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=large_files())
def test_a_large_file_is_refused_or_loaded_within_a_bounded_number_of_nodes(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str, str]
) -> None:
    shape, kind, text = case
    assert 500_000 < len(text.encode()) < MAX_BYTES
    started = time.perf_counter()
    with counted(monkeypatch) as work:
        try:
            parse_yaml(text, secret=kind == "web")
            outcome = "loaded"
        except YamlError as exc:
            outcome = "refused"
            refusal = str(exc)
        else:
            refusal = ""
    seconds = time.perf_counter() - started
    event(f"{shape}: {outcome}")
    assert "\n" not in refusal
    event(f"{shape}: parsed in {round(seconds * 4) / 4:.2f} s (recorded, not asserted)")
    assert work.events <= 2 * MAX_NODES + LOOKAHEAD, (shape, work.events)
    assert work.events > 0 or refusal == f"more than {MAX_LINES:,} lines", "the events were not counted"
    # The file's own loader refuses it or loads it through the same parser, in one line.
    path: Path = tmp_path_factory.mktemp("large") / "config.yml"
    path.write_text(text, encoding="utf-8")
    refused = ""
    try:
        if kind == "web":
            load_web_config(str(path))
        else:
            load_declarations(str(path), "--backlogs.config-file")
    except ConfigError as exc:
        refused = str(exc)
    assert "\n" not in refused


def test_a_file_of_as_many_nodes_as_allowed_loads() -> None:
    """The bound refuses past MAX_NODES, not before: a list of MAX_NODES - 2 items
    (with the document's mapping and its key) loads whole."""
    items = MAX_NODES - 3
    assert parse_yaml("k: [" + ", ".join(["a"] * items) + "]") == {"k": ["a"] * items}
    with pytest.raises(YamlError, match=f"more than {MAX_NODES:,} values"):
        parse_yaml("k: [" + ", ".join(["a"] * (items + 1)) + "]")
