"""Every connection path to the database: directly and through Debian's PgBouncer (session
and transaction pooling), in both pool modes. Exact values on every path that fits
its mode; the default mode through a transaction pooler never reports a value
and says what to set; the read-only transaction and its limits hold through
the pooler, and nothing is left in the server session the pooler lends."""

from __future__ import annotations

import contextlib
import logging
from collections.abc import Iterator
from dataclasses import dataclass

import asyncpg
import pytest

from devkit.pgbouncer import LocalPgBouncer, pgbouncer_server
from devkit.servers import PostgresServer
from exporter.exporter import Exporter
from exporter.loading import load
from exporter.outcomes import classify
from exporter.reasons import Reason
from exporter.service import postgres_settings
from exporter.sources.postgres.errors import DatabaseRefused
from exporter.sources.postgres.pool_mode import PoolMode
from exporter.sources.postgres.pooler import BACKEND_PID_SQL
from exporter.sources.postgres.source import Postgres
from exporter.sources.postgres.transaction import milliseconds
from exporter.timeouts import Timeouts
from exporter.tools.demo import EXPORTER_ROLE
from exporter.tools.hints import hint
from registry.values import ORIGIN_GROUPS
from tests.platform import EXPORTER_PASSWORD, Platform, at
from tests.scrapes import Page, make_exporter, scrape, value_series

pytestmark = pytest.mark.anyio

TENANTS = ("acme", "globex", "initech", "umbrella", "wonka")
POSTGRES_SIGNALS = ("dlq", "preservation", "audit_chain")
VALUE_PREFIXES = ("orpycamcp_dlq_", "orpycamcp_preservation_", "orpycamcp_audit_chain_")


@dataclass(frozen=True)
class ConnectionPath:
    """How the exporter reaches the database, and the pool mode it runs in."""

    pooler: str | None  # PgBouncer's pool_mode, None: directly
    mode: PoolMode

    @property
    def id(self) -> str:
        return f"{self.pooler or 'direct'}-path-{self.mode.value}-mode"


CONNECTION_PATHS = [
    ConnectionPath(None, PoolMode.SESSION),
    ConnectionPath(None, PoolMode.TRANSACTION),
    ConnectionPath("session", PoolMode.SESSION),
    ConnectionPath("session", PoolMode.TRANSACTION),
    ConnectionPath("transaction", PoolMode.TRANSACTION),
]


@pytest.fixture
def bouncers(pg_server: PostgresServer) -> Iterator[dict[str, LocalPgBouncer]]:
    """A PgBouncer of each pool_mode in front of the session's PostgreSQL, started when first asked for."""
    with contextlib.ExitStack() as stack:

        class Started(dict[str, LocalPgBouncer]):
            def __missing__(self, pool_mode: str) -> LocalPgBouncer:
                bouncer = stack.enter_context(
                    pgbouncer_server(
                        pg_server.port,
                        pool_mode,
                        {EXPORTER_ROLE: EXPORTER_PASSWORD, "postgres": pg_server.password},
                        # FIFO reuse of the server sessions: consecutive transactions of
                        # one client land on different sessions whenever there are several.
                        {"server_round_robin": "1"},
                    )
                )
                self[pool_mode] = bouncer
                return bouncer

        yield Started()


def exporter_url(platform: Platform, bouncers: dict[str, LocalPgBouncer], pooler: str | None) -> str:
    if pooler is None:
        return platform.exporter_url
    return bouncers[pooler].url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database)


async def seed(platform: Platform) -> None:
    for slug in TENANTS:
        await platform.add_tenant(slug)
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=0)


class Ledger:
    """The dead letters and exhausted retries written so far, to know the exact totals."""

    def __init__(self, platform: Platform) -> None:
        self.platform = platform
        self.pending: dict[str, int] = {}
        self.exhausted = 0
        self.rows = 0

    async def add(self, round_number: int) -> None:
        """Each round adds a different number of rows to each tenant."""
        for index, slug in enumerate(TENANTS):
            for _ in range(index + round_number):
                self.rows += 1
                group = ORIGIN_GROUPS[self.rows % len(ORIGIN_GROUPS)]
                await self.platform.add_dead_letter(slug, f"e{self.rows}", group, "pending", at("2026-11-01 00:00:00"))
                self.pending[group] = self.pending.get(group, 0) + 1
            await self.platform.add_retry(slug, f"a{self.rows}", "document", "fixity", "exhausted")
            self.exhausted += 1

    def assert_exact(self, page: Page, signals: tuple[str, ...] = ("dlq", "preservation")) -> None:
        if "dlq" in signals:
            for group in ORIGIN_GROUPS:
                want = self.pending.get(group, 0)
                assert page.get("orpycamcp_dlq_pending_events", origin_group=group) == want, group
        if "preservation" in signals:
            exhausted = page.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="fixity")
            assert exhausted == self.exhausted


def refresh_every_scrape(exporter: Exporter) -> None:
    for cache in exporter.caches.values():
        cache.ttl = 0


@pytest.mark.parametrize("path", CONNECTION_PATHS, ids=[path.id for path in CONNECTION_PATHS])
async def test_exact_values_across_refreshes_on_every_connection_path(
    platform: Platform, bouncers: dict[str, LocalPgBouncer], path: ConnectionPath
) -> None:
    await seed(platform)
    ledger = Ledger(platform)
    # Batches of 2 tenants: several statements per signal, over both connections.
    exporter = make_exporter(
        exporter_url(platform, bouncers, path.pooler),
        signals="dlq,preservation,audit_chain",
        database_pool_mode=path.mode.value,
        database_batch_size="2",
    )
    refresh_every_scrape(exporter)
    try:
        for round_number in range(1, 5):
            await ledger.add(round_number)
            page = await scrape(exporter)
            for signal in POSTGRES_SIGNALS:
                assert page.measured(signal) == 1, (path, round_number, signal)
            ledger.assert_exact(page)
            assert page.get("orpycamcp_audit_chain_breaks") == 0
    finally:
        await exporter.close()


@pytest.mark.parametrize("round_robin", ["0", "1"], ids=["lifo", "fifo"])
async def test_session_mode_through_a_transaction_pooler_never_reports_a_value(
    platform: Platform, pg_server: PostgresServer, caplog: pytest.LogCaptureFixture, round_robin: str
) -> None:
    caplog.set_level(logging.WARNING)
    await seed(platform)
    ledger = Ledger(platform)
    # PgBouncer lends its server sessions last-in first-out by default (an idle
    # client gets the same one back every time), first-in first-out with
    # server_round_robin: the pooler is found out either way, before any reading.
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(pg_server.port, "transaction", users, {"server_round_robin": round_robin}) as bouncer:
        # The default pool mode; one tenant per statement: many named statements on each connection.
        exporter = make_exporter(
            bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database),
            signals="dlq,preservation,audit_chain",
            database_batch_size="1",
        )
        refresh_every_scrape(exporter)
        try:
            for round_number in range(1, 5):
                await ledger.add(round_number)
                page = await scrape(exporter)
                for signal, prefix in zip(POSTGRES_SIGNALS, VALUE_PREFIXES, strict=True):
                    # Not one value, from the first refresh on, and for the one reason.
                    assert page.measured(signal) == 0, (round_number, signal)
                    assert value_series(page, (prefix,)) == []
                    outcome = exporter.caches[signal].last
                    assert outcome is not None
                    assert outcome.failure is not None
                    assert outcome.failure.reason is Reason.TRANSACTION_POOLER, outcome.failure
                    assert "\n" not in outcome.failure.detail
        finally:
            await exporter.close()
    logged = [r for r in caplog.records if r.__dict__.get("reason") == Reason.TRANSACTION_POOLER.value]
    assert logged, "the log does not name the reason"
    assert all("--database.pool-mode transaction" in r.getMessage() for r in logged)
    assert "--database.pool-mode transaction" in hint(Reason.TRANSACTION_POOLER)


async def test_a_session_pool_with_no_session_to_spare_still_measures_exactly(
    platform: Platform, pg_server: PostgresServer, caplog: pytest.LogCaptureFixture
) -> None:
    # As many server sessions as the exporter's connections: the second connection
    # of the session check gets none in time once both lanes are open.
    caplog.set_level(logging.WARNING)
    await seed(platform)
    ledger = Ledger(platform)
    users = {EXPORTER_ROLE: EXPORTER_PASSWORD}
    with pgbouncer_server(pg_server.port, "session", users, {"default_pool_size": "2"}) as bouncer:
        exporter = make_exporter(
            bouncer.url(EXPORTER_ROLE, EXPORTER_PASSWORD, platform.database),
            signals="dlq,preservation,audit_chain",
            database_batch_size="1",
            deadline="4",
        )
        refresh_every_scrape(exporter)
        try:
            for round_number in range(1, 4):
                await ledger.add(round_number)
                page = await scrape(exporter)
                for signal in POSTGRES_SIGNALS:
                    assert page.measured(signal) == 1, (round_number, signal)
                ledger.assert_exact(page)
        finally:
            await exporter.close()
    assert any("whether the connection path keeps sessions was not checked" in r.getMessage() for r in caplog.records)


def transaction_client(url: str, deadline: float) -> Postgres:
    settings = load({"database_url": url, "database_pool_mode": "transaction", "deadline": deadline}, {})
    return Postgres(postgres_settings(settings), Timeouts(deadline=deadline))


async def test_every_transaction_is_read_only_with_its_own_limits_through_a_transaction_pooler(
    platform: Platform, pg_server: PostgresServer
) -> None:
    timeouts = Timeouts(deadline=3.0)
    # One server session behind the pooler: the exporter's transactions and the
    # plain client below share it, so what the exporter left there would show.
    with pgbouncer_server(
        pg_server.port, "transaction", {"postgres": pg_server.password}, {"default_pool_size": "1"}
    ) as bouncer:
        # A role that may write: only the exporter's transaction stands in the way.
        url = bouncer.url("postgres", pg_server.password, platform.database)
        plain = await asyncpg.connect(url, statement_cache_size=0)
        try:
            await plain.execute("BEGIN; INSERT INTO public.tenants (slug) VALUES ('probe'); ROLLBACK")
            postgres = transaction_client(url, timeouts.deadline)
            try:
                with pytest.raises(DatabaseRefused) as raised:
                    await postgres.fetch("INSERT INTO public.tenants (slug) VALUES ('intruder') RETURNING slug")
                assert raised.value.sqlstate == "25006"  # read_only_sql_transaction
                assert classify(raised.value, timeouts.deadline).reason is Reason.SQL_ERROR
                rows = await postgres.fetch(
                    "SELECT pg_backend_pid() AS pid, current_setting('transaction_read_only') AS read_only,"
                    " (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout,"
                    " (SELECT setting FROM pg_settings WHERE name = 'lock_timeout') AS lock_timeout,"
                    " current_setting('max_parallel_workers_per_gather') AS workers, current_setting('jit') AS jit,"
                    " current_setting('plan_cache_mode') AS plans, current_setting('row_security') AS row_security"
                )
            finally:
                await postgres.close()
            inside = rows[0]
            assert inside["read_only"] == "on"
            assert inside["statement_timeout"] == milliseconds(timeouts.statement)
            assert inside["lock_timeout"] == milliseconds(timeouts.lock)
            assert (inside["workers"], inside["jit"], inside["plans"]) == ("0", "off", "force_generic_plan")
            assert inside["row_security"] == "off"
            # The same server session, after the exporter's transactions: as it was.
            assert await plain.fetchval(BACKEND_PID_SQL) == inside["pid"]
            after = await plain.fetchrow(
                "SELECT current_setting('transaction_read_only') AS read_only,"
                " (SELECT setting FROM pg_settings WHERE name = 'statement_timeout') AS statement_timeout,"
                " (SELECT count(*) FROM pg_prepared_statements) AS prepared,"
                " current_setting('plan_cache_mode') AS plans, current_setting('row_security') AS row_security"
            )
            assert after is not None
            assert (after["read_only"], after["statement_timeout"], after["prepared"]) == ("off", "0", 0)
            assert (after["plans"], after["row_security"]) == ("auto", "on")
            assert await plain.fetchval("SELECT count(*) FROM public.tenants WHERE slug = 'intruder'") == 0
        finally:
            await plain.close()


async def test_statement_and_lock_timeouts_cut_statements_through_a_transaction_pooler(
    platform: Platform, bouncers: dict[str, LocalPgBouncer]
) -> None:
    await seed(platform)
    timeouts = Timeouts(deadline=1.0)
    postgres = transaction_client(exporter_url(platform, bouncers, "transaction"), timeouts.deadline)
    locker = await asyncpg.connect(platform.admin_url)
    try:
        # The server cuts it (not the client, whose wait is longer): statement_timeout.
        with pytest.raises(DatabaseRefused) as slow:
            await postgres.fetch("SELECT pg_sleep(30)")
        assert slow.value.sqlstate == "57014"  # query_canceled
        assert "statement timeout" in str(slow.value)
        assert classify(slow.value, timeouts.deadline).reason is Reason.STATEMENT_TIMEOUT
        await locker.execute("BEGIN; LOCK TABLE public.audit_chain_runs IN ACCESS EXCLUSIVE MODE")
        with pytest.raises(DatabaseRefused) as locked:
            await postgres.fetch("SELECT count(*) FROM public.audit_chain_runs")
        assert locked.value.sqlstate == "55P03"  # lock_not_available
        assert classify(locked.value, timeouts.deadline).reason is Reason.LOCK_TIMEOUT
        await locker.execute("ROLLBACK")
        # The limits were the transaction's: the next one runs normally.
        assert (await postgres.fetch("SELECT count(*) AS n FROM public.audit_chain_runs"))[0]["n"] == 1
    finally:
        await locker.close()
        await postgres.close()
