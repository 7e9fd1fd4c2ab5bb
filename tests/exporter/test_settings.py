from __future__ import annotations

import subprocess
import sys

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
