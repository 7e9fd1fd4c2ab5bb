"""Every YAML file the exporter reads: no aliases, no repeated keys, bounded size and echo."""

from __future__ import annotations

from pathlib import Path

import pytest

from exporter.yamlfile import MAX_BYTES, YamlError, parse_yaml, read_capped

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
