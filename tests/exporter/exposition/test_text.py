"""Golden, byte-exact vectors for the text format 0.0.4, and a cross-check
with prometheus_client's parser."""

from __future__ import annotations

import math

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client.parser import text_string_to_metric_families

from exporter.exposition.text import CONTENT_TYPE, LINES_PER_CHUNK, FamilySamples, format_value, render, rendered
from exporter.samples import Sample
from registry import Family

PLAIN = Family(name="t_plain", help="A plain gauge.", signal="t")
LABELLED = Family(
    name="t_labelled",
    help='Help with \\ backslash,\nnewline and "quotes".',
    signal="t",
    labels=("a", "b"),
    combinations=(("x", "y"), ('q"uo\\te', "new\nline")),
)


def test_content_type_is_text_format_0_0_4() -> None:
    assert CONTENT_TYPE == "text/plain; version=0.0.4; charset=utf-8"


def test_golden_page() -> None:
    page = render(
        [
            FamilySamples(PLAIN, [Sample("t_plain", (), 3.0)]),
            FamilySamples(
                LABELLED,
                [Sample("t_labelled", ("x", "y"), 0.5), Sample("t_labelled", ('q"uo\\te', "new\nline"), 0.0)],
            ),
        ]
    )
    assert page == (
        b"# HELP t_plain A plain gauge.\n"
        b"# TYPE t_plain gauge\n"
        b"t_plain 3\n"
        b'# HELP t_labelled Help with \\\\ backslash,\\nnewline and "quotes".\n'
        b"# TYPE t_labelled gauge\n"
        b't_labelled{a="x",b="y"} 0.5\n'
        b't_labelled{a="q\\"uo\\\\te",b="new\\nline"} 0\n'
    )


@pytest.mark.parametrize("extra", [-1, 0, 1, LINES_PER_CHUNK + 5])
def test_a_page_of_several_chunks_is_the_lines_in_order(extra: int) -> None:
    # Around the chunk size (the headers are two lines of the first chunk).
    count = LINES_PER_CHUNK - 2 + extra
    wide = Family(
        name="t_wide", help="Many.", signal="t", labels=("n",), combinations=tuple((str(i),) for i in range(count))
    )
    page = render(
        [
            FamilySamples(wide, [Sample("t_wide", (str(i),), i) for i in range(count)]),
            FamilySamples(PLAIN, [Sample("t_plain", (), 1)]),
        ]
    )
    expected = [b"# HELP t_wide Many.", b"# TYPE t_wide gauge"]
    expected += [f't_wide{{n="{i}"}} {i}'.encode() for i in range(count)]
    expected += [b"# HELP t_plain A plain gauge.", b"# TYPE t_plain gauge", b"t_plain 1"]
    assert page == b"\n".join(expected) + b"\n"


def test_a_page_is_rendered_in_chunks_of_the_chunk_size() -> None:
    """The work between two hand-backs of the event loop is bounded by the chunk."""
    count = 2 * LINES_PER_CHUNK + 3  # with its two header lines: two whole chunks and five lines
    wide = Family(
        name="t_wide", help="Many.", signal="t", labels=("n",), combinations=tuple((str(i),) for i in range(count))
    )
    families = [FamilySamples(wide, [Sample("t_wide", (str(i),), i) for i in range(count)])]
    chunks = list(rendered(families))
    assert [chunk.count(b"\n") for chunk in chunks] == [LINES_PER_CHUNK, LINES_PER_CHUNK, 5]
    assert b"".join(chunks) == render(families)


def test_empty_family_is_left_out_and_empty_page_is_empty() -> None:
    assert render([FamilySamples(PLAIN, [])]) == b""
    assert render([FamilySamples(PLAIN, []), FamilySamples(LABELLED, [Sample("t_labelled", ("x", "y"), 1.0)])]) == (
        b'# HELP t_labelled Help with \\\\ backslash,\\nnewline and "quotes".\n'
        b"# TYPE t_labelled gauge\n"
        b't_labelled{a="x",b="y"} 1\n'
    )


def test_families_keep_the_given_order() -> None:
    page = render(
        [
            FamilySamples(LABELLED, [Sample("t_labelled", ("x", "y"), 1.0)]),
            FamilySamples(PLAIN, [Sample("t_plain", (), 2.0)]),
        ]
    )
    assert page.index(b"t_labelled{") < page.index(b"t_plain 2")


@pytest.mark.parametrize(
    ("value", "text"),
    [
        (0.0, "0"),
        (-0.0, "-0"),
        (1.0, "1"),
        (42.0, "42"),
        (-7.0, "-7"),
        (0.25, "0.25"),
        (123456.0, "123456"),
        (1234567.0, "1.234567e+06"),
        (1764683400.123, "1.764683400123e+09"),
        (0.0001, "0.0001"),
        (0.00001, "1e-05"),
        (5e-324, "5e-324"),
        (1e15, "1e+15"),
        (1.5e-7, "1.5e-07"),
        (math.inf, "+Inf"),
        (-math.inf, "-Inf"),
        (math.nan, "NaN"),
    ],
)
def test_float_formatting(value: float, text: str) -> None:
    assert format_value(value) == text


@given(st.floats(allow_nan=False, allow_infinity=False))
def test_formatted_floats_round_trip(value: float) -> None:
    assert float(format_value(value)) == value


# Any text the registry admits: every character but surrogates and the control
# characters that have no escape in the format (a newline has one).
label_text = st.text(
    st.characters(exclude_categories=["Cs"]).filter(
        lambda c: c == "\n" or not ("\x00" <= c <= "\x1f" or "\x7f" <= c <= "\x9f")
    ),
    max_size=20,
)
finite = st.floats(allow_nan=False, allow_infinity=True, width=64)


@given(
    values=st.lists(
        st.tuples(label_text, label_text, finite),
        min_size=1,
        max_size=5,
        # Unique as written: an empty value is written "-".
        unique_by=lambda t: (t[0] or "-", t[1] or "-"),
    )
)
def test_prometheus_client_reads_back_what_we_write(values: list[tuple[str, str, float]]) -> None:
    family = Family(
        name="t_fuzz",
        help="Fuzzed \\ help\nwith newline",
        signal="t",
        labels=("a", "b"),
        combinations=tuple((a or "-", b or "-") for a, b, _ in values),
    )
    samples = [Sample("t_fuzz", (a or "-", b or "-"), v) for a, b, v in values]
    page = render([FamilySamples(family, samples)]).decode("utf-8")
    parsed = list(text_string_to_metric_families(page))
    assert len(parsed) == 1
    assert parsed[0].name == "t_fuzz"
    assert parsed[0].documentation == "Fuzzed \\ help\nwith newline"
    assert parsed[0].type == "gauge"
    got = {(s.labels["a"], s.labels["b"]): s.value for s in parsed[0].samples}
    assert got == {(a or "-", b or "-"): v for a, b, v in values}


def test_parts_of_one_family_share_one_header_and_keep_their_labels() -> None:
    """Declared backlogs are parts of shared families: one HELP/TYPE, each part its own labels."""
    grouped = Family("t_backlog", "Pending.", "a", ("backlog", "group"), (("a", "g1"),))
    ungrouped = Family("t_backlog", "Pending.", "b", ("backlog",), (("b",),))
    empty = Family("t_backlog", "Pending.", "c", ("backlog",), (("c",),))
    page = render(
        [
            FamilySamples(empty, []),
            FamilySamples(grouped, [Sample("t_backlog", ("a", "g1"), 2.0)]),
            FamilySamples(ungrouped, [Sample("t_backlog", ("b",), 0.0)]),
            FamilySamples(PLAIN, [Sample("t_plain", (), 1.0)]),
        ]
    )
    assert page == (
        b"# HELP t_backlog Pending.\n"
        b"# TYPE t_backlog gauge\n"
        b't_backlog{backlog="a",group="g1"} 2\n'
        b't_backlog{backlog="b"} 0\n'
        b"# HELP t_plain A plain gauge.\n"
        b"# TYPE t_plain gauge\n"
        b"t_plain 1\n"
    )
    families = list(text_string_to_metric_families(page.decode()))
    assert [family.name for family in families] == ["t_backlog", "t_plain"]


@pytest.mark.parametrize("labels", [("only-one",), ("one", "two", "three")])
def test_a_sample_with_another_number_of_labels_is_never_written(labels: tuple[str, ...]) -> None:
    """Never a sample with a label cut off or left unnamed: the renderer refuses it."""
    family = Family(name="t_pair", help="h", signal="t", labels=("a", "b"), combinations=(("x", "y"),))
    with pytest.raises(ValueError, match="zip"):
        render([FamilySamples(family, [Sample("t_pair", labels, 1)])])
