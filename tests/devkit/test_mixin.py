"""devkit.mixin's index of what each rule reads (the config-key test's cut, the mixin
mutation's rules affected)."""

from __future__ import annotations

import pytest

from devkit import mixin
from devkit.tools import tool


@pytest.fixture(scope="module")
def rendering() -> mixin.Rendering:
    tool("jsonnet")
    return mixin.evaluate_rules({}, mixin.MIXIN_DIR)


def test_a_comment_is_no_read_and_a_string_keeps_its_hash() -> None:
    assert mixin._code('x{a="#b"} # c OrpycamcpY\nand y # z') == 'x{a="#b"} \nand y '
    assert mixin._code("x{a='#b', c=`#d`} or y") == "x{a='#b', c=`#d`} or y"


def test_a_name_is_named_whole() -> None:
    named = mixin.naming({"a:b", "OrpycamcpX"})
    assert named.findall('a:b + a:b_c + c:a:b + ALERTS{alertname="OrpycamcpX"} + OrpycamcpXY') == ["a:b", "OrpycamcpX"]


def test_each_rule_reads_rules_of_the_render(rendering: mixin.Rendering) -> None:
    read = mixin.reads(rendering)
    names = {mixin.rule_name(rule) for group in mixin.rule_groups(rendering) for rule in group["rules"]}
    assert set(read) == names
    assert all(names >= reading and name not in reading for name, reading in read.items())
    assert "orpycamcp:signal_measured:max" in read["OrpycamcpPlatformTotalUnknown"]
    # Named in a comment of its expression ("OrpycamcpSignalUnmeasured says it all"), not read.
    assert "OrpycamcpSignalUnmeasured" not in read["OrpycamcpPlatformTotalUnknown"]


def test_reached_follows_edges_to_the_end_and_readers_turn_them_around() -> None:
    read = {"alert": {"b:c"}, "b:c": {"a:b"}, "a:b": set(), "other": {"a:b"}}
    assert mixin.reached({"alert"}, read) == {"alert", "b:c", "a:b"}
    assert mixin.reached({"a:b"}, mixin.readers(read)) == {"a:b", "b:c", "alert", "other"}
