from __future__ import annotations

import json
import socket
import subprocess
import sys
import urllib.parse
from pathlib import Path

import pytest

from exporter.errors import ConfigError, InvalidSettings
from exporter.loading import load
from exporter.sources.postgres.dsn import redact as redact_url
from exporter.sources.postgres.pool_mode import PoolMode

DB = "postgresql://u:secret@db:5432/platform"


def test_defaults() -> None:
    settings = load({"database_url": DB}, {})
    assert (settings.web_listen_address.host, settings.web_listen_address.port) == ("", 9874)
    assert settings.signals == ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping")
    assert (settings.ttl, settings.deadline) == (30.0, 10.0)
    assert settings.database_max_connections == 2
    assert settings.database_idle_close == 90.0
    assert settings.database_pool_mode is PoolMode.SESSION


def test_pool_mode_from_flag_or_environment() -> None:
    env = {"ORPYCAMCP_DATABASE_POOL_MODE": "Transaction"}
    assert load({"database_url": DB}, env).database_pool_mode is PoolMode.TRANSACTION
    assert load({"database_url": DB, "database_pool_mode": "session"}, env).database_pool_mode is PoolMode.SESSION


def test_flags_win_over_environment_over_defaults() -> None:
    env = {"METRICS_TTL_SECONDS": "60", "METRICS_DEADLINE_SECONDS": "20", "DATABASE_URL": DB}
    assert load({}, env).ttl == 60.0
    assert load({"ttl": "45"}, env).ttl == 45.0


def test_redis_enables_streams_and_signals_subset() -> None:
    assert load({"database_url": DB, "redis_url": "redis://r:6379/0"}, {}).signals == (
        "dlq",
        "preservation",
        "audit_chain",
        "migration_lock",
        "housekeeping",
        "streams",
    )
    assert load({"database_url": DB}, {"ORPYCAMCP_SIGNALS": "audit_chain, dlq"}).signals == ("dlq", "audit_chain")
    assert load({"redis_url": "redis://r"}, {}).signals == ("streams",)


@pytest.mark.parametrize(
    ("values", "setting"),
    [
        ({"ttl": "0"}, "--ttl"),
        ({"ttl": "-3"}, "--ttl"),
        ({"ttl": "abc"}, "--ttl"),
        ({"ttl": "nan"}, "--ttl"),
        ({"deadline": "0"}, "--deadline"),
        ({"deadline": "30"}, "--deadline"),
        ({"deadline": "31"}, "--deadline"),
        ({"database_url": "mysql://x"}, "--database.url"),
        ({"database_url": "postgresql://h:notaport/db"}, "--database.url"),
        ({"redis_url": "http://x"}, "--redis.url"),
        ({"signals": "dlq,bogus"}, "--signals"),
        ({"signals": ","}, "--signals"),
        ({"signals": "streams"}, "--redis.url"),
        ({"web_listen_address": "9874"}, "--web.listen-address"),
        ({"web_listen_address": ":99999"}, "--web.listen-address"),
        ({"database_max_connections": "0"}, "--database.max-connections"),
        ({"database_batch_size": "x"}, "--database.batch-size"),
        ({"log_format": "xml"}, "--log.format"),
        ({"database_pool_mode": "statement"}, "--database.pool-mode"),
        ({"log_level": "loud"}, "--log.level"),
    ],
)
def test_invalid_settings_name_the_setting(values: dict[str, str], setting: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"database_url": DB, **values}, {})
    assert raised.value.setting.startswith(setting)
    assert "secret" not in str(raised.value)


def test_nothing_configured_is_an_error() -> None:
    with pytest.raises(ConfigError, match="DATABASE_URL"):
        load({}, {})


def test_redact_url() -> None:
    assert redact_url("postgresql://u:secret@h:5/db") == "postgresql://***@h:5/db"
    assert redact_url("redis://:pw@h:6379/0") == "redis://***@h:6379/0"
    assert redact_url("postgresql://h/db") == "postgresql://h/db"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ttl", "0", "--database.url", DB], "--ttl"),
        (["--deadline", "40", "--database.url", DB], "--deadline"),
        (["--database.url", "postgresql://u:secret@h:bad/db"], "--database.url"),
        (["--signals", "nope", "--database.url", DB], "--signals"),
        (["--no-such-flag"], "--no-such-flag"),
    ],
)
def test_cli_exits_2_with_a_one_line_message(args: list[str], needle: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert needle in done.stderr
    assert "secret" not in done.stderr
    assert done.stdout == ""


def test_cli_version() -> None:
    done = subprocess.run([sys.executable, "-m", "exporter", "--version"], capture_output=True, text=True, timeout=30)
    assert done.returncode == 0
    assert done.stdout.strip() == "orpycamcp-exporter 0.1.0"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("postgresql://exp:p@ss:w/rd%#@host:5432/db", "postgresql://(rest not shown: it does not parse one way)"),
        ("postgresql://u:a?b#c@h/db", "postgresql://(rest not shown: it does not parse one way)"),
        ("postgresql://:pw@[::1]:5432/db", "postgresql://***@[::1]:5432/db"),
        ("postgresql://u:p%40ss@h/db", "postgresql://***@h/db"),
        ("postgresql://u@h/db?sslmode=require&password=s3cret", "postgresql://***@h/db"),
        ("postgresql://u:pw@[::1/db", "postgresql://(rest not shown: it does not parse one way)"),
        ("not a url @ all", "(a URL of no known scheme, not shown)"),
    ],
)
def test_redact_url_shows_only_the_parts_that_parsed(url: str, shown: str) -> None:
    assert redact_url(url) == shown


@pytest.mark.parametrize("url", ["postgresql://exp:p@ss@h/db", "postgresql://u:a/b@h/db", "postgresql://u:x#y@h/db"])
def test_an_ambiguous_password_is_refused_without_being_quoted(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"database_url": url}, {})
    assert "percent-encode" in str(raised.value)
    for fragment in ("ss@h", "a/b", "x#y"):
        assert fragment not in str(raised.value)


# --- PostgreSQL URLs: what asyncpg accepts is accepted, what it refuses is refused with the reason --------------


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u:secret@h1:5433,h2:5432/db?target_session_attrs=prefer-standby",
        "postgresql://u:secret@/db?host=h1,h2&port=5433,5432&target_session_attrs=read-only",
        "postgres://u:secret@h1,h2/db?target_session_attrs=any",
        "postgresql://u:secret@[::1]:5432,[fe80::1]/db?target_session_attrs=primary",
        "postgresql://u:secret@h/db?target_session_attrs=standby&connect_timeout=5",
        "postgresql://u:secret@h/db?target_session_attrs=read-write&application_name=monitoring",
        "postgresql://u@%2Fvar%2Frun%2Fpostgresql/db",
        "postgresql://u@/db?host=/var/run/postgresql&port=5433",
        "postgresql://u:p%40ss%3Aw%2Fo%3Fr%23d@h/db",
        "postgresql://u:secret@h/db?sslmode=disable",
        "postgresql://u:secret@h/db?sslmode=require",
        "postgresql:///db",
        "postgresql://h/db?options=-c%20search_path%3Dpublic",
    ],
)
def test_database_urls_asyncpg_accepts_are_accepted(url: str) -> None:
    assert load({"database_url": url}, {}).database_url == url


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("postgresql://u:secret@h:bad/db", "host 1: the port is not a number from 1 to 65535"),
        ("postgresql://u:secret@h1:5432,h2:99999/db", "host 2: the port is not a number from 1 to 65535"),
        ("postgresql://u:secret@h1,,h2/db", "host 2 is empty"),
        ("postgresql://u:secret@/db?host=h1,h2&port=1,2,3", "could not match 3 port numbers to 2 hosts"),
        ("postgresql://u:secret@/db?host=h&port=x", "port parameter, entry 1: the port is not a number"),
        ("postgresql://u:se@cret@h/db", "percent-encode '@' in the user or password"),
        ("postgresql://u:se/cret@h/db", "host 1: the port is not a number"),
        ("postgresql://u:secret@h/db?target_session_attrs=replica", "target_session_attrs is not one of"),
        ("postgresql://u:secret@h/db?sslmode=strict", "`sslmode` parameter must be one of"),
        (
            "postgresql://u:secret@h/db?sslmode=verify-full&sslrootcert=/no/such.crt",
            "the file sslrootcert names cannot be read",
        ),
        ("postgresql://u:secret@h/db?sslcert=/no/such.crt", "the file sslcert names cannot be read"),
        ("postgresql://u:secret@h/db?connect_timeout=soon", "connect_timeout is not a whole number"),
        ("postgresql://u:secret@h/db?keepalives=1", "parameter keepalives is not supported"),
        ("postgresql://u:secret@h/db?gsslib=kerberos", "gsslib parameter must be either"),
        ("postgresql://u:secret@h/db?password", "the query string is not a list of key=value pairs"),
        ("postgresql://u:secret@[::1/db", "not a valid URL"),
    ],
)
def test_database_urls_asyncpg_refuses_are_refused_with_the_reason(url: str, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"database_url": url}, {})
    assert raised.value.setting == "--database.url (ORPYCAMCP_DATABASE_URL)"
    assert reason in str(raised.value)
    assert "secret" not in str(raised.value)
    assert "cret" not in str(raised.value).replace("--", "")


def test_redact_hides_the_password_however_the_url_is_written() -> None:
    assert redact_url("postgresql://u:secret@h1:1,h2:2/db") == "postgresql://***@h1:1,h2:2/db"
    # An ambiguous authority: nothing after the scheme.
    assert redact_url("postgresql://u:se@cret@h/db") == "postgresql://(rest not shown: it does not parse one way)"
    assert redact_url("postgresql://u:se/cret@h/db") == "postgresql://(rest not shown: it does not parse one way)"
    # The query is never shown.
    assert redact_url("postgresql://u@h/db?password=secret&sslmode=require") == "postgresql://***@h/db"
    assert redact_url("postgresql://u@h:5/db?application_name=a@b") == "postgresql://***@h:5/db"


# --- URLs from files ------------------------------------------------------------------------------------------


def test_urls_from_files_trailing_newline_ignored(tmp_path: Path) -> None:
    (tmp_path / "db").write_text(DB + "\n")
    (tmp_path / "redis").write_text("redis://:pw@r:6379/0\r\n")
    settings = load({"database_url_file": str(tmp_path / "db")}, {"REDIS_URL_FILE": str(tmp_path / "redis")})
    assert settings.database_url == DB
    assert settings.redis_url == "redis://:pw@r:6379/0"


@pytest.mark.parametrize(
    ("values", "env", "setting", "reason"),
    [
        ({"database_url": DB, "database_url_file": "F"}, {}, "--database.url (ORPYCAMCP_DATABASE_URL)", "not both"),
        ({"database_url_file": "F"}, {"DATABASE_URL": DB}, "--database.url (ORPYCAMCP_DATABASE_URL)", "not both"),
        ({"redis_url_file": "F"}, {"REDIS_URL": "redis://r"}, "--redis.url (ORPYCAMCP_REDIS_URL)", "not both"),
        ({"database_url_file": "MISSING"}, {}, "--database.url-file", "cannot read MISSING: No such file"),
        ({"database_url_file": "EMPTY"}, {}, "--database.url-file", "EMPTY is empty"),
        ({"redis_url_file": "MISSING"}, {"DATABASE_URL": DB}, "--redis.url-file", "cannot read MISSING"),
    ],
)
def test_url_files_refused_with_the_reason(
    tmp_path: Path, values: dict[str, str], env: dict[str, str], setting: str, reason: str
) -> None:
    (tmp_path / "F").write_text(DB)
    (tmp_path / "EMPTY").write_text("\n")

    def placed(text: str) -> str:
        return text.replace("MISSING", str(tmp_path / "MISSING")).replace("EMPTY", str(tmp_path / "EMPTY"))

    values = {key: str(tmp_path / value) if key.endswith("_file") else value for key, value in values.items()}
    with pytest.raises(ConfigError) as raised:
        load(values, env)
    assert raised.value.setting.startswith(setting)
    assert placed(reason) in str(raised.value)


def test_an_unreadable_url_file_exits_2_naming_the_file_not_its_content(tmp_path: Path) -> None:
    secret = tmp_path / "database-url"
    secret.write_text("postgresql://u:content-secret@h:bad/db\n")
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config", "--database.url-file", str(tmp_path / "nope")],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert done.returncode == 2
    assert str(tmp_path / "nope") in done.stderr
    done = subprocess.run(
        [sys.executable, "-m", "exporter", "check-config"],
        capture_output=True,
        text=True,
        timeout=30,
        env={"PATH": "/usr/bin:/bin", "DATABASE_URL_FILE": str(secret)},
    )
    assert done.returncode == 2
    assert "host 1: the port is not a number" in done.stderr
    assert "content-secret" not in done.stderr


# --- every refusal at once, the same for check-config and serve --------------------------------------------


def exporter(*args: str, env: dict[str, str] | None = None) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, "-m", "exporter", *args],
        capture_output=True,
        text=True,
        timeout=60,
        env={"PATH": "/usr/bin:/bin"} | (env or {}),
    )


def test_every_invalid_setting_is_reported_at_once() -> None:
    values = {
        "ttl": "0",
        "deadline": "soon",
        "database_max_connections": "99",
        "database_batch_size": "x",
        "database_pool_mode": "statement",
        "log_level": "loud",
        "signals": "dlq,bogus",
        "web_listen_address": "9874",
    }
    with pytest.raises(InvalidSettings) as raised:
        load({"database_url": "postgresql://u:secret@h:bad/db", **values}, {"ORPYCAMCP_WEB_MAX_CONNECTIONS": "3"})
    settings = [error.setting.split(" ", 1)[0] for error in raised.value.errors]
    assert sorted(settings) == sorted(
        [
            "--ttl",
            "--deadline",
            "--database.max-connections",
            "--database.batch-size",
            "--database.pool-mode",
            "--log.level",
            "--signals",
            "--web.listen-address",
            "--database.url",
            "--web.max-connections",
        ]
    )
    lines = str(raised.value).splitlines()
    assert len(lines) == len(settings)
    assert all(line.startswith("invalid setting --") for line in lines)
    assert "secret" not in str(raised.value)


def test_a_url_refused_is_not_also_reported_missing() -> None:
    with pytest.raises(InvalidSettings) as raised:
        load({"database_url": "mysql://x"}, {})
    assert [error.setting for error in raised.value.errors] == ["--database.url (ORPYCAMCP_DATABASE_URL)"]


@pytest.mark.parametrize(
    ("args", "env", "needle"),
    [
        (["--web.listen-address", "127.0.0.1:9874", "--web.listen-address", "127.0.0.1:9875"], {}, "give it once"),
        (["--web.listen-address", "127.0.0.1:9874,127.0.0.1:9875"], {}, "give one HOST:PORT"),
        # With the URL the test adds: given twice, and neither value (nor its password) repeated.
        (["--database.url", DB], {}, "--database.url (ORPYCAMCP_DATABASE_URL): given 2 times: give it once"),
        (["--web.listen-address", "exporter.invalid:9874"], {}, "cannot resolve the host 'exporter.invalid'"),
        ([], {"ORPYCAMCP_DATABASE_URL_FILE": "SPACED"}, "--database.url-file (ORPYCAMCP_DATABASE_URL_FILE): SPACED"),
        ([], {"DATABASE_URL_FILE": "BADPORT"}, "--database.url-file (ORPYCAMCP_DATABASE_URL_FILE): BADPORT"),
        (["--ttl", "5", "--deadline", "9", "--log.level", "loud"], {}, "--log.level"),
    ],
)
def test_check_config_refuses_exactly_what_serve_refuses(
    tmp_path: Path, args: list[str], env: dict[str, str], needle: str
) -> None:
    (tmp_path / "SPACED").write_text("postgresql://u:secret@h/plat form\n")
    (tmp_path / "BADPORT").write_text("postgresql://u:secret@h:bad/db\n")
    env = {name: str(tmp_path / value) for name, value in env.items()}
    if not env:
        args = [*args, "--database.url", DB]
    checked = exporter("check-config", *args, env=env)
    served = exporter("serve", *args, env=env)
    assert (checked.returncode, served.returncode) == (2, 2)
    assert checked.stderr == served.stderr
    assert needle.replace("SPACED", str(tmp_path / "SPACED")).replace("BADPORT", str(tmp_path / "BADPORT")) in (
        checked.stderr
    )
    assert "secret" not in checked.stderr
    assert checked.stdout == served.stdout == ""


def test_check_config_lists_every_refusal_one_line_each() -> None:
    done = exporter("check-config", "--ttl", "0", "--deadline", "x", "--signals", "nope", "--database.url", DB)
    assert done.returncode == 2
    lines = done.stderr.splitlines()
    assert len(lines) == 3
    assert sorted(line.split(" ")[3] for line in lines) == ["--deadline", "--signals", "--ttl"]


def test_start_up_errors_follow_the_log_format() -> None:
    done = exporter("--log.format", "json", "--ttl", "0", "--deadline", "x", "--database.url", DB)
    assert done.returncode == 2
    entries = [json.loads(line) for line in done.stderr.splitlines()]
    assert len(entries) == 2
    assert all(entry["level"] == "error" and entry["msg"].startswith("invalid setting --") for entry in entries)
    assert {entry["msg"].split(" ")[2] for entry in entries} == {"--ttl", "--deadline"}
    # The log format itself invalid: plain lines.
    done = exporter("--log.format", "yaml", "--ttl", "0", "--database.url", DB)
    assert done.returncode == 2
    assert all(line.startswith("orpycamcp-exporter: invalid setting --") for line in done.stderr.splitlines())


def test_a_url_file_is_read_without_the_whitespace_around_it(tmp_path: Path) -> None:
    (tmp_path / "db").write_text("  " + DB + "  \n\n")
    settings = load({"database_url_file": str(tmp_path / "db")}, {})
    assert settings.database_url == DB
    assert urllib.parse.urlsplit(settings.database_url).path == "/platform"


def test_an_address_in_use_is_a_json_line_under_json_logs() -> None:
    with socket.socket() as taken:
        taken.bind(("127.0.0.1", 0))
        taken.listen(1)
        address = f"127.0.0.1:{taken.getsockname()[1]}"
        done = exporter("--log.format", "json", "--web.listen-address", address, "--database.url", DB)
    assert done.returncode == 2
    (entry,) = [json.loads(line) for line in done.stderr.splitlines()]
    assert entry["level"] == "error"
    assert entry["msg"].startswith(f"cannot listen on {address}: the address is already in use")
