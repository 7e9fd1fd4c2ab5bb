"""No output ever holds a piece of a password: generated passwords (reserved
characters, fullwidth look-alikes, any Unicode) in every credential position
(each URL form, query parameter, URL file, environment variable, web config),
through what check-config prints (text and JSON), what diagnose prints before it
connects, and what serve logs (text and JSON) and serves on its page for a
refresh against sources that refuse the connection.

A piece is any 4 characters of the password. What the exporter prints of its
own (a scheme, a word) is told apart from a leak by its twin: the same
configuration with every ASCII letter and digit of the password replaced by
another of its kind (hex digits by hex digits), which parses the same way; a
piece found in the output but not in the twin's output came from the password."""

from __future__ import annotations

import asyncio
import contextlib
import io
import json
import logging
import os
import string
import urllib.parse
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import NamedTuple
from unittest import mock

import pytest
from hypothesis import HealthCheck, assume, event, given, settings
from hypothesis import strategies as st

from exporter import logs
from exporter.errors import ConfigError, InvalidSettings
from exporter.loading import load
from exporter.service import build_exporter
from exporter.settings import Settings
from exporter.sources import dsn
from exporter.sources.dsn import redact as redact_url
from exporter.sources.redis_url import parse_redis_url, shown
from tests.hypotheses import examples

PIECE = 4
# A port nothing listens on: every connection is refused at once, no name is resolved.
HOST = "127.0.0.1:1"
LOOK_ALIKES = "＠／？＃：﹫℀＆％"
RESERVED = "@:/?#&%=+,;[]\\ \"'\t"

# A password: mostly ASCII letters and digits (the pieces a leak is recognised by),
# with reserved characters, look-alikes and any other character in between.
PASSWORDS = st.text(
    alphabet=st.one_of(
        st.sampled_from(string.ascii_letters + string.digits),
        st.sampled_from(string.ascii_letters + string.digits),
        st.sampled_from(RESERVED + LOOK_ALIKES),
        st.characters(exclude_categories=["Cs"]),
    ),
    min_size=PIECE,
    max_size=40,
)


def _rotation() -> dict[int, str]:
    """Every ASCII letter and digit to another of its kind; hex digits stay hex digits."""
    table: dict[int, str] = {}
    for group in ("abcdef", "ghijklmnopqrstuvwxyz", "ABCDEF", "GHIJKLMNOPQRSTUVWXYZ", string.digits):
        shift = len(group) // 2
        for index, char in enumerate(group):
            table[ord(char)] = group[(index + shift) % len(group)]
    return table


TWIN = _rotation()


def twin(password: str) -> str:
    return password.translate(TWIN)


class Given(NamedTuple):
    """Option values, environment variables of the process and of the options, files to write."""

    values: dict[str, str]
    env: dict[str, str]
    files: dict[str, str]


Position = Callable[[str, Path], Given]


def _url(option: str, url: str) -> Position:
    return lambda password, _directory: Given({option: url.format(p=password, e=_encoded(password))}, {}, {})


def _encoded(password: str) -> str:
    return urllib.parse.quote(password, safe="")


def _env(variable: str, url: str) -> Position:
    def given_env(password: str, _directory: Path) -> Given:
        assume("\x00" not in password)  # no environment holds a NUL
        return Given({}, {variable: url.format(p=password, e=_encoded(password))}, {})

    return given_env


def _file(option: str, url: str) -> Position:
    def given_file(password: str, directory: Path) -> Given:
        path = directory / "url"
        return Given({option: str(path)}, {}, {str(path): url.format(p=password, e=_encoded(password)) + "\n"})

    return given_file


def _pgpassword(password: str, _directory: Path) -> Given:
    assume("\x00" not in password)
    return Given({"database_url": f"postgresql://u@{HOST}/db"}, {"PGPASSWORD": password}, {})


def _web_config(password: str, directory: Path) -> Given:
    path = directory / "web.yml"
    document = f"basic_auth_users:\n  prometheus: {json.dumps(password)}\n"
    return Given({"database_url": f"postgresql://u@{HOST}/db", "web_config_file": str(path)}, {}, {str(path): document})


PG = f"postgresql://u:{{p}}@{HOST}/db"
POSITIONS: dict[str, Position] = {
    "pg userinfo": _url("database_url", PG),
    "pg userinfo, encoded": _url("database_url", f"postgresql://u:{{e}}@{HOST}/db"),
    "pg user alone": _url("database_url", f"postgresql://{{p}}@{HOST}/db"),
    "pg several hosts": _url("database_url", "postgresql://u:{p}@127.0.0.1:1,127.0.0.1:2/db"),
    "pg ?password": _url("database_url", f"postgresql://u@{HOST}/db?password={{p}}"),
    "pg ?password, encoded": _url("database_url", f"postgresql://u@{HOST}/db?password={{e}}"),
    "pg ?password then more": _url("database_url", f"postgresql://u@{HOST}/db?password={{p}}&sslmode=disable"),
    "pg ?password then a file": _url("database_url", f"postgresql://u@{HOST}/db?password={{p}}&sslrootcert=/no/{{p}}"),
    "pg ?sslpassword": _url("database_url", f"postgresql://u@{HOST}/db?sslmode=disable&sslpassword={{p}}"),
    "pg hosts in the query": _url("database_url", "postgresql://u:{p}@/db?host=127.0.0.1&port=1"),
    "pg DATABASE_URL": _env("DATABASE_URL", PG),
    "pg file": _file("database_url_file", PG),
    "pg file, encoded": _file("database_url_file", f"postgresql://u:{{e}}@{HOST}/db"),
    "PGPASSWORD": _pgpassword,
    "redis userinfo": _url("redis_url", f"redis://:{{p}}@{HOST}/0"),
    "redis user and password": _url("redis_url", f"redis://u:{{p}}@{HOST}/0"),
    "redis userinfo, encoded": _url("redis_url", f"redis://:{{e}}@{HOST}/0"),
    "redis ?password": _url("redis_url", f"redis://{HOST}/0?password={{p}}"),
    "redis ?db after the password": _url("redis_url", f"redis+sentinel://{HOST}/m?sentinel_password={{p}}&db=9{{p}}"),
    "sentinel userinfo": _url("redis_url", f"redis+sentinel://:{{p}}@{HOST}/mymaster"),
    "sentinel ?sentinel_password": _url("redis_url", f"redis+sentinel://{HOST}/mymaster?sentinel_password={{p}}"),
    "sentinel ?sentinel_password, encoded": _url(
        "redis_url", f"redis+sentinel://{HOST}/mymaster?sentinel_password={{e}}"
    ),
    "cluster userinfo": _url("redis_url", "redis+cluster://:{p}@127.0.0.1:1,127.0.0.1:2"),
    "unix socket userinfo": _url("redis_url", "unix://:{p}@/tmp/no-such.sock"),
    "REDIS_URL": _env("REDIS_URL", f"redis://:{{p}}@{HOST}/0"),
    "redis file": _file("redis_url_file", f"redis://:{{p}}@{HOST}/0"),
    "web config hash": _web_config,
}


class Captured(logging.Handler):
    """Every log record, formatted as text and as JSON."""

    def __init__(self) -> None:
        super().__init__(logging.DEBUG)
        self.lines: list[str] = []
        self.formatters = (logs.TextFormatter(), logs.JsonFormatter())

    def emit(self, record: logging.LogRecord) -> None:
        # One instant for every record: the time of a line is not the password's.
        record.created, record.msecs = 0.0, 0.0
        record.__dict__.pop("duration_ms", None)
        self.lines.extend(formatter.format(record) for formatter in self.formatters)


@contextlib.contextmanager
def captured_logs() -> Iterator[Captured]:
    handler = Captured()
    root = logging.getLogger()
    level = root.level
    root.addHandler(handler)
    root.setLevel(logging.DEBUG)
    try:
        yield handler
    finally:
        root.removeHandler(handler)
        root.setLevel(level)


def _refusal(exc: ConfigError) -> str:
    """What check-config and serve print when they refuse: both log formats."""
    errors = exc.errors if isinstance(exc, InvalidSettings) else (exc,)
    printed = io.StringIO()
    with contextlib.redirect_stderr(printed):
        for log_format in ("text", "json"):
            logs.startup_failure([str(error) for error in errors], log_format, "orpycamcp-exporter")
    return printed.getvalue()


def _only_local(settings: Settings) -> bool:
    """True when every host the settings name is this machine (nothing to resolve)."""
    hosts = [] if settings.database_url is None else dsn.parse(settings.database_url).hosts
    nodes = () if settings.redis_url is None else parse_redis_url(settings.redis_url).nodes
    return all(host.is_socket or host.address == "127.0.0.1" for host in hosts) and all(
        host == "127.0.0.1" for host, _port in nodes
    )


async def _serve_once(settings: Settings) -> str:
    exporter = build_exporter(settings)
    try:
        page = await exporter.scrape()
    finally:
        await exporter.close()
    # The series, not their values: a duration's digits are not the password's.
    return "\n".join(line.rpartition(" ")[0] for line in page.raw.decode("utf-8").splitlines())


def outputs(given: Given, directory: Path) -> str:
    """Everything check-config, diagnose (before it connects) and one serve refresh print."""
    for path, text in given.files.items():
        Path(path).write_text(text, encoding="utf-8")
    with mock.patch.dict(os.environ, given.env), captured_logs() as logged:
        try:
            settings = load({**given.values, "deadline": "2"}, given.env)
        except ConfigError as exc:
            event("refused at start")
            return _refusal(exc)
        printed = [settings.summary("127.0.0.1:9874")]
        if settings.database_url is not None:
            printed.append(f"PostgreSQL {redact_url(settings.database_url)}")
        if settings.redis_url is not None:
            printed.append(f"Redis {shown(settings.redis_url)}: {parse_redis_url(settings.redis_url).describe()}")
        if _only_local(settings):
            event("served")
            printed.append(asyncio.run(_serve_once(settings)))
        return "\n".join([*printed, *logged.lines])


def leaks(password: str, output: str, twin_output: str) -> list[str]:
    pieces = {password[start : start + PIECE] for start in range(len(password) - PIECE + 1)}
    return sorted(piece for piece in pieces if piece in output and piece not in twin_output)


@pytest.fixture(scope="module")
def directory(tmp_path_factory: pytest.TempPathFactory) -> Path:
    return tmp_path_factory.mktemp("secrets")


@settings(
    max_examples=examples(fast=80, ci=1500),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(position=st.sampled_from(sorted(POSITIONS)), password=PASSWORDS)
def test_no_output_holds_a_piece_of_the_password(directory: Path, position: str, password: str) -> None:
    place = POSITIONS[position]
    output = outputs(place(password, directory), directory)
    twin_output = outputs(place(twin(password), directory), directory)
    leaked = leaks(password, output, twin_output)
    assert not leaked, f"{position}: {leaked} of the password shown in:\n{output}"
