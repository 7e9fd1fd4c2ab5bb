"""migration_lock against a real PostgreSQL: a second session takes the
platform's migration advisory lock, a third waits for it, and the exporter's
least-privilege role reads them from pg_locks (directly and through PgBouncer);
the holder's session start only with pg_read_all_stats, withheld without it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import asyncpg
import pytest

from devkit.pgbouncer import pgbouncer_server
from devkit.servers import PostgresServer
from exporter.contract import fixed
from exporter.signals import migration_lock
from exporter.tools.demo import EXPORTER_ROLE
from tests.platform import EXPORTER_PASSWORD, Platform
from tests.scrapes import Page, scrape_once
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

HELD = "orpycamcp_migration_lock_held"
WAITERS = "orpycamcp_migration_lock_waiters"
START = "orpycamcp_migration_lock_holder_session_start_timestamp_seconds"
UNKNOWN = "orpycamcp_migration_lock_holder_session_start_unknown"
PREFIX = ("orpycamcp_migration_lock_",)
# The key as the platform states it (ADR-041 C19: the eight ASCII bytes of
# "ORPYCAM1"), computed by the server from the bytes, not by the exporter's code.
KEY_SQL = "('x' || encode('ORPYCAM1'::bytea, 'hex'))::bit(64)::bigint"


@dataclass
class Sessions:
    """Sessions of the platform's owner holding or waiting for advisory locks."""

    url: str
    opened: list[asyncpg.Connection]
    blocked: list[asyncio.Task[str]] = field(default_factory=list)

    async def hold(self, key_sql: str = KEY_SQL) -> asyncpg.Connection:
        connection = await asyncpg.connect(self.url)
        self.opened.append(connection)
        await connection.execute(f"SELECT pg_advisory_lock({key_sql})")
        return connection

    async def wait_behind(self, platform: Platform) -> None:
        """A session blocked in pg_advisory_lock, once pg_locks shows it waiting."""
        connection = await asyncpg.connect(self.url)
        self.opened.append(connection)
        before = await waiting(platform)
        # Sent, not awaited: the statement blocks until the lock is free.
        self.blocked.append(asyncio.create_task(connection.execute(f"SELECT pg_advisory_lock({KEY_SQL})")))
        assert await wait_until(lambda: _more_waiting(platform, before), 30)


async def waiting(platform: Platform) -> int:
    rows = await platform.fetch("SELECT count(*) AS n FROM pg_locks WHERE locktype = 'advisory' AND NOT granted")
    count: int = rows[0]["n"]
    return count


async def _more_waiting(platform: Platform, before: int) -> bool:
    return await waiting(platform) > before


@pytest.fixture
async def sessions(platform: Platform) -> AsyncIterator[Sessions]:
    opened = Sessions(platform.admin_url, [])
    yield opened
    for connection in opened.opened:
        connection.terminate()
    for task in opened.blocked:
        with contextlib.suppress(asyncpg.PostgresError, asyncpg.InterfaceError, ConnectionError):
            await task


async def backend_start(connection: asyncpg.Connection) -> float:
    start: float = await connection.fetchval(
        "SELECT date_part('epoch', backend_start) FROM pg_stat_activity WHERE pid = pg_backend_pid()"
    )
    return start


async def read(url: str, **options: str) -> Page:
    page = await scrape_once(url, signals="migration_lock", **options)
    assert page.measured("migration_lock") == 1, page.raw.decode()
    return page


def test_the_key_is_the_eight_ascii_bytes_of_orpycam1() -> None:
    assert fixed.LOCK_KEY == 0x4F52505943414D31
    assert (fixed.CLASSID << 32) | fixed.OBJID == fixed.LOCK_KEY
    assert f"l.classid = {fixed.CLASSID}::oid AND l.objid = {fixed.OBJID}::oid" in migration_lock.LOCK_SQL


async def test_free_lock_is_a_measured_zero(platform: Platform) -> None:
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 0
    assert page.get(WAITERS) == 0
    assert page.series_of(START[:-1]) == []
    assert page.get(UNKNOWN) is None


async def test_held_and_waited_for_as_the_least_privileged_role_sees_it(platform: Platform, sessions: Sessions) -> None:
    await sessions.hold()
    await sessions.wait_behind(platform)
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 1
    assert page.get(WAITERS) == 1
    # Another role's session: pg_stat_activity hides its start; withheld, never a wrong age.
    assert page.get(UNKNOWN) == 1
    assert page.get(START) is None


async def test_the_holders_session_start_with_pg_read_all_stats(
    platform: Platform, sessions: Sessions, pg_server: PostgresServer
) -> None:
    role = f"orpycamcp_stats_{platform.database}"
    await platform.execute(f"CREATE ROLE {role} LOGIN PASSWORD '{EXPORTER_PASSWORD}' IN ROLE pg_read_all_stats")
    try:
        holder = await sessions.hold()
        page = await read(pg_server.url(user=role, password=EXPORTER_PASSWORD, database=platform.database))
        assert page.get(HELD) == 1
        assert page.get(WAITERS) == 0
        assert page.get(START) == await backend_start(holder)
        assert page.get(UNKNOWN) is None
    finally:
        server = await asyncpg.connect(pg_server.url())
        try:
            await server.execute(f"DROP ROLE {role}")
        finally:
            await server.close()


async def test_the_exporters_own_role_holding_it_shows_its_start(platform: Platform, sessions: Sessions) -> None:
    # Its own sessions are visible to a role without any grant.
    holder = await Sessions(platform.exporter_url, sessions.opened, sessions.blocked).hold()
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 1
    assert page.get(START) == await backend_start(holder)


async def test_released_is_zero_again(platform: Platform, sessions: Sessions) -> None:
    holder = await sessions.hold()
    assert (await read(platform.exporter_url)).get(HELD) == 1
    await holder.execute(f"SELECT pg_advisory_unlock({KEY_SQL})")
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 0
    assert page.get(UNKNOWN) is None


@pytest.mark.parametrize(
    "other",
    [
        # The same bytes read little-endian, one half of the key, and the key's
        # two halves as the two-integer form (objsubid 2): none is the platform's lock.
        "('x' || encode('1MACYPRO'::bytea, 'hex'))::bit(64)::bigint",
        f"{fixed.OBJID}",
        f"{fixed.CLASSID}, {fixed.OBJID}",
    ],
    ids=["little_endian", "low_half", "two_int_form"],
)
async def test_other_advisory_locks_are_not_the_migration_lock(
    platform: Platform, sessions: Sessions, other: str
) -> None:
    await sessions.hold(other)
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 0
    assert page.get(WAITERS) == 0


async def test_the_lock_of_another_database_is_not_this_ones(
    platform: Platform, sessions: Sessions, pg_server: PostgresServer
) -> None:
    # Advisory locks are per database: the platform's migrators take it in theirs.
    await Sessions(pg_server.url(), sessions.opened, sessions.blocked).hold()
    page = await read(platform.exporter_url)
    assert page.get(HELD) == 0


@pytest.mark.parametrize("pool_mode", ["session", "transaction"])
async def test_through_pgbouncer(
    platform: Platform, sessions: Sessions, pg_server: PostgresServer, pool_mode: str
) -> None:
    await sessions.hold()
    await sessions.wait_behind(platform)
    with pgbouncer_server(pg_server.port, pool_mode, {EXPORTER_ROLE: EXPORTER_PASSWORD}) as bouncer:
        page = await read(
            bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database), database_pool_mode=pool_mode
        )
    assert page.get(HELD) == 1
    assert page.get(WAITERS) == 1
    assert page.get(UNKNOWN) == 1
    assert sorted(key[0] for key in page.series_of(PREFIX[0])) == sorted([HELD, WAITERS, UNKNOWN])
