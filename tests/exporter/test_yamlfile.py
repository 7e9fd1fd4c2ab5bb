"""Every YAML file the exporter reads: no aliases, no repeated keys, bounded size and echo."""

from __future__ import annotations

import contextlib
import os
import threading
from pathlib import Path

import pytest
import yaml

from exporter import yamlfile
from exporter.yamlfile import MAX_BYTES, MAX_DEPTH, MAX_ECHO, YamlError, excerpt, parse_yaml, read_capped

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


def test_a_repeated_key_is_named_with_its_line() -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml("groups: [a]\nkyc: 1\nkyc: 2\n")
    assert str(caught.value) == "refused (line 3): key 'kyc' is given twice"


def test_a_syntax_error_is_not_valid_yaml_with_its_line_and_problem() -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml("a: [1\n")
    assert str(caught.value) == "not valid YAML (line 2): did not find expected ',' or ']'"


def test_an_error_without_a_line_says_none() -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml("a: \x07")
    assert str(caught.value).startswith("not valid YAML: unacceptable character #x0007")


def test_a_long_problem_is_cut_to_200_characters() -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml("a: !" + "x" * 300 + " 1")
    prefix = "refused (line 1): "
    assert str(caught.value).startswith(prefix + "could not determine a constructor for the tag '!xxx")
    assert len(str(caught.value)) == len(prefix) + 200


@pytest.mark.parametrize(("length", "cut"), [(MAX_ECHO, False), (MAX_ECHO + 1, True)])
def test_an_excerpt_is_at_most_max_echo_characters(length: int, cut: bool) -> None:
    value = "k" * (length - 2)  # repr() adds the quotes
    shown = excerpt(value)
    if cut:
        assert shown == repr(value)[: MAX_ECHO - 3] + "..."
    else:
        assert shown == repr(value)
    assert len(shown) == MAX_ECHO


def test_a_document_of_exactly_the_cap_is_read() -> None:
    text = "a: 1\n#" + "x" * (MAX_BYTES - 6)
    assert len(text.encode()) == MAX_BYTES
    assert parse_yaml(text) == {"a": 1}
    with pytest.raises(YamlError) as caught:
        parse_yaml(text + "x")
    assert str(caught.value) == f"larger than {MAX_BYTES} bytes"


def test_a_file_is_read_as_utf8_up_to_the_cap(tmp_path: Path) -> None:
    small = tmp_path / "small.yml"
    small.write_bytes("help: Übersicht\n".encode())
    assert read_capped(str(small)) == "help: Übersicht\n"
    exact = tmp_path / "exact.yml"
    exact.write_bytes(b"#" * MAX_BYTES)
    assert len(read_capped(str(exact))) == MAX_BYTES


def test_a_file_is_never_read_past_the_cap(tmp_path: Path) -> None:
    """A pipe that never ends (a device, a FIFO): refused once past the cap, not read to its end."""
    fifo = tmp_path / "endless"
    os.mkfifo(fifo)
    returned = threading.Event()
    writer_gave_up = threading.Event()

    def write() -> None:
        # Open until the reader returns (or 30 s): a reader that reads to the end waits here.
        with contextlib.suppress(BrokenPipeError), open(fifo, "wb", buffering=0) as pipe:
            pipe.write(b"#" * (MAX_BYTES + 10))
            if not returned.wait(30):
                writer_gave_up.set()

    thread = threading.Thread(target=write)
    thread.start()
    try:
        with pytest.raises(YamlError, match="larger than"):
            read_capped(str(fifo))
    finally:
        returned.set()
        # A writer still waiting for a reader (one that never opened the pipe) is let go.
        os.close(os.open(fifo, os.O_RDONLY | os.O_NONBLOCK))
        thread.join()
    assert not writer_gave_up.is_set(), "read to the end of the pipe"


@pytest.mark.parametrize(
    ("document", "problem"),
    [
        ("? [1, 2]\n: x\n", "a mapping key is a list or a mapping"),
        ("a: {? {b: 1} : x}\n", "a mapping key is a list or a mapping"),
        ("a: " + "9" * 4400 + "\n", "an integer outside the 64-bit range"),
        (f"a: {1 << 63}\n", "an integer outside the 64-bit range"),
        ("a: 0x" + "f" * 17 + "\n", "an integer outside the 64-bit range"),
        ("a: " + "[" * 5000 + "]" * 5000 + "\n", "nested deeper than|exceeded maximum nesting depth"),
        ("a: " + "{b: " * 2000 + "1" + "}" * 2000 + "\n", "nested deeper than|exceeded maximum nesting depth"),
        ("a: 2024-02-30\n", "not a valid timestamp"),
        ("a: !!int abc\n", "not a valid int"),
        ("a: !!map x\n", "not a valid map"),
        ('a: "\\ud800"\n', "invalid Unicode character escape code"),
        ('"\\udc00": 1\n', "invalid Unicode character escape code"),
        ("a: \ud800\n", "unacceptable character #xd800"),
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


@pytest.mark.parametrize(
    ("text", "problem"),
    [
        ("a: " + "[" * (MAX_DEPTH - 1) + "]" * (MAX_DEPTH - 1), None),  # the mapping and its lists: the limit
        ("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH, f"nested deeper than {MAX_DEPTH} levels"),
        ("a: 2024-02-30", "a value that is not a valid timestamp"),
        ("? [a]\n: 1", "a mapping key is a list or a mapping: keys are names"),
        (f"a: {2**63 - 1}", None),
        (f"a: {-(2**63)}", None),
        (f"a: {2**63}", "an integer outside the 64-bit range (-2^63 to 2^63-1)"),
        (f"a: {-(2**63) - 1}", "an integer outside the 64-bit range (-2^63 to 2^63-1)"),
        ('a: "\\ud800"', "not valid YAML (line 2): found invalid Unicode character escape code"),
    ],
)
def test_each_refusal_names_its_line(text: str, problem: str | None) -> None:
    document = "x: 1\n" + text + "\n"  # the value on line 2
    if problem is None:
        assert parse_yaml(document)["x"] == 1  # type: ignore[index]
        return
    with pytest.raises(YamlError) as caught:
        parse_yaml(document)
    expected = problem if problem.startswith("not valid YAML") else f"refused (line 2): {problem}"
    assert str(caught.value) == expected


NAMES = frozenset({"basic_auth_users", "tls_server_config", "min_version"})


@pytest.mark.parametrize(
    ("text", "refusal"),
    [
        # A plaintext password written as a tag: its place, never its text.
        (
            "basic_auth_users:\n  prometheus: !Secr3tPassw0rd\n",
            "refused (line 2, column 15, at basic_auth_users > entry 1):"
            " could not determine a constructor for the tag (not shown)",
        ),
        (
            "basic_auth_users:\n  !Secr3tPassw0rd prometheus: x\n",
            "refused (line 2, column 3, at basic_auth_users > the key of entry 1):"
            " could not determine a constructor for the tag (not shown)",
        ),
        (
            "tls_server_config:\n  min_version: [TLS12, !Secr3tPassw0rd 1]\n",
            "refused (line 2, column 24, at tls_server_config > min_version > item 2):"
            " could not determine a constructor for the tag (not shown)",
        ),
        (
            "Secr3tPassw0rd: !!int Secr3tPassw0rd\n",
            "refused (line 1, column 17, at entry 1): a value that is not a valid int",
        ),
        (
            "basic_auth_users:\n  Secr3tPassw0rd: 1\n  Secr3tPassw0rd: 2\n",
            "refused (line 3, column 3, at basic_auth_users): a key is given twice",
        ),
        (
            "Secr3tPassw0rd: [1",
            "not valid YAML (line 2, column 1, at entry 1): did not find expected (not shown) or (not shown)",
        ),
    ],
)
def test_a_refusal_in_a_secret_file_says_where_and_quotes_nothing_of_it(text: str, refusal: str) -> None:
    with pytest.raises(YamlError) as caught:
        parse_yaml(text, secret=True, names=NAMES)
    assert str(caught.value) == refusal
    assert "Secr3t" not in refusal


SMALL_NODES = 100


@pytest.mark.parametrize(
    ("document", "outcome"),
    [
        ("backlogs:\n  kyc: {help: x, groups: [a, b]}\n", {"backlogs": {"kyc": {"help": "x", "groups": ["a", "b"]}}}),
        ("a: &x 1\nb: *x\n", "refused (line 2): aliases (*name) are not accepted: write the value out"),
        ("kyc: 1\nkyc: 2\n", "refused (line 2): key 'kyc' is given twice"),
        ("a: " + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "\n", f"refused (line 1): nested deeper than {MAX_DEPTH} levels"),
        ("k: [" + ", ".join(["a"] * SMALL_NODES) + "]\n", f"refused (line 1): more than {SMALL_NODES} values"),
        ('a: "\\ud800"\n', "refused (line 1): a string with a lone surrogate escape (not Unicode text)"),
        ("a: \ud800\n", "not valid YAML: unacceptable character"),
    ],
)
def test_without_libyaml_the_pure_python_parser_keeps_every_bound(
    monkeypatch: pytest.MonkeyPatch, document: str, outcome: object
) -> None:
    """PyYAML built without LibYAML: the events come from its pure-Python parser, the
    composer and its bounds are the same (the pure-Python parser reads a few times slower)."""
    monkeypatch.setattr(yamlfile, "LOADER", yamlfile._PythonLoader)
    monkeypatch.setattr(yamlfile, "MAX_NODES", SMALL_NODES)  # the same count, cheaper to pass
    if not isinstance(outcome, str):
        assert parse_yaml(document) == outcome
        return
    with pytest.raises(YamlError) as caught:
        parse_yaml(document)
    assert str(caught.value).startswith(outcome)


def test_the_events_come_from_libyaml() -> None:
    """PyYAML's wheels (the locked ones, the image's) bundle LibYAML: the bound on the
    scanner's time (a megabyte in milliseconds) holds where the exporter runs."""
    assert yaml.__with_libyaml__
    assert yamlfile.LOADER.__name__ == "_LibYamlLoader"
