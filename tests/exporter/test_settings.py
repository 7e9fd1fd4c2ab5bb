from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from exporter.errors import ConfigError
from exporter.settings import load, redact_url
from exporter.sources.postgres import PoolMode

DB = "postgresql://u:secret@db:5432/platform"


def test_defaults() -> None:
    settings = load({"database_url": DB}, {})
    assert (settings.listen_host, settings.listen_port) == ("0.0.0.0", 9874)
    assert settings.signals == ("dlq", "preservation", "audit_chain")
    assert (settings.ttl, settings.deadline) == (30.0, 10.0)
    assert settings.max_connections == 2
    assert settings.idle_close == 90.0
    assert settings.pool_mode is PoolMode.SESSION


def test_pool_mode_from_flag_or_environment() -> None:
    env = {"ORPYCAMCP_DATABASE_POOL_MODE": "Transaction"}
    assert load({"database_url": DB}, env).pool_mode is PoolMode.TRANSACTION
    assert load({"database_url": DB, "pool_mode": "session"}, env).pool_mode is PoolMode.SESSION


def test_flags_win_over_environment_over_defaults() -> None:
    env = {"METRICS_TTL_SECONDS": "60", "METRICS_DEADLINE_SECONDS": "20", "DATABASE_URL": DB}
    assert load({}, env).ttl == 60.0
    assert load({"ttl": "45"}, env).ttl == 45.0


def test_redis_enables_streams_and_signals_subset() -> None:
    assert load({"database_url": DB, "redis_url": "redis://r:6379/0"}, {}).signals == (
        "dlq",
        "preservation",
        "audit_chain",
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
        ({"database_url": "mysql://x"}, "--database-url"),
        ({"database_url": "postgresql://h:notaport/db"}, "--database-url"),
        ({"redis_url": "http://x"}, "--redis-url"),
        ({"signals": "dlq,bogus"}, "--signals"),
        ({"signals": ","}, "--signals"),
        ({"signals": "streams"}, "--redis-url"),
        ({"listen_address": "9874"}, "--web.listen-address"),
        ({"listen_address": ":99999"}, "--web.listen-address"),
        ({"max_connections": "0"}, "--database.max-connections"),
        ({"batch_size": "x"}, "--database.batch-size"),
        ({"log_format": "xml"}, "--log-format"),
        ({"pool_mode": "statement"}, "--database.pool-mode"),
        ({"log_level": "loud"}, "--log-level"),
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
    assert redact_url("postgresql://u:secret@h:5/db") == "postgresql://u:***@h:5/db"
    assert redact_url("redis://:pw@h:6379/0") == "redis://:***@h:6379/0"
    assert redact_url("postgresql://h/db") == "postgresql://h/db"


@pytest.mark.parametrize(
    ("args", "needle"),
    [
        (["--ttl", "0", "--database-url", DB], "--ttl"),
        (["--deadline", "40", "--database-url", DB], "--deadline"),
        (["--database-url", "postgresql://u:secret@h:bad/db"], "--database-url"),
        (["--signals", "nope", "--database-url", DB], "--signals"),
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
        ("postgresql://exp:p@ss:w/rd%#@host:5432/db", "postgresql://***@host:5432/db"),
        ("postgresql://u:a?b#c@h/db", "postgresql://***@h/db"),
        ("postgresql://:pw@[::1]:5432/db", "postgresql://:***@[::1]:5432/db"),
        ("postgresql://u:p%40ss@h/db", "postgresql://u:***@h/db"),
        ("postgresql://u@h/db?sslmode=require&password=s3cret", "postgresql://u@h/db?sslmode=require&password=***"),
        ("postgresql://u:pw@[::1/db", "postgresql://***@[::1/db"),
        ("not a url @ all", "***"),
    ],
)
def test_redact_url_masks_malformed_urls_up_to_the_last_at(url: str, shown: str) -> None:
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
        ("postgresql://u:secret@h/db?target_session_attrs=replica", "target_session_attrs 'replica' is not one of"),
        ("postgresql://u:secret@h/db?sslmode=strict", "`sslmode` parameter must be one of"),
        ("postgresql://u:secret@h/db?sslmode=verify-full&sslrootcert=/no/such.crt", "sslrootcert /no/such.crt"),
        ("postgresql://u:secret@h/db?sslcert=/no/such.crt", "sslcert /no/such.crt: cannot be read"),
        ("postgresql://u:secret@h/db?connect_timeout=soon", "connect_timeout 'soon' is not a whole number"),
        ("postgresql://u:secret@h/db?keepalives=1", "parameter keepalives is not supported"),
        ("postgresql://u:secret@h/db?gsslib=kerberos", "gsslib parameter must be either"),
        ("postgresql://u:secret@h/db?password", "the query string is not a list of key=value pairs"),
        ("postgresql://u:secret@[::1/db", "not a valid URL"),
    ],
)
def test_database_urls_asyncpg_refuses_are_refused_with_the_reason(url: str, reason: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"database_url": url}, {})
    assert raised.value.setting == "--database-url (DATABASE_URL)"
    assert reason in str(raised.value)
    assert "secret" not in str(raised.value)
    assert "cret" not in str(raised.value).replace("--", "")


def test_redact_hides_the_password_however_the_url_is_written() -> None:
    assert redact_url("postgresql://u:secret@h1:1,h2:2/db") == "postgresql://u:***@h1:1,h2:2/db"
    # An ambiguous authority is masked up to its last '@', user included.
    assert redact_url("postgresql://u:se@cret@h/db") == "postgresql://***@h/db"
    assert redact_url("postgresql://u:se/cret@h/db") == "postgresql://***@h/db"
    # Whatever follows a password in the query may be the rest of it: not shown.
    assert redact_url("postgresql://u@h/db?password=secret&sslmode=require") == "postgresql://u@h/db?password=***&***"
    assert redact_url("postgresql://u@h:5/db?application_name=a@b") == "postgresql://u@h:5/db?application_name=a@b"


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
        ({"database_url": DB, "database_url_file": "F"}, {}, "--database-url (DATABASE_URL)", "not both"),
        ({"database_url_file": "F"}, {"DATABASE_URL": DB}, "--database-url (DATABASE_URL)", "not both"),
        ({"redis_url_file": "F"}, {"REDIS_URL": "redis://r"}, "--redis-url (REDIS_URL)", "not both"),
        ({"database_url_file": "MISSING"}, {}, "--database-url-file", "cannot read MISSING: No such file"),
        ({"database_url_file": "EMPTY"}, {}, "--database-url-file", "EMPTY is empty"),
        ({"redis_url_file": "MISSING"}, {"DATABASE_URL": DB}, "--redis-url-file", "cannot read MISSING"),
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
        [sys.executable, "-m", "exporter", "check-config", "--database-url-file", str(tmp_path / "nope")],
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
