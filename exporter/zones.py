"""Time zones of declared time columns: which zone a `timestamp without time
zone` (or a `date`) was written in, and the SQL that reads such a column as
an instant.

A `timestamptz` is an instant already and is read as it is. A `timestamp`
holds a wall-clock time: whoever wrote it decided its zone (`now()::timestamp`
writes the session's TimeZone, `datetime.utcnow()` writes UTC), so the
declaration says which: `UTC` (the default), `server` (the server's TimeZone
setting) or an IANA zone name. A `date` is read as midnight in that zone.
"""

from __future__ import annotations

import functools
import zoneinfo

from exporter.printable import shortened

UTC = "UTC"
SERVER = "server"  # the TimeZone the server gives the exporter's session (SERVER_ZONE_SQL)
# Names under which PostgreSQL's TimeZone means UTC all year round.
UTC_NAMES = frozenset(
    name.lower()
    for name in (
        "UTC",
        "Etc/UTC",
        "UCT",
        "Etc/UCT",
        "GMT",
        "Etc/GMT",
        "GMT0",
        "Etc/GMT0",
        "GMT+0",
        "GMT-0",
        "Etc/GMT+0",
        "Etc/GMT-0",
        "Greenwich",
        "Etc/Greenwich",
        "Universal",
        "Etc/Universal",
        "Zulu",
        "Etc/Zulu",
    )
)
# The column types a declared time column may have.
TIME_TYPES = ("timestamp with time zone", "timestamp without time zone", "date")


@functools.cache
def known_zones() -> frozenset[str]:
    """The names of the zone database (the system's, or the tzdata package): read once."""
    return frozenset(zoneinfo.available_timezones())


def zone_problem(name: object) -> str | None:
    """Why `name` cannot be a declared zone; None when it can. A name is looked up in
    the zone database's list before it is opened: a directory (`America`), a name
    too long for a path or one that climbs out (`../x`) is refused, never opened."""
    if name in (UTC, SERVER):
        return None
    if not isinstance(name, str) or not name:
        return f"{shortened(repr(name))} is not UTC, server or an IANA time zone name"
    unknown = (
        f"{shortened(repr(name))} is not UTC, server or an IANA time zone name (America/Bogota, Europe/Madrid, ...)"
    )
    if name not in known_zones():
        return unknown
    try:
        zoneinfo.ZoneInfo(name)
    except (zoneinfo.ZoneInfoNotFoundError, ValueError, OSError):
        return unknown
    return None


def is_utc(name: str) -> bool:
    return name.lower() in UTC_NAMES


# The session's own TimeZone (server, database and role defaults), whatever a
# transaction sets locally: a `SET LOCAL TimeZone` does not change it.
SERVER_ZONE_SQL = "(SELECT reset_val FROM pg_settings WHERE name = 'TimeZone')"


def zone_sql(zone: str) -> str:
    if zone == SERVER:
        return SERVER_ZONE_SQL
    return "'" + zone.replace("'", "''") + "'"


def instant_sql(column: str, zone: str) -> str:
    """The instant (a timestamptz) of `column` (an SQL expression), its wall-clock
    values read in `zone`.

    The column's type is only known to the server (and may differ from one
    tenant's table to another's), so the expression asks it: adding a zero
    interval turns a date into a timestamp (midnight), leaves both timestamp
    types as they are and fails to plan for any other type; a timestamptz is
    then kept, a timestamp placed in the zone.
    """
    value = f"({column} + interval '0')"
    return (
        f"CASE WHEN pg_typeof({value}) = 'timestamptz'::regtype THEN {value}::timestamptz"
        f" ELSE {value}::timestamp AT TIME ZONE {zone_sql(zone)} END"
    )


def epoch_sql(instant: str) -> str:
    """Seconds since the epoch (a double precision, ±Infinity for the infinities) of
    `instant` (a timestamptz expression): a time outside the years Python's
    datetime holds is read as a number, never decoded into a datetime."""
    return f"date_part('epoch', {instant})"


# No zone is more than 12 hours behind UTC (Etc/GMT+12), so a wall-clock time read
# as UTC is at most this much earlier than the instant it stands for.
MAX_BEHIND_UTC_SECONDS = 12 * 3600


def within_sql(column: str, seconds: int) -> str:
    """A condition on the bare `column`, so that an index on it serves: true for
    every row whose instant (in whatever zone the column is written) lies within the
    last `seconds` before now(), and for a few more. Each transaction sets its
    TimeZone to UTC, so a timestamp or a date compares as written in UTC; the
    exact count is taken on the instant (instant_sql)."""
    return f"{column} > now() - interval '{seconds + MAX_BEHIND_UTC_SECONDS} seconds'"
