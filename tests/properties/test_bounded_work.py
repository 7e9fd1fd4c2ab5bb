"""Generated large configuration files (600 KB to 900 KB: flow lists and maps,
block lists and maps, nested flow lists, under a key the format does not know):
every one is refused or loaded, and the parser's work is bounded by the node
count, not by the bytes. The work is counted as the parser's events and the
scanner's tokens; the time each file takes is recorded (as an event of the
statistics), never asserted (timings are bench/'s)."""

from __future__ import annotations

import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import HealthCheck, event, given, settings
from hypothesis import strategies as st

from exporter.errors import ConfigError
from exporter.http.webconfig import load_web_config
from exporter.yamlfile import MAX_BYTES, MAX_DEPTH, MAX_NODES, YamlError, parse_yaml
from tests.hypotheses import examples

# A node is at most one scalar or collection start, one entry or key indicator and one
# end; the scanner looks a few tokens ahead of the parser.
TOKENS_PER_NODE = 4
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


@st.composite
def large_files(draw: st.DrawFn) -> tuple[str, str]:
    """(the shape, a web configuration of 600 KB to 900 KB holding it under an unknown key)."""
    shape = draw(st.sampled_from(sorted(SHAPES)))
    item = draw(ITEMS)
    size = draw(st.integers(min_value=600_000, max_value=900_000))
    head = "basic_auth_users: {}\nunknown:"
    one = len(SHAPES[shape](item, 3)) / 3
    text = head + " " + SHAPES[shape](item, max(3, int(size / one)))
    return shape, text[: MAX_BYTES - 1] if len(text) >= MAX_BYTES else text


class Work:
    """The parser's events and the scanner's tokens while it is counted."""

    def __init__(self) -> None:
        self.events = 0
        self.tokens = 0


@contextmanager
def counted(monkeypatch: pytest.MonkeyPatch) -> Iterator[Work]:
    work = Work()
    get_event: Callable[[Any], Any] = yaml.parser.Parser.get_event
    get_token: Callable[[Any], Any] = yaml.scanner.Scanner.get_token

    def counted_event(parser: Any) -> Any:
        work.events += 1
        return get_event(parser)

    def counted_token(scanner: Any) -> Any:
        work.tokens += 1
        return get_token(scanner)

    with monkeypatch.context() as patch:
        patch.setattr(yaml.parser.Parser, "get_event", counted_event)
        patch.setattr(yaml.scanner.Scanner, "get_token", counted_token)
        yield work


@settings(
    max_examples=examples(fast=15, ci=60),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow, HealthCheck.data_too_large],
)
@given(case=large_files())
def test_a_large_file_is_refused_or_loaded_within_a_bounded_number_of_nodes(
    monkeypatch: pytest.MonkeyPatch, tmp_path_factory: pytest.TempPathFactory, case: tuple[str, str]
) -> None:
    shape, text = case
    assert 500_000 < len(text.encode()) < MAX_BYTES
    started = time.perf_counter()
    with counted(monkeypatch) as work:
        try:
            parse_yaml(text, secret=True)
            outcome = "loaded"
        except YamlError as exc:
            outcome = "refused"
            refusal = str(exc)
        else:
            refusal = ""
    seconds = time.perf_counter() - started
    event(f"{shape}: {outcome}")
    assert "\n" not in refusal
    event(f"parsed in {round(seconds * 4) / 4:.2f} s (recorded, not asserted)")
    assert work.events <= 2 * MAX_NODES + LOOKAHEAD, (shape, work.events)
    assert work.tokens <= TOKENS_PER_NODE * MAX_NODES + LOOKAHEAD, (shape, work.tokens)
    # The web configuration refuses it through the same loader, in one line.
    path: Path = tmp_path_factory.mktemp("large") / "web.yml"
    path.write_text(text, encoding="utf-8")
    with pytest.raises(ConfigError) as refused:
        load_web_config(str(path))
    assert "\n" not in str(refused.value)


def test_a_file_of_as_many_nodes_as_allowed_loads() -> None:
    """The bound refuses past MAX_NODES, not before: a list of MAX_NODES - 2 items
    (with the document's mapping and its key) loads whole."""
    items = MAX_NODES - 3
    assert parse_yaml("k: [" + ", ".join(["a"] * items) + "]") == {"k": ["a"] * items}
    with pytest.raises(YamlError, match=f"more than {MAX_NODES:,} values"):
        parse_yaml("k: [" + ", ".join(["a"] * (items + 1)) + "]")
