"""`diagnose` on a declared backlog's `oldest` column, on a server whose TimeZone
is America/Bogota: a timestamp read as UTC is warned about, the declared zone
silences it, a date says it is read as midnight, another type is named."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from tests.platform import Platform
from tests.zones import bogota_jobs, jobs_declaration

pytestmark = pytest.mark.anyio

WARNING = "is a timestamp without time zone, read as UTC, on a server whose TimeZone is America/Bogota"


def declared(tmp_path: Path, column: str, zone: str | None) -> str:
    path = tmp_path / "backlogs.yml"
    path.write_text(jobs_declaration(column, zone))
    return str(path)


def diagnose(platform: Platform, backlogs: str) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "exporter", "diagnose", "--database.url", platform.exporter_url]
    command += ["--backlogs.config-file", backlogs, "--signals", "jobs"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
async def bogota(platform: Platform) -> Platform:
    await bogota_jobs(platform)
    await platform.execute(
        "INSERT INTO tenant_acme.jobs VALUES"
        " ('pending', now()::timestamp, now() AT TIME ZONE 'UTC', now(), current_date)"
    )
    return platform


async def test_a_timestamp_read_as_utc_on_a_server_in_another_zone_is_warned(bogota: Platform, tmp_path: Path) -> None:
    done = diagnose(bogota, declared(tmp_path, "at_local", None))
    assert done.returncode == 0, done.stdout + done.stderr
    assert f"warn jobs: jobs.at_local {WARNING}" in done.stdout
    assert "hint: rows written with now() or CURRENT_TIMESTAMP hold the server's local time" in done.stdout
    assert "timezone: server" in done.stdout


@pytest.mark.parametrize(
    ("column", "zone", "said"),
    [
        ("at_local", "server", "jobs.at_local is a timestamp, read in America/Bogota (timezone: server)"),
        ("at_local", "Europe/Madrid", "jobs.at_local is a timestamp, read in Europe/Madrid (timezone: Europe/Madrid)"),
        ("on_day", None, "jobs.on_day is a date, read as midnight in UTC (timezone: UTC)"),
        ("on_day", "server", "jobs.on_day is a date, read as midnight in America/Bogota (timezone: server)"),
    ],
)
async def test_a_declared_zone_is_said_and_not_warned(
    bogota: Platform, tmp_path: Path, column: str, zone: str | None, said: str
) -> None:
    done = diagnose(bogota, declared(tmp_path, column, zone))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "ok   jobs: measurable" in done.stdout
    assert said in done.stdout
    assert "warn" not in done.stdout


async def test_a_timestamptz_needs_no_word(bogota: Platform, tmp_path: Path) -> None:
    done = diagnose(bogota, declared(tmp_path, "at_tz", None))
    assert done.returncode == 0, done.stdout + done.stderr
    assert "at_tz" not in done.stdout


async def test_a_column_of_another_type_is_named_with_what_to_declare(bogota: Platform, tmp_path: Path) -> None:
    done = diagnose(bogota, declared(tmp_path, "status", None))
    assert done.returncode == 1
    assert (
        "FAIL jobs: not measurable: contract_violation: jobs.status: column of type text,"
        " where the contract states timestamptz, timestamp or date"
    ) in done.stdout
    assert "warn jobs: jobs.status is a text column, not a timestamp, timestamptz or date" in done.stdout
    assert "hint: declare as `oldest` the column that holds when the item became pending" in done.stdout
