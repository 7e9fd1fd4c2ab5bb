"""`diagnose`'s look at a declared backlog's `oldest` column: its type in the
tables the backlog reads, against the zone it is declared in and the server's
TimeZone. A `timestamp` read as UTC on a server whose TimeZone is not UTC is
worth a warning: rows written with `now()` there hold local time."""

from __future__ import annotations

from collections.abc import Sequence
from typing import NamedTuple

from exporter import zones
from exporter.declarations import Backlog, Scope
from exporter.sources.postgres.identifiers import SCHEMA_PREFIX
from exporter.sources.postgres.source import Postgres

COLUMN_TYPES_SQL = (
    "SELECT DISTINCT format_type(a.atttypid, NULL) AS type FROM pg_attribute a"
    " JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace"
    " WHERE n.nspname = ANY($1::text[]) AND c.relname = $2 AND a.attname = $3 AND NOT a.attisdropped"
    " ORDER BY 1"
)
SERVER_ZONE_SQL = f"SELECT {zones.SERVER_ZONE_SQL}"
KNOWN_ZONE_SQL = "SELECT EXISTS (SELECT 1 FROM pg_timezone_names WHERE name = $1)"
TIMESTAMP = "timestamp without time zone"
DATE = "date"


class Finding(NamedTuple):
    """One line for the operator, and the hint under it (None: nothing to do)."""

    line: str
    hint: str | None = None


def findings(backlog: Backlog, types: Sequence[str], server_zone: str, zone_known: bool) -> list[Finding]:
    """What to say about the `oldest` column of `backlog`, whose tables hold it as `types`."""
    column = f"{backlog.table[-1]}.{backlog.oldest}"
    zone = server_zone if backlog.timezone == zones.SERVER else backlog.timezone
    declared = "timezone: server" if backlog.timezone == zones.SERVER else f"timezone: {backlog.timezone}"
    found = []
    for kind in types:
        if kind not in zones.TIME_TYPES:
            found.append(
                Finding(
                    f"warn {backlog.name}: {column} is a {kind} column, not a timestamp, timestamptz or date",
                    "declare as `oldest` the column that holds when the item became pending",
                )
            )
        elif kind == TIMESTAMP and backlog.timezone == zones.UTC and not zones.is_utc(server_zone):
            found.append(
                Finding(
                    f"warn {backlog.name}: {column} is a timestamp without time zone, read as UTC, on a server"
                    f" whose TimeZone is {server_zone}",
                    "rows written with now() or CURRENT_TIMESTAMP hold the server's local time: declare"
                    " `timezone: server` (or the writers' zone) for this backlog; keep UTC if every writer"
                    " stores UTC (datetime.utcnow())",
                )
            )
        elif kind == TIMESTAMP:
            found.append(Finding(f"     {backlog.name}: {column} is a timestamp, read in {zone} ({declared})"))
        elif kind == DATE:
            found.append(Finding(f"     {backlog.name}: {column} is a date, read as midnight in {zone} ({declared})"))
    if not zone_known:
        found.append(
            Finding(
                f"warn {backlog.name}: the server does not know the time zone {backlog.timezone}",
                "name a zone of pg_timezone_names, or update the server's time zone data",
            )
        )
    return found


async def schemas_read(backlog: Backlog, postgres: Postgres) -> list[str]:
    """The schemas of the tables the backlog reads: every measured tenant's, or the global table's."""
    if backlog.scope is Scope.TENANT:
        return [SCHEMA_PREFIX + slug for slug in await postgres.active_tenant_slugs()]
    return [backlog.table[0]]


async def column_types(backlog: Backlog, postgres: Postgres) -> list[str]:
    """The types of the `oldest` column in the tables the backlog reads."""
    schemas = await schemas_read(backlog, postgres)
    rows = await postgres.fetch(COLUMN_TYPES_SQL, schemas, backlog.table[-1], backlog.oldest)
    return [row["type"] for row in rows]


async def check(backlog: Backlog, postgres: Postgres) -> list[Finding]:
    """The findings about one backlog's `oldest` column; none without one."""
    if backlog.oldest is None:
        return []
    types = await column_types(backlog, postgres)
    server_zone: str = (await postgres.fetch(SERVER_ZONE_SQL))[0][0]
    known = True
    if backlog.timezone not in (zones.UTC, zones.SERVER):
        known = bool((await postgres.fetch(KNOWN_ZONE_SQL, backlog.timezone))[0][0])
    return findings(backlog, types, server_zone, known)
