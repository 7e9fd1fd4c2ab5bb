"""No output ever holds a piece of a password: generated passwords (reserved
characters, fullwidth look-alikes, any Unicode) in every credential position
(each URL form, query parameter, URL file, environment variable, web config
value, key, YAML tag on a value, a key or a list item, a user and its hash
swapped), through what check-config and healthcheck print when they refuse
(text and JSON), what serve logs when it reloads the web config, what serve
logs (text and JSON) and serves on its page for a refresh, and what diagnose
prints, against sources that refuse the connection; and, against a real
PostgreSQL that refuses the login and a real Redis, the password put where the
user name goes (the userinfo, `?user=`, PGUSER, the Redis userinfo), which a
server's error may quote back ("password authentication failed for user
...").

A piece is any 4 characters of the password. What the exporter prints of its
own (a scheme, a word) is told apart from a leak by its twin: the same
configuration with every ASCII letter and digit of the password replaced by
another of its kind (hex digits by hex digits), which parses the same way; a
piece found in the output but not in the twin's output came from the password."""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
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

from devkit.servers import PostgresServer, RedisServer
from exporter import logs
from exporter.errors import ConfigError, InvalidSettings
from exporter.http.reload import ReloadingWebConfig
from exporter.http.webconfig import WebConfig
from exporter.loading import load
from exporter.service import build_exporter
from exporter.settings import Settings
from exporter.sources.postgres import dsn
from exporter.sources.postgres.dsn import redact as redact_url
from exporter.sources.redis.url import parse_redis_url, shown
from exporter.tools import healthcheck
from exporter.tools.diagnose import diagnose
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


def _web(document: str) -> Position:
    """A web config holding the password where `document` puts {p} (JSON-quoted) or {r} (raw)."""

    def given_web(password: str, directory: Path) -> Given:
        path = directory / "web.yml"
        text = document.format(p=json.dumps(password), r=password, h=HASH)
        return Given({"database_url": f"postgresql://u@{HOST}/db", "web_config_file": str(path)}, {}, {str(path): text})

    return given_web


# A bcrypt hash (cost 4) of another password: a user's hash, as the web config holds it.
HASH = "$2b$04$2Wn7rQIr.2zMhiiS03S6w.ejhQucYV2HHOqH4.4cdQOHS.k9RWh.a"


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
    "redis user alone": _url("redis_url", f"redis://{{p}}@{HOST}/0"),
    "redis user alone, encoded": _url("redis_url", f"redis://{{e}}@{HOST}/0"),
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
    "web config hash": _web("basic_auth_users:\n  prometheus: {p}\n"),
    "web config tag": _web("basic_auth_users:\n  prometheus: !{r}\n"),
    "web config tag on a user": _web("basic_auth_users:\n  !{r} prometheus: '{h}'\n"),
    "web config verbatim tag": _web("basic_auth_users:\n  prometheus: !<{r}>\n"),
    "web config tag in a list": _web("tls_server_config:\n  cipher_suites: [!{r} x]\n"),
    "web config raw value": _web("basic_auth_users:\n  prometheus: {r}\n"),
    "web config user": _web("basic_auth_users:\n  {p}: '{h}'\n"),
    "web config user and hash swapped": _web("basic_auth_users:\n  '{h}': {p}\n"),
    "web config password as a user": _web("basic_auth_users:\n  {p}: prometheus\n"),
    "web config key": _web("{p}: 1\n"),
    "web config header": _web("http_server_config:\n  headers:\n    {p}: deny\n"),
    "web config header value": _web("http_server_config:\n  headers:\n    X-Frame-Options: {p}\n"),
    "web config TLS version": _web("tls_server_config:\n  cert_file: a\n  key_file: b\n  min_version: {p}\n"),
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
    printed = io.StringIO()
    with contextlib.redirect_stderr(printed):
        for log_format in ("text", "json"):
            logs.startup_failure(_errors(exc), log_format, "orpycamcp-exporter")
    return printed.getvalue()


def _errors(exc: ConfigError) -> list[str]:
    return [str(error) for error in (exc.errors if isinstance(exc, InvalidSettings) else (exc,))]


# No serving process to read the settings of: healthcheck reads its own options alone.
NO_PROCESS = Path("/nonexistent/cmdline")


def _healthcheck_refusal(given: Given) -> list[str]:
    """What healthcheck prints when it refuses the options it reads (the web config among them)."""
    try:
        healthcheck.plan(given.values, given.env, NO_PROCESS)
    except ConfigError as exc:
        return _errors(exc)
    return []


def _reload(given: Given) -> None:
    """A reload of the web config by a serving process (SIGHUP): what it logs is captured."""
    path = given.values.get("web_config_file")
    if path is not None:
        ReloadingWebConfig(path, WebConfig()).check("SIGHUP")


def _only_local(settings: Settings) -> bool:
    """True when every host the settings name is this machine (nothing to resolve)."""
    hosts = [] if settings.database_url is None else dsn.parse(settings.database_url).hosts
    nodes = () if settings.redis_url is None else parse_redis_url(settings.redis_url).nodes
    return all(host.is_socket or host.address == "127.0.0.1" for host in hosts) and all(
        host == "127.0.0.1" for host, _port in nodes
    )


# Every signal of a source fails alike at its connection: one of each is read, so
# that the time goes to the outputs (serve and diagnose) rather than to repeats.
ONE_PER_SOURCE = ("dlq", "streams")


def _one_signal_per_source(settings: Settings) -> Settings:
    return dataclasses.replace(settings, signals=tuple(name for name in settings.signals if name in ONE_PER_SOURCE))


async def _served(settings: Settings, diagnosed: bool) -> str:
    """One serve refresh (its page's series), and what diagnose prints when `diagnosed`."""
    exporter = build_exporter(settings)
    try:
        page = await exporter.scrape()
    finally:
        await exporter.close()
    # The series, not their values: a duration's digits are not the password's.
    printed = [line.rpartition(" ")[0] for line in page.raw.decode("utf-8").splitlines()]
    said: list[str] = []
    if diagnosed:
        await diagnose(settings, said.append)
    # Not its timings either ("ok   dlq: measurable (3 series, 12 ms)").
    return "\n".join([*printed, *(line.partition(" series, ")[0] for line in said)])


def outputs(given: Given, directory: Path) -> str:
    # Against sources that refuse at once, diagnose's own lines are those it prints
    # before it connects; the server errors it prints are the serve refresh's.
    return _outputs(given, directory, _only_local, diagnosed=False)


def _outputs(given: Given, directory: Path, serves: Callable[[Settings], bool], *, diagnosed: bool) -> str:
    """Everything check-config, healthcheck and a web config reload print, what diagnose
    prints before it connects, and, when `serves`, one serve refresh (and all of
    diagnose when `diagnosed`)."""
    for path, text in given.files.items():
        Path(path).write_text(text, encoding="utf-8")
    with mock.patch.dict(os.environ, given.env), captured_logs() as logged:
        printed = _healthcheck_refusal(given)
        _reload(given)
        try:
            settings = load({**given.values, "deadline": "2"}, given.env)
        except ConfigError as exc:
            event("refused at start")
            return "\n".join([*printed, _refusal(exc), *logged.lines])
        printed.append(settings.summary("127.0.0.1:9874"))
        if settings.database_url is not None:
            printed.append(f"PostgreSQL {redact_url(settings.database_url)}")
        if settings.redis_url is not None:
            printed.append(f"Redis {shown(settings.redis_url)}: {parse_redis_url(settings.redis_url).describe()}")
        if serves(settings):
            event("served")
            printed.append(asyncio.run(_served(_one_signal_per_source(settings), diagnosed)))
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


# A password put where the user name goes, against real servers: PostgreSQL refuses
# the login and quotes the user name back, which the exporter masks; Redis is
# given the user name with no password beside it.
class Servers(NamedTuple):
    postgres: str  # host:port
    redis: str


# No TLS attempt before the plain one (asyncpg's sslmode=prefer builds a TLS context for each):
# the time goes to the outputs.
PLAIN = {"PGSSLMODE": "disable"}


def _pg_user(url: str, env: dict[str, str] | None = None) -> Callable[[Servers, str], Given]:
    return lambda servers, password: Given(
        {"database_url": url.format(pg=servers.postgres, e=_encoded(password))}, {**PLAIN, **(env or {})}, {}
    )


def _pguser(servers: Servers, password: str) -> Given:
    env = {**PLAIN, "PGUSER": password, "PGPASSWORD": "not-it"}
    return Given({"database_url": f"postgresql://{servers.postgres}/postgres"}, env, {})


def _redis_user(servers: Servers, password: str) -> Given:
    return Given({"redis_url": f"redis://{_encoded(password)}@{servers.redis}/0"}, {}, {})


SERVER_POSITIONS: dict[str, Callable[[Servers, str], Given]] = {
    "pg user alone": _pg_user("postgresql://{e}@{pg}/postgres"),
    "pg user alone, PGPASSWORD": _pg_user("postgresql://{e}@{pg}/postgres", {"PGPASSWORD": "not-it"}),
    "pg ?user alone": _pg_user("postgresql://{pg}/postgres?user={e}"),
    "PGUSER": _pguser,
    "redis user alone": _redis_user,
}


@pytest.fixture(scope="module")
def servers(pg_server: PostgresServer, redis: RedisServer) -> Servers:
    return Servers(
        pg_server.url().rpartition("@")[2].partition("/")[0], redis.url.partition("://")[2].partition("/")[0]
    )


@settings(
    max_examples=examples(fast=40, ci=600),
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(position=st.sampled_from(sorted(SERVER_POSITIONS)), password=PASSWORDS)
def test_no_server_error_quotes_a_password_put_in_the_user_place(
    servers: Servers, directory: Path, position: str, password: str
) -> None:
    assume("\x00" not in password)  # no user name, environment or startup packet holds a NUL
    place = SERVER_POSITIONS[position]
    output = _outputs(place(servers, password), directory, lambda _settings: True, diagnosed=True)
    twin_output = _outputs(place(servers, twin(password)), directory, lambda _settings: True, diagnosed=True)
    leaked = leaks(password, output, twin_output)
    assert not leaked, f"{position}: {leaked} of the password shown in:\n{output}"
