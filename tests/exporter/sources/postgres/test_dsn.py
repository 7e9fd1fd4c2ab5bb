"""The files a PostgreSQL URL names: checked at start without ever quoting their
path (it may be the tail of a password left unencoded) or hanging on them."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from exporter.sources.postgres import dsn


@pytest.mark.parametrize(
    ("path", "problem"),
    [
        ("/dev/zero", "the file sslrootcert names is not a regular file"),
        ("{tmp}", "the file sslrootcert names is not a regular file"),
        ("{tmp}/fifo", "the file sslrootcert names is not a regular file"),
        ("/x%00y", "the file sslrootcert names holds a NUL character"),
        ("/no/such/leakfile", "the file sslrootcert names cannot be read: No such file or directory"),
    ],
)
def test_a_file_that_is_not_a_readable_regular_file_is_refused_unquoted(
    tmp_path: Path, path: str, problem: str
) -> None:
    os.mkfifo(tmp_path / "fifo")
    url = f"postgresql://u@h/db?password=abc&sslmode=verify-full&sslrootcert={path.format(tmp=tmp_path)}"
    with pytest.raises(dsn.InvalidDatabaseUrl) as refused:
        dsn.parse(url, {})
    assert str(refused.value) == problem


def test_a_file_from_the_environment_is_named_by_its_variable(tmp_path: Path) -> None:
    with pytest.raises(dsn.InvalidDatabaseUrl, match="the file PGSSLROOTCERT names cannot be read"):
        dsn.parse("postgresql://u@h/db?sslmode=verify-full", {"PGSSLROOTCERT": str(tmp_path / "none.crt")})


@pytest.mark.parametrize(
    ("url", "env", "problem"),
    [
        ("postgresql://u@a..b/db", {}, "host 1: not a host name"),
        ("postgresql://u@h1," + "a" * 64 + ".x:5/db", {}, "host 2: not a host name"),
        ("postgresql://u@/db?host=h1,.h2", {}, "host 2: not a host name"),
        ("postgresql://u@/db", {"PGHOST": "a..b"}, "host 1: not a host name"),
    ],
)
def test_a_host_the_resolver_cannot_encode_is_refused_by_its_position(
    url: str, env: dict[str, str], problem: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """asyncpg reads PGHOST from the process environment itself: set there too."""
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    with pytest.raises(dsn.InvalidDatabaseUrl) as refused:
        dsn.parse(url, env)
    assert str(refused.value).startswith(problem)
    assert "a..b" not in str(refused.value)
