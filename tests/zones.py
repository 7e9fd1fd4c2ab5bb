"""A tenant's jobs table on a database whose sessions run in America/Bogota (UTC-5
all year), for the tests of declared time columns and their zones."""

from __future__ import annotations

from tests.platform import Platform

SERVER_ZONE = "America/Bogota"


def jobs_declaration(column: str, zone: str | None) -> str:
    """A declared backlog `jobs` whose `oldest` is `column`, read in `zone` (the default when None)."""
    return (
        "backlogs:\n  jobs:\n    help: Jobs waiting.\n    scope: tenant\n    table: jobs\n"
        f"    pending:\n      status: pending\n    oldest: {column}\n"
    ) + (f"    timezone: {zone}\n" if zone is not None else "")


async def bogota_jobs(platform: Platform) -> Platform:
    """Tenant acme with an empty jobs table of every time type, the database in America/Bogota."""
    await platform.execute(f"ALTER DATABASE {platform.database} SET timezone = '{SERVER_ZONE}'")
    await platform.add_tenant("acme")
    await platform.execute(
        "CREATE TABLE tenant_acme.jobs (status text NOT NULL, at_local timestamp, at_utc timestamp,"
        " at_tz timestamptz, on_day date)"
    )
    await platform.execute("GRANT SELECT ON tenant_acme.jobs TO orpycamcp_exporter")
    return platform
