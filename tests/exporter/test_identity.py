"""The database's identity on the page, read from the database on every connection path:
directly, through PgBouncer in session and transaction pooling, on a hot
standby and through a multi-host URL (the same as on the primary), for every
replica of the exporter; two databases of one instance, and two instances,
differ; an identity that cannot be read is absent with its reason."""

from __future__ import annotations

import contextlib
from collections.abc import AsyncIterator, Iterator

import asyncpg
import pytest
from hypothesis import given
from hypothesis import strategies as st

from devkit.pgbouncer import LocalPgBouncer, pgbouncer_server
from devkit.servers import PostgresServer, postgres_server
from exporter.errors import IdentityOutsideRule
from exporter.identity import identity_of
from exporter.tools.demo import EXPORTER_ROLE
from registry.families import DATABASE_IDENTITY, DATABASE_IDENTITY_FAILURE, DATABASE_IDENTITY_RULE
from tests.clock import FakeClock
from tests.exporter.sources.postgres.test_standby import Pair, pair  # noqa: F401 (the module's primary and standby)
from tests.platform import EXPORTER_PASSWORD, Platform, create_platform
from tests.scrapes import Page, make_exporter, scrape

IDENTITY = DATABASE_IDENTITY.name
FAILURE = DATABASE_IDENTITY_FAILURE.name


async def truth(admin_url: str) -> str:
    """The identity as a superuser reads it from the control file and the catalog."""
    connection = await asyncpg.connect(admin_url)
    try:
        system_identifier = await connection.fetchval("SELECT system_identifier FROM pg_control_system()")
        oid = await connection.fetchval("SELECT oid FROM pg_database WHERE datname = current_database()")
    finally:
        await connection.close()
    return f"{system_identifier % (1 << 64)}/{oid}"


def identities(page: Page) -> list[str]:
    return [dict(labels)["database_identity"] for labels, value in page.family(IDENTITY).items() if value == 1]


def failures(page: Page) -> set[str]:
    return {dict(labels)["reason"] for labels in page.family(FAILURE)}


async def identity_on_page(url: str, **options: str) -> list[str]:
    exporter = make_exporter(url, signals="audit_chain", **options)
    try:
        page = await scrape(exporter)
        assert failures(page) == set(), failures(page)
        return identities(page)
    finally:
        await exporter.close()


@pytest.fixture
def bouncers(pg_server: PostgresServer) -> Iterator[dict[str, LocalPgBouncer]]:
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD, "postgres": pg_server.password}
    with contextlib.ExitStack() as stack:
        yield {
            mode: stack.enter_context(pgbouncer_server(pg_server.port, mode, users))
            for mode in ("session", "transaction")
        }


@pytest.mark.anyio
async def test_the_same_identity_directly_and_through_pgbouncer_in_both_pool_modes(
    platform: Platform, bouncers: dict[str, LocalPgBouncer]
) -> None:
    want = await truth(platform.admin_url)
    assert DATABASE_IDENTITY_RULE.accepts(want)
    assert await identity_on_page(platform.exporter_url) == [want]
    session = bouncers["session"].url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
    assert await identity_on_page(session) == [want]
    transaction = bouncers["transaction"].url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)
    assert await identity_on_page(transaction, database_pool_mode="transaction") == [want]
    print(f"\ndirect, PgBouncer session, PgBouncer transaction: {want}")


@pytest.mark.anyio
async def test_replicas_agree_and_two_databases_or_two_instances_differ(
    platform: Platform, pg_server: PostgresServer
) -> None:
    other_database = await create_platform(pg_server)
    first = await identity_on_page(platform.exporter_url)
    # A second exporter replica on the same database reads the same identity.
    assert await identity_on_page(platform.exporter_url) == first
    second = await identity_on_page(other_database.exporter_url)
    assert first != second
    assert first[0].split("/")[0] == second[0].split("/")[0], "one instance, one system identifier"
    with postgres_server() as other_server:
        elsewhere = await create_platform(other_server)
        third = await identity_on_page(elsewhere.exporter_url)
        assert third == [await truth(elsewhere.admin_url)]
    assert third[0].split("/")[0] != first[0].split("/")[0], "another instance, another system identifier"


@pytest.mark.anyio
async def test_a_standby_and_a_multi_host_url_give_the_primary_identity(pair: Pair) -> None:  # noqa: F811
    want = await truth(pair.url(pair.primary))
    assert await identity_on_page(pair.url(pair.primary, EXPORTER_ROLE)) == [want]
    assert await identity_on_page(pair.url(pair.standby, EXPORTER_ROLE)) == [want]
    for attrs in ("standby", "primary", "any"):
        url = pair.hosts(pair.standby, pair.primary, user=EXPORTER_ROLE, attrs=attrs)
        assert await identity_on_page(url) == [want], attrs
    print(f"\nprimary, hot standby, multi-host (standby, primary, any): {want}")


@contextlib.asynccontextmanager
async def control_functions_revoked(platform: Platform) -> AsyncIterator[None]:
    """pg_control_system() taken from PUBLIC, as a hardened server may; restored after."""
    await platform.execute("REVOKE EXECUTE ON FUNCTION pg_control_system() FROM PUBLIC")
    try:
        yield
    finally:
        await platform.execute("GRANT EXECUTE ON FUNCTION pg_control_system() TO PUBLIC")


@pytest.mark.anyio
async def test_an_unreadable_identity_is_absent_with_its_reason(platform: Platform) -> None:
    async with control_functions_revoked(platform):
        exporter = make_exporter(platform.exporter_url, signals="audit_chain", ttl="2", deadline="1")
        try:
            page = await scrape(exporter)
        finally:
            await exporter.close()
    assert identities(page) == []
    assert failures(page) == {"permission_denied"}
    # The signals are not touched by it.
    assert page.measured("audit_chain") == 1


@pytest.mark.anyio
async def test_a_database_down_gives_no_identity_and_says_why() -> None:
    with postgres_server() as server:
        platform = await create_platform(server)
        clock = FakeClock()
        exporter = make_exporter(
            platform.exporter_url, None, clock.clock, signals="audit_chain", ttl="100", deadline="30"
        )
        try:
            assert identities(await scrape(exporter)) == [await truth(platform.admin_url)]
            server.stop()
            clock.advance(110)
            page = await scrape(exporter)
        finally:
            await exporter.close()
    assert identities(page) == []
    assert failures(page) == {"connection_error"}


@given(st.integers(min_value=-(1 << 63), max_value=(1 << 63) - 1), st.integers(min_value=1, max_value=(1 << 32) - 1))
def test_every_identifier_and_oid_postgresql_can_return_fits_the_rule(system_identifier: int, oid: int) -> None:
    value = identity_of(system_identifier, oid)
    assert DATABASE_IDENTITY_RULE.accepts(value)
    assert int(value.split("/")[0]) == system_identifier % (1 << 64)


@pytest.mark.parametrize(
    ("system_identifier", "oid"),
    [(None, 16384), (7312, None), ("7312", 16384), (7312, 0), (True, 16384), (7312.0, 16384), (7312, 1 << 40)],
)
def test_anything_else_is_refused_never_published(system_identifier: object, oid: object) -> None:
    with pytest.raises(IdentityOutsideRule) as raised:
        identity_of(system_identifier, oid)
    assert "does not match the registered rule" in str(raised.value)


@given(st.text(max_size=40))
def test_the_rule_accepts_only_digits_slash_digits(text: str) -> None:
    parts = text.split("/")
    shaped = len(parts) == 2 and all(part.isascii() and part.isdigit() for part in parts)
    shaped = shaped and 1 <= len(parts[0]) <= 20 and 1 <= len(parts[1]) <= 10
    assert DATABASE_IDENTITY_RULE.accepts(text) == shaped
