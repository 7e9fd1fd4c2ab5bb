"""A URL read from a file: never a hang, never a read without end."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.options import Refused
from exporter.secret_file import MAX_BYTES, read_secret


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/dev/zero", "/dev/zero is not a regular file"),
        ("{tmp}", "{tmp} is not a regular file"),
        ("{tmp}/fifo", "{tmp}/fifo is not a regular file"),
        ("{tmp}/big", "{tmp}/big is larger than 65536 bytes: one URL is expected"),
        ("/x\x00y", "the path holds a NUL character"),
    ],
)
def test_a_file_that_cannot_hold_one_url_is_refused(tmp_path: Path, path: str, problem: str) -> None:
    os.mkfifo(tmp_path / "fifo")
    (tmp_path / "big").write_text("x" * (MAX_BYTES + 1))
    with pytest.raises(Refused) as refused:
        read_secret(path.format(tmp=tmp_path))
    assert refused.value.problem == problem.format(tmp=tmp_path)


def test_one_line_is_read_without_the_whitespace_around_it(tmp_path: Path) -> None:
    path = tmp_path / "url"
    path.write_text("  postgresql://u@h/db\n")
    assert read_secret(str(path)) == "postgresql://u@h/db"
