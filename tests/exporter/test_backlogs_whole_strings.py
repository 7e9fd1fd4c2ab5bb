"""Names, columns and help texts of a backlogs file are checked whole: a value
ending in a newline, or holding any control character, is refused at start."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exporter.backlogs import parse_declarations
from exporter.errors import BacklogConfigError
from tests.exporter.test_yamlfile import LAUGHS

SETTING = "--backlogs.config-file"
GOOD = {
    "name": "kyc",
    "help": "KYC dead letters.",
    "table": "dead_letter_queue",
    "oldest": "created_at",
    "group_by": "task_name",
}


def document(**changed: str) -> str:
    fields = {**GOOD, **changed}
    return (
        "backlogs:\n"
        f"  {fields['name']}:\n"
        f"    help: {fields['help']}\n"
        "    scope: tenant\n"
        f"    table: {fields['table']}\n"
        "    pending: {status: pending}\n"
        f"    group_by: {fields['group_by']}\n"
        "    groups: [a, b]\n"
        f"    oldest: {fields['oldest']}\n"
    )


def test_the_document_without_changes_is_accepted() -> None:
    (backlog,) = parse_declarations(document(), SETTING).backlogs
    assert (backlog.name, backlog.oldest, backlog.help) == ("kyc", "created_at", "KYC dead letters.")


@pytest.mark.parametrize(
    ("field", "value", "key"),
    [
        ("name", '"kyc\\n"', None),
        ("oldest", '"created_at\\n"', "oldest"),
        ("table", '"dead_letter_queue\\n"', "table"),
        ("group_by", '"task_name\\n"', "group_by"),
        ("help", '"KYC dead letters.\\r| x | y |"', "help"),
        ("help", '"KYC \\x1b[2J dead letters."', "help"),
    ],
)
def test_a_trailing_newline_or_a_control_character_is_refused(field: str, value: str, key: str | None) -> None:
    with pytest.raises(BacklogConfigError) as raised:
        parse_declarations(document(**{field: value}), SETTING)
    assert raised.value.key == key
    message = str(raised.value)
    assert "\n" not in message
    assert "\r" not in message
    assert "\x1b" not in message


def test_nested_aliases_are_refused_at_start_in_one_short_line(tmp_path: Path) -> None:
    path = tmp_path / "laughs.yml"
    path.write_text(LAUGHS)
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "exporter",
            "check-config",
            "--database.url",
            "postgresql://h/db",
            "--backlogs.config-file",
            str(path),
        ],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2
    assert "aliases" in done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert len(done.stderr) < 500
