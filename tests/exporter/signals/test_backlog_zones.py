"""The zone of a declared backlog's `oldest` column, against a real PostgreSQL
whose TimeZone is America/Bogota: a `timestamp` written with the server's local
time, another session's zone or UTC, a `date`, and a `timestamptz`, each read
as the exact instant its writer meant."""

from __future__ import annotations

from datetime import date, datetime
from decimal import Decimal
from pathlib import Path
from zoneinfo import ZoneInfo

import asyncpg
import pytest

from exporter.errors import ColumnTypeMismatch, ContractViolation
from exporter.zones import SERVER, instant_sql
from tests.platform import Platform
from tests.scrapes import make_exporter, scrape
from tests.zones import SERVER_ZONE, bogota_jobs, jobs_declaration

pytestmark = pytest.mark.anyio

OLDEST = "orpycamcp_backlog_oldest_pending_timestamp_seconds"


@pytest.fixture
async def bogota(platform: Platform) -> Platform:
    return await bogota_jobs(platform)


async def write_now(platform: Platform, session_zone: str | None = None) -> float:
    """A pending row written with now() in every column, from a session in `session_zone`
    (the server's when None); the instant it was written, as the writer's server saw it."""
    settings = {"timezone": session_zone} if session_zone else {}
    connection = await asyncpg.connect(platform.admin_url, server_settings=settings)
    try:
        epoch: Decimal = await connection.fetchval(
            "INSERT INTO tenant_acme.jobs VALUES ('pending', now()::timestamp, now() AT TIME ZONE 'UTC',"
            " now(), current_date) RETURNING extract(epoch FROM now())"
        )
    finally:
        await connection.close()
    return float(epoch)


async def oldest(platform: Platform, tmp_path: Path, column: str, zone: str | None) -> float | None:
    path = tmp_path / "backlogs.yml"
    path.write_text(jobs_declaration(column, zone))
    exporter = make_exporter(platform.exporter_url, signals="jobs", backlogs_config_file=str(path))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("jobs") == 1
    return page.get(OLDEST, backlog="jobs")


async def test_server_local_time_read_in_the_server_zone(bogota: Platform, tmp_path: Path) -> None:
    written = await write_now(bogota)
    assert await oldest(bogota, tmp_path, "at_local", "server") == pytest.approx(written, abs=1e-6)
    assert await oldest(bogota, tmp_path, "at_local", SERVER_ZONE) == pytest.approx(written, abs=1e-6)


async def test_read_as_utc_by_default_a_local_time_is_five_hours_off(bogota: Platform, tmp_path: Path) -> None:
    written = await write_now(bogota)
    assert await oldest(bogota, tmp_path, "at_utc", None) == pytest.approx(written, abs=1e-6)
    # The shift an operator sees without the key: Bogota is UTC-5 all year.
    assert await oldest(bogota, tmp_path, "at_local", None) == pytest.approx(written - 5 * 3600, abs=1e-6)


async def test_a_writer_in_another_zone_is_read_in_its_zone(bogota: Platform, tmp_path: Path) -> None:
    written = await write_now(bogota, session_zone="Europe/Madrid")
    assert await oldest(bogota, tmp_path, "at_local", "Europe/Madrid") == pytest.approx(written, abs=1e-6)


async def test_a_timestamptz_is_untouched_whatever_the_zone(bogota: Platform, tmp_path: Path) -> None:
    written = await write_now(bogota)
    for zone in (None, "server", "Asia/Tokyo"):
        assert await oldest(bogota, tmp_path, "at_tz", zone) == pytest.approx(written, abs=1e-6), zone


async def test_a_date_is_midnight_in_the_zone(bogota: Platform, tmp_path: Path) -> None:
    await write_now(bogota)
    day: date = (await bogota.fetch("SELECT on_day FROM tenant_acme.jobs"))[0]["on_day"]
    for zone, name in ((None, "UTC"), ("server", SERVER_ZONE), ("Asia/Tokyo", "Asia/Tokyo")):
        midnight = datetime(day.year, day.month, day.day, tzinfo=ZoneInfo(name)).timestamp()
        assert await oldest(bogota, tmp_path, "on_day", zone) == midnight, zone


async def test_a_column_of_another_type_makes_the_backlog_unmeasured(bogota: Platform, tmp_path: Path) -> None:
    await write_now(bogota)
    path = tmp_path / "backlogs.yml"
    path.write_text(jobs_declaration("status", "server"))
    exporter = make_exporter(bogota.exporter_url, signals="jobs", backlogs_config_file=str(path))
    try:
        page = await scrape(exporter)
        outcome = exporter.caches["jobs"].last
        with pytest.raises(ContractViolation) as raised:
            await exporter.caches["jobs"].signal.measure(exporter.sources)
    finally:
        await exporter.close()
    assert page.measured("jobs") == 0
    assert page.family(OLDEST) == {}
    assert outcome is not None
    assert outcome.failure is not None
    assert outcome.failure.reason == "contract_violation"
    assert str(raised.value) == (
        "signal jobs: jobs.status: column of type text, where the contract states timestamptz, timestamp or date"
    )


async def test_the_server_zone_holds_whatever_a_transaction_sets(bogota: Platform) -> None:
    # A transaction may set its own TimeZone (SET LOCAL): `server` still means the session's.
    written = await write_now(bogota)
    connection = await asyncpg.connect(bogota.exporter_url)
    try:
        async with connection.transaction():
            await connection.execute("SET LOCAL TimeZone = 'Asia/Tokyo'")
            instant: datetime = await connection.fetchval(
                f"SELECT {instant_sql('at_local', SERVER)} FROM tenant_acme.jobs"
            )
    finally:
        await connection.close()
    assert instant.timestamp() == pytest.approx(written, abs=1e-6)


@pytest.mark.parametrize("zone", ["server", "Etc/GMT+12", "Pacific/Kiritimati"])
async def test_arrivals_in_a_zone_far_from_utc_are_counted_within_their_window(
    bogota: Platform, tmp_path: Path, zone: str
) -> None:
    """The rows an arrivals-only backlog reads are narrowed on the bare column (so an
    index serves): an arrival written in local time, even 12 hours behind UTC or 14
    ahead, still falls within its window, and one just outside it does not."""
    local = SERVER_ZONE if zone == "server" else zone
    for minutes, status in ((30, "done"), (50, "done"), (70, "done"), (23 * 60, "done"), (25 * 60, "done")):
        await bogota.execute(
            "INSERT INTO tenant_acme.jobs (status, at_local)"
            f" VALUES ($1, (now() - interval '{minutes} minutes') AT TIME ZONE $2)",
            status,
            local,
        )
    path = tmp_path / "backlogs.yml"
    path.write_text(
        "backlogs:\n  jobs:\n    help: Jobs waiting.\n    scope: tenant\n    table: jobs\n"
        "    pending:\n      status: pending\n"
        f"    arrivals:\n      column: at_local\n      windows: [1h, 1d]\n    timezone: {zone}\n"
    )
    exporter = make_exporter(bogota.exporter_url, signals="jobs", backlogs_config_file=str(path))
    try:
        page = await scrape(exporter)
    finally:
        await exporter.close()
    assert page.measured("jobs") == 1
    assert page.get("orpycamcp_backlog_arrivals", backlog="jobs", window="1h") == 2
    assert page.get("orpycamcp_backlog_arrivals", backlog="jobs", window="1d") == 4


async def test_without_oldest_a_refused_arrivals_column_is_the_column_named(bogota: Platform, tmp_path: Path) -> None:
    """The time column a refusal names is the oldest's, else the arrivals': a backlog
    without `oldest` whose arrivals column is text names that column and its type."""
    declaration = (
        "backlogs:\n  jobs:\n    help: Jobs waiting.\n    scope: tenant\n    table: jobs\n"
        "    pending:\n      status: pending\n    arrivals:\n      column: status\n      windows: [1h]\n"
    )
    path = tmp_path / "backlogs.yml"
    path.write_text(declaration)
    exporter = make_exporter(bogota.exporter_url, signals="jobs", backlogs_config_file=str(path))
    try:
        with pytest.raises(ColumnTypeMismatch) as raised:
            await exporter.caches["jobs"].signal.measure(exporter.sources)
    finally:
        await exporter.close()
    assert (raised.value.column, raised.value.found) == ("jobs.status", "text")
