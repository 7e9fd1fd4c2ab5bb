"""The flags' spelling: one style for all (Prometheus' `--component.setting`), the
earlier spellings read as deprecated aliases that warn once, and the enumerated
values listed by --help."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import httpx
import pytest

from devkit.process import exporter_process
from exporter.arguments import build_parser, deprecated_used, option_values, replacement, with_command
from exporter.options import (
    DEPRECATED_FLAGS,
    FLAGS,
    OPTION_NAMES,
    OptionName,
    env_name,
    field_of,
    flag_of,
    name_of,
    named,
)
from exporter.settings import OPTIONS

DB = "postgresql://u:secret@127.0.0.1:9/platform"
# One word (`--ttl`), or a component, a dot, and the setting in dashed words (`--database.batch-size`).
PROMETHEUS_STYLE = re.compile(r"--[a-z]+|--[a-z]+(\.[a-z0-9]+(-[a-z0-9]+)*)+")


def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=60, env={"PATH": "/usr/bin"}
    )


@pytest.mark.parametrize("flag", sorted(FLAGS))
def test_every_flag_has_the_prometheus_style(flag: str) -> None:
    assert PROMETHEUS_STYLE.fullmatch(flag), flag


def test_a_table_of_two_flags_of_one_name_or_an_orphan_spelling_is_refused() -> None:
    """What stops the import of exporter.options when the table breaks the one rule."""
    both: tuple[OptionName, ...] = ("web_config_file", "ttl")
    assert named(("--web.config.file", "--ttl"), (), both) == {"web_config_file": "--web.config.file", "ttl": "--ttl"}
    with pytest.raises(ValueError, match=r"named twice: \['--web\.config-file', '--web\.config\.file'\]"):
        named(("--web.config.file", "--web.config-file"), (), ("web_config_file", "web_config_file"))
    with pytest.raises(ValueError, match=r"no option: \['--log-levels'\]"):
        named(("--log.level",), ("--log-levels",), ("log_level",))


def test_the_names_written_as_a_type_are_the_flags_names_in_their_order() -> None:
    """OptionName, the type the checker reads, cannot drift from FLAGS: the import refuses it."""
    assert tuple(field_of(flag) for flag in FLAGS) == OPTION_NAMES
    with pytest.raises(ValueError, match=r"not the flags' in their order: \['log_format', 'log_level'\]"):
        named(("--log.level",), (), ("log_format",))
    with pytest.raises(ValueError, match=r"not the flags' in their order: \[\]"):
        named(("--ttl", "--log.level"), (), ("log_level", "ttl"))


def test_a_name_read_from_data_is_an_option_s_or_refused() -> None:
    assert name_of("database_url") == "database_url"
    with pytest.raises(KeyError, match="no option is named 'database_ulr'"):
        name_of("database_ulr")


def test_a_misspelt_option_name_in_code_fails_the_type_check(tmp_path: Path) -> None:
    """The names code passes are checked before the code runs, not by a KeyError in a scrape."""
    code = tmp_path / "uses_options.py"
    code.write_text(
        "from exporter.options import flag_of, setting\n"
        'flag_of("database_url")\n'
        'flag_of("database_ulr")\n'
        'setting("log_levels", "debug")\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "mypy", "--strict", "--no-incremental", "--follow-imports=silent", str(code)],
        capture_output=True,
        text=True,
        timeout=240,
        cwd=Path(__file__).resolve().parents[2],
        env={"PATH": "/usr/bin", "MYPYPATH": str(Path(__file__).resolve().parents[2])},
    )
    wrong = sorted(int(line.split(":")[1]) for line in done.stdout.splitlines() if ": error:" in line)
    assert (done.returncode, wrong) == (1, [3, 4]), done.stdout + done.stderr
    assert 'Argument 1 to "flag_of" has incompatible type "Literal[\'database_ulr\']"' in done.stdout


@pytest.mark.parametrize("old", sorted(DEPRECATED_FLAGS))
def test_a_deprecated_spelling_is_read_as_its_option_with_the_same_environment_variable(old: str) -> None:
    parsed = build_parser().parse_args(with_command([old, "value"]))
    name = name_of(field_of(old))
    assert option_values(parsed)[name] == ["value"]
    assert deprecated_used(parsed) == (old,)
    assert env_name(old) == env_name(flag_of(name))
    assert not PROMETHEUS_STYLE.fullmatch(old)


def test_the_prometheus_spellings_are_not_deprecated() -> None:
    parsed = build_parser().parse_args(with_command(["--log.level", "debug", "--log.format", "json"]))
    assert deprecated_used(parsed) == ()
    assert option_values(parsed)["log_level"] == ["debug"]


def test_both_spellings_of_one_option_are_refused_as_given_twice() -> None:
    done = _cli("check-config", "--database.url", DB, "--log.level", "info", "--log-level", "debug")
    assert done.returncode == 2, done.stderr
    assert "--log.level (ORPYCAMCP_LOG_LEVEL): given 2 times: give it once" in done.stderr


def test_check_config_warns_once_for_each_deprecated_spelling() -> None:
    done = _cli("check-config", "--database-url", DB, "--log-level", "info", "--log-format", "json")
    assert done.returncode == 0, done.stderr
    warnings = [json.loads(line) for line in done.stderr.splitlines()]
    assert [(entry["level"], entry["msg"].split()[0]) for entry in warnings] == [
        ("warning", "--database-url"),
        ("warning", "--log-level"),
        ("warning", "--log-format"),
    ]
    for entry in warnings:
        old = entry["msg"].split()[0]
        assert f"use {replacement(old)} " in entry["msg"]
    assert "secret" not in done.stderr
    assert done.stdout.startswith("configuration valid: ")


def test_serve_logs_the_deprecation_once_however_long_it_serves(tmp_path: Path) -> None:
    with exporter_process(["--database-url", DB, "--log-format", "json"], tmp_path) as process:
        for _ in range(3):
            assert httpx.get(process.url + "/metrics", timeout=10).status_code == 200
        lines = [json.loads(line) for line in process.log().splitlines() if line.startswith("{")]
    deprecations = [entry["msg"] for entry in lines if "deprecated" in entry["msg"]]
    assert deprecations == [
        "--database-url is deprecated and will be removed: use --database.url (same value, same environment variable)",
        "--log-format is deprecated and will be removed: use --log.format (same value, same environment variable)",
    ]


def test_help_lists_every_enumerated_value_and_no_deprecated_spelling() -> None:
    done = _cli("serve", "--help")
    assert done.returncode == 0, done.stderr
    text = " ".join(done.stdout.split())
    for item in OPTIONS:
        choices = getattr(item.parse, "choices", None)
        if choices:
            assert f"{item.flag} {item.metavar} " in text
            assert f"(one of: {', '.join(choices)})" in text, item.flag
    assert "(one of: debug, info, warning, error)" in text
    assert "(one of: text, json)" in text
    for old in DEPRECATED_FLAGS:
        # Only in the note of the option that replaces it, never as an option of its own.
        assert f"[{old} " not in text
        assert f"(formerly {old}, still read, deprecated)" in text
