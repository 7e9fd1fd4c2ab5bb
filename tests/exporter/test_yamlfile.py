"""Every YAML file the exporter reads: no aliases, no repeated keys, bounded size and echo."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.yamlfile import MAX_BYTES, MAX_DEPTH, YamlError, parse_yaml, read_capped

LAUGHS = "\n".join(
    ['a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]']
    + [f"{chr(98 + i)}: &{chr(98 + i)} [{','.join(['*' + chr(97 + i)] * 9)}]" for i in range(8)]
)


def test_plain_documents_read_as_before() -> None:
    assert parse_yaml("backlogs:\n  kyc: {help: x, groups: [a, b]}\n") == {
        "backlogs": {"kyc": {"help": "x", "groups": ["a", "b"]}}
    }


def test_nested_aliases_are_refused_before_any_expansion() -> None:
    assert len(LAUGHS) < 700
    with pytest.raises(YamlError, match=r"refused \(line 2\): aliases \(\*name\) are not accepted"):
        parse_yaml(LAUGHS)


def test_a_single_alias_is_refused_too() -> None:
    with pytest.raises(YamlError, match="aliases"):
        parse_yaml("a: &x 1\nb: *x\n")


def test_a_repeated_key_is_refused() -> None:
    with pytest.raises(YamlError, match=r"key 'kyc' is given twice"):
        parse_yaml("kyc: 1\nkyc: 2\n")


def test_a_huge_key_is_echoed_as_a_short_excerpt() -> None:
    key = "k" * 5_000_000
    with pytest.raises(YamlError) as caught:
        parse_yaml(f"{key[:500_000]}: 1\n{key[:500_000]}: 2\n")
    assert len(str(caught.value)) < 300


def test_an_oversized_file_is_refused_without_reading_it_whole(tmp_path: Path) -> None:
    big = tmp_path / "big.yml"
    big.write_text("# " + "x" * (MAX_BYTES + 10))
    with pytest.raises(YamlError, match="larger than"):
        read_capped(str(big))


def test_control_characters_in_an_error_are_escaped() -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml("a: [1\n\x1b[2J")
    assert "\x1b" not in str(caught.value)


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("? [1, 2]\n: x\n", "a mapping key is a list or a mapping"),
        ("a: {? {b: 1} : x}\n", "a mapping key is a list or a mapping"),
        ("a: " + "9" * 4400 + "\n", "an integer outside the 64-bit range"),
        (f"a: {1 << 63}\n", "an integer outside the 64-bit range"),
        ("a: 0x" + "f" * 17 + "\n", "an integer outside the 64-bit range"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than"),
        ("a: " + "{b: " * 2000 + "1" + "}" * 2000 + "\n", "nested deeper than"),
        ("a: 2024-02-30\n", "not a valid timestamp"),
        ("a: !!int abc\n", "not a valid int"),
        ("a: !!map x\n", "not a valid map"),
        ('a: "\\ud800"\n', "lone surrogate"),
        ('"\\udc00": 1\n', "lone surrogate"),
    ],
)
def test_what_pyyaml_would_crash_on_is_one_refusal(document: str, problem: str) -> None:
    with pytest.raises(YamlError, match=problem) as caught:
        parse_yaml(document)
    assert "\n" not in str(caught.value)
    assert len(str(caught.value)) < 200


def test_64_bit_integers_and_nesting_to_the_limit_are_read() -> None:
    assert parse_yaml(f"a: {(1 << 63) - 1}\nb: {-(1 << 63)}\n") == {"a": (1 << 63) - 1, "b": -(1 << 63)}
    depth = MAX_DEPTH - 1  # the top-level mapping is one level
    assert parse_yaml("a: " + "[" * (depth - 1) + "]" * (depth - 1) + "\n") is not None
