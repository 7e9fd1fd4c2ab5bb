"""A streaming hot standby made with pg_basebackup -R from a test primary:
measured from the standby, multi-host URLs choosing by target_session_attrs
as libpq does, failover when the standby stops and back when it returns, and
the replay-lag gauge (present on a standby, absent on a primary)."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass

import asyncpg
import pytest

from devkit.servers import POSTGRES_HINT, LocalPostgres, serving, start_postgres
from devkit.standby import caught_up, start_standby
from exporter.reasons import Reason
from exporter.sources.postgres.connect import connect
from exporter.sources.postgres.errors import DatabaseUnreachable
from exporter.tools.demo import EXPORTER_ROLE
from tests.clock import FakeClock
from tests.platform import EXPORTER_PASSWORD, Platform, at, create_platform
from tests.scrapes import Page, make_exporter, scrape, scrape_once
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

LAG = "orpycamcp_database_replay_lag_seconds"
PENDING = "orpycamcp_dlq_pending_events"
EXHAUSTED = "orpycamcp_preservation_exhausted_artifacts"
TTL = 100.0  # seconds on the tests' clock: no real time passes for it
WAIT = 60.0  # real seconds a failover may take on a loaded machine


@dataclass
class Pair:
    primary: LocalPostgres
    standby: LocalPostgres
    platform: Platform

    def url(self, server: LocalPostgres, user: str = "postgres") -> str:
        password = self.primary.password if user == "postgres" else EXPORTER_PASSWORD
        return server.url(user=user, password=password, database=self.platform.database)

    def hosts(self, *servers: LocalPostgres, user: str = "postgres", attrs: str = "any", form: str = "list") -> str:
        """A multi-host URL in the host-list form or the query-parameter form."""
        password = self.primary.password if user == "postgres" else EXPORTER_PASSWORD
        if form == "list":
            hostlist = ",".join(f"127.0.0.1:{server.port}" for server in servers)
            return f"postgresql://{user}:{password}@{hostlist}/{self.platform.database}?target_session_attrs={attrs}"
        hosts = ",".join("127.0.0.1" for _ in servers)
        ports = ",".join(str(server.port) for server in servers)
        return (
            f"postgresql://{user}:{password}@/{self.platform.database}"
            f"?host={hosts}&port={ports}&target_session_attrs={attrs}"
        )

    async def replicated(self) -> None:
        await caught_up(self.url(self.primary), self.url(self.standby))


@pytest.fixture(scope="module")
def pair() -> Iterator[Pair]:
    with serving(start_postgres, POSTGRES_HINT) as primary:

        async def seed() -> Platform:
            platform = await create_platform(primary)
            for slug in ("acme", "globex"):
                await platform.add_tenant(slug)
                await platform.add_dead_letter(slug, "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
                await platform.add_dead_letter(slug, "e2", "signature-service", "pending", at("2026-11-02 00:00:00"))
                await platform.add_retry(slug, "a1", "document", "fixity", "exhausted")
            await platform.add_audit_run("complete", at("2026-11-03 00:00:00"), breaks=2, declared_breaks=1)
            return platform

        platform = asyncio.run(seed())
        with serving(lambda: start_standby(primary), POSTGRES_HINT) as standby:
            ready = Pair(primary, standby, platform)
            asyncio.run(ready.replicated())
            yield ready


def quote_literal(text: str) -> str:
    return "'" + text.replace("'", "''") + "'"


def assert_seeded_values(page: Page) -> None:
    for signal in ("dlq", "preservation", "audit_chain"):
        assert page.measured(signal) == 1, signal
    assert page.get(PENDING, origin_group="workflow-service") == 2
    assert page.get(PENDING, origin_group="signature-service") == 2
    assert page.get(PENDING, origin_group="notification-service") == 0
    assert (
        page.get("orpycamcp_dlq_oldest_pending_timestamp_seconds", origin_group="workflow-service")
        == at("2026-11-01 00:00:00").timestamp()
    )
    assert page.get(EXHAUSTED, artifact="document", phase="fixity") == 2
    assert page.get(EXHAUSTED, artifact="document", phase="renewal") == 0
    assert page.get("orpycamcp_audit_chain_breaks") == 2
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 1


async def test_measured_from_the_standby_exactly_with_its_replay_lag(pair: Pair) -> None:
    exporter = make_exporter(pair.url(pair.standby, EXPORTER_ROLE))
    try:
        page = await scrape(exporter)
        assert_seeded_values(page)
        # Caught up with a connected primary: nothing is missing, whatever the age of the last transaction.
        assert page.get(LAG) == 0
    finally:
        await exporter.close()


async def test_no_replay_lag_on_the_primary(pair: Pair) -> None:
    exporter = make_exporter(pair.url(pair.primary, EXPORTER_ROLE))
    try:
        page = await scrape(exporter)
        assert_seeded_values(page)
        assert page.family(LAG) == {}
    finally:
        await exporter.close()


async def test_the_migration_lock_is_unmeasured_on_a_standby_and_read_on_the_primary(pair: Pair) -> None:
    # The lock held on the primary is not in the standby's pg_locks: never a held 0 there.
    holder = await asyncpg.connect(pair.url(pair.primary))
    try:
        await holder.execute("SELECT pg_advisory_lock($1)", int.from_bytes(b"ORPYCAM1", "big"))
        on_standby = await scrape_once(pair.url(pair.standby, EXPORTER_ROLE), signals="migration_lock")
        assert on_standby.measured("migration_lock") == 0
        assert on_standby.failure_reasons("migration_lock") == {Reason.HOT_STANDBY.value}
        assert on_standby.series_of("orpycamcp_migration_lock_") == []
        on_primary = await scrape_once(pair.url(pair.primary, EXPORTER_ROLE), signals="migration_lock")
        assert on_primary.get("orpycamcp_migration_lock_held") == 1
    finally:
        await holder.close()


@contextlib.asynccontextmanager
async def cut_from_primary(pair: Pair) -> AsyncIterator[Callable[[], Awaitable[float]]]:
    """The standby's WAL receiver stopped (no primary_conninfo) after a last replicated
    transaction; yields the age of that transaction, read on the standby. Restored after."""
    await pair.platform.execute(
        "CREATE TABLE IF NOT EXISTS public.replicated (x int); INSERT INTO public.replicated VALUES (1)"
    )
    await pair.replicated()
    standby = await asyncpg.connect(pair.url(pair.standby))
    try:
        replayed_at = await standby.fetchval("SELECT pg_last_xact_replay_timestamp()")
        conninfo = await standby.fetchval("SHOW primary_conninfo")
        await standby.execute("ALTER SYSTEM SET primary_conninfo = ''")
        await standby.execute("SELECT pg_reload_conf()")

        async def receiver_gone() -> bool:
            return bool(await standby.fetchval("SELECT NOT EXISTS (SELECT FROM pg_stat_wal_receiver)"))

        async def age() -> float:
            seconds: float = await standby.fetchval(
                "SELECT extract(epoch FROM now() - $1::timestamptz)::float8", replayed_at
            )
            return seconds

        assert await wait_until(receiver_gone, 10)
        yield age
    finally:
        await standby.execute(f"ALTER SYSTEM SET primary_conninfo = {quote_literal(conninfo)}")
        await standby.execute("SELECT pg_reload_conf()")
        await standby.close()
    await pair.replicated()


async def test_the_replay_lag_is_the_age_of_the_last_replayed_transaction_when_not_caught_up(pair: Pair) -> None:
    # A standby whose WAL receiver is gone cannot tell it is caught up: it reports the age of what it replayed.
    async with cut_from_primary(pair) as age:
        exporter = make_exporter(pair.url(pair.standby, EXPORTER_ROLE))
        try:
            before = await age()
            lag = (await scrape(exporter)).get(LAG)
            after = await age()
            assert lag is not None
            assert before <= lag <= after
        finally:
            await exporter.close()


# Which server each target_session_attrs picks, as libpq documents it, for both orders of the hosts.
CHOICES = {
    ("primary", "standby"): {
        "any": "primary",
        "primary": "primary",
        "standby": "standby",
        "prefer-standby": "standby",
        "read-write": "primary",
        "read-only": "standby",
    },
    ("standby", "primary"): {
        "any": "standby",
        "primary": "primary",
        "standby": "standby",
        "prefer-standby": "standby",
        "read-write": "primary",
        "read-only": "standby",
    },
}


@pytest.mark.parametrize("form", ["list", "query"])
@pytest.mark.parametrize("order", list(CHOICES))
@pytest.mark.parametrize("attrs", ["any", "primary", "standby", "prefer-standby", "read-write", "read-only"])
async def test_target_session_attrs_choose_the_host_as_libpq(
    pair: Pair, form: str, order: tuple[str, str], attrs: str
) -> None:
    servers = {"primary": pair.primary, "standby": pair.standby}
    url = pair.hosts(*(servers[name] for name in order), attrs=attrs, form=form)
    connection = await connect(url, timeout=10)
    try:
        port = await connection.fetchval("SELECT inet_server_port()")
    finally:
        await connection.close()
    assert port == servers[CHOICES[order][attrs]].port


async def test_prefer_standby_without_a_standby_takes_the_first_usable_host(pair: Pair) -> None:
    connection = await connect(pair.hosts(pair.primary, attrs="prefer-standby"), timeout=10)
    try:
        assert await connection.fetchval("SELECT inet_server_port()") == pair.primary.port
    finally:
        await connection.close()


async def test_standby_without_a_standby_names_what_each_host_is(pair: Pair) -> None:
    with pytest.raises(DatabaseUnreachable) as raised:
        await connect(pair.hosts(pair.primary, attrs="standby"), timeout=10)
    assert str(raised.value) == (
        f"no host gave a session with target_session_attrs=standby: 127.0.0.1:{pair.primary.port}: a primary"
    )
    assert pair.primary.password not in str(raised.value)


async def test_the_exporter_role_is_read_only_by_default_so_read_write_never_matches(pair: Pair) -> None:
    # As in libpq: the role's default_transaction_read_only = on makes every session of it read-only.
    url = pair.hosts(pair.primary, pair.standby, user=EXPORTER_ROLE, attrs="read-write")
    with pytest.raises(DatabaseUnreachable, match="read-write never matches them, ask for primary"):
        await connect(url, timeout=10)
    primary_url = pair.hosts(pair.standby, pair.primary, user=EXPORTER_ROLE, attrs="primary")
    connection = await connect(primary_url, timeout=10)
    try:
        assert await connection.fetchval("SELECT inet_server_port()") == pair.primary.port
    finally:
        await connection.close()


async def test_the_exporter_fails_over_when_the_standby_stops_and_returns_to_it(pair: Pair) -> None:
    url = pair.hosts(pair.standby, pair.primary, user=EXPORTER_ROLE, attrs="prefer-standby", form="list")
    # Connections closed after half a TTL unused: every refresh connects anew, choosing again.
    # The TTL and the idle close pass on the test's clock.
    clock = FakeClock()
    exporter = make_exporter(url, None, clock.clock, ttl=f"{TTL:g}", deadline="10", database_idle_close=f"{TTL / 2:g}")
    try:
        page = await scrape(exporter)
        assert_seeded_values(page)
        assert page.get(LAG) == 0

        pair.standby.stop()
        pages: list[Page] = []

        async def on_the_primary() -> bool:
            clock.advance(TTL)
            pages.append(await scrape(exporter))
            return all(pages[-1].measured(s) == 1 for s in ("dlq", "preservation", "audit_chain"))

        assert await wait_until(on_the_primary, WAIT, step=0)
        assert_seeded_values(pages[-1])
        assert pages[-1].family(LAG) == {}

        pair.standby.start()
        await pair.replicated()

        async def back_on_the_standby() -> bool:
            clock.advance(TTL)
            pages.append(await scrape(exporter))
            return pages[-1].get(LAG) is not None

        assert await wait_until(back_on_the_standby, WAIT, step=0)
        assert_seeded_values(pages[-1])
        assert pages[-1].get(LAG) == 0
    finally:
        await exporter.close()
        if pair.standby.process is None:
            pair.standby.start()


async def test_a_standby_cut_from_its_primary_is_unmeasured_past_the_bound_and_measured_below_it(pair: Pair) -> None:
    """The rule of Redis replicas, on a hot standby: its lag (the age of what it
    last replayed, once its WAL receiver is gone) against --database.replica-max-staleness."""
    signals = ("dlq", "preservation", "audit_chain")
    async with cut_from_primary(pair) as age:

        async def older_than_a_second() -> bool:
            return await age() > 1.0

        assert await wait_until(older_than_a_second, 10)
        # Below the bound: measured exactly, with the lag.
        within = make_exporter(pair.url(pair.standby, EXPORTER_ROLE), database_replica_max_staleness="3600")
        try:
            before = await age()
            page = await scrape(within)
            after = await age()
            assert_seeded_values(page)
            lag = page.get(LAG)
            assert lag is not None
            assert before <= lag <= after
        finally:
            await within.close()
        # Past it: every database signal unmeasured with replica_stale; the lag still shown, as a fact of the server.
        past = make_exporter(pair.url(pair.standby, EXPORTER_ROLE), database_replica_max_staleness="1")
        try:
            page = await scrape(past)
            for signal in signals:
                assert page.measured(signal) == 0, signal
                last = past.caches[signal].last
                assert last is not None
                assert last.failure is not None
                assert last.failure.reason is Reason.REPLICA_STALE
                assert "--database.replica-max-staleness" in last.failure.detail
            assert page.series_of("orpycamcp_dlq_") == []
            lag = page.get(LAG)
            assert lag is not None
            assert lag > 1.0
        finally:
            await past.close()
    # Streaming and caught up again: measured under the tightest bound.
    again = make_exporter(pair.url(pair.standby, EXPORTER_ROLE), database_replica_max_staleness="1")
    try:
        page = await scrape(again)
        assert_seeded_values(page)
        assert page.get(LAG) == 0
    finally:
        await again.close()
