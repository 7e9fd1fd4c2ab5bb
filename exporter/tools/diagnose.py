"""`orpycamcp-exporter diagnose`: measures every enabled signal once with the
configured settings and explains, on an operator's terminal, why one cannot be
measured. Tenant names may appear here; they never appear in the metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Awaitable, Callable, Sequence
from typing import NamedTuple

from exporter.contract.tables import shipped_or_replaced
from exporter.declarations import Backlog
from exporter.measure import measure
from exporter.outcomes import Failure, classify
from exporter.printable import printable, quoted
from exporter.reasons import Reason
from exporter.service import Catalog, build_sources, declared_catalog, timeouts_of
from exporter.settings import Settings
from exporter.signals import Signal, Source
from exporter.sources import Sources
from exporter.sources.postgres.dsn import redact as redact_url
from exporter.sources.postgres.pool_mode import PoolMode
from exporter.sources.postgres.pooler import PoolerUndecided, SessionProbe
from exporter.sources.postgres.source import Postgres
from exporter.sources.redis.source import RedisStreams
from exporter.sources.redis.url import shown
from exporter.timeouts import Timeouts
from exporter.tools.held import check as check_held
from exporter.tools.hints import hint
from exporter.tools.plans import SEQSCAN_ROWS, explained_table, sequential_scans, suggested_index
from exporter.tools.reach import NO_SESSION_HINT, accepting_host
from exporter.tools.times import Finding
from exporter.tools.times import check as check_times

SERVER_SQL = (
    "SELECT current_setting('server_version') AS version, current_user AS role,"
    " current_setting('transaction_read_only') AS read_only"
)


# Failures that are not about one tenant: looking for a failing tenant would only repeat them.
NOT_PER_TENANT = frozenset(
    {
        Reason.CONNECTION_ERROR,
        Reason.AUTHENTICATION_FAILED,
        Reason.TOO_MANY_CONNECTIONS,
        Reason.TENANT_LIST_UNREADABLE,
        Reason.TRANSACTION_POOLER,
        Reason.STATEMENT_POOLER,
        Reason.CONNECT_NOT_GRANTED,
        Reason.NOT_CONFIGURED,
    }
)


async def _first_failing_tenant(
    signal: Signal, postgres: Postgres, timeouts: Timeouts, catalog: Catalog
) -> tuple[str, Failure] | None:
    """The first active tenant on whose schema alone the signal fails; None when none
    does, or when the tenants cannot be listed (already reported).

    Read on connections of its own: a statement the signal's measurement left
    running (a slow table, a lock) must not make the first tenant look slow."""
    searcher = Postgres(postgres.settings, timeouts)
    try:
        try:
            async with asyncio.timeout(timeouts.deadline):
                slugs = await searcher.active_tenant_slugs()
        except Exception:  # reported with the PostgreSQL description and the signal's own line
            return None
        for slug in slugs:
            outcome = await measure(signal, Sources(postgres=searcher.narrowed([slug])), timeouts, catalog.registry)
            if outcome.failure is not None:
                return slug, outcome.failure
        return None
    finally:
        with contextlib.suppress(Exception):
            await searcher.close()


class Described(NamedTuple):
    """What describing PostgreSQL found: whether it could be read, and the failure
    every PostgreSQL signal shares when the connection path gives no usable session."""

    readable: bool
    path_failure: Failure | None = None


async def _path_failure(exc: Exception, postgres: Postgres, timeouts: Timeouts) -> tuple[Failure, str]:
    """The failure of a connection path that gave no session, and its hint."""
    failure = classify(exc, timeouts.deadline)
    if failure.reason is Reason.TIMEOUT:
        host = await accepting_host(postgres.settings.url, timeouts.lock)
        if host is not None:
            detail = f"{host} accepts connections but gave no session within {timeouts.deadline:g} s"
            return Failure(Reason.TIMEOUT, detail), NO_SESSION_HINT
    return failure, hint(failure.reason)


async def _describe_postgres(postgres: Postgres, timeouts: Timeouts, say: Callable[[str], None]) -> Described:
    """What the server and the connection path to it are. The path is checked first: when
    it gives no session, or none that fits the pool mode, nothing is read through it."""
    say(f"PostgreSQL {redact_url(postgres.settings.url)}")
    probe: SessionProbe | None = None
    try:
        async with asyncio.timeout(timeouts.deadline):
            probe = await postgres.probe_session()
    except PoolerUndecided as undecided:
        say(f"warn pool mode: whether the connection path keeps sessions was not checked: {undecided.evidence}")
    except Exception as exc:  # reported as a reason, like any measurement
        failure, advice = await _path_failure(exc, postgres, timeouts)
        say(f"  cannot connect: {failure.reason}: {failure.detail}")
        say(f"  hint: {advice}")
        return Described(False, failure)
    mode = postgres.settings.pool_mode
    if probe is not None and mode is PoolMode.SESSION and not probe.kept:
        say(f"FAIL pool mode session, but a transaction pooler is in front of the database ({probe.evidence})")
        say(f"     hint: {hint(Reason.TRANSACTION_POOLER)}")
        return Described(
            False, Failure(Reason.TRANSACTION_POOLER, f"the connection path does not keep sessions ({probe.evidence})")
        )
    try:
        async with asyncio.timeout(timeouts.deadline):
            row = (await postgres.fetch(SERVER_SQL))[0]
            slugs = await postgres.active_tenant_slugs()
    except Exception as exc:  # reported as a reason, like any measurement
        failure = classify(exc, timeouts.deadline)
        say(f"  cannot read: {failure.reason}: {failure.detail}")
        say(f"  hint: {hint(failure.reason)}")
        return Described(False)
    say(f"  server {row['version']}, role {row['role']}, read-only {row['read_only']}")
    say(f"  {len(slugs)} active tenants")
    if probe is None:
        pass  # said above
    elif mode is PoolMode.SESSION:
        say(f"  pool mode session: connections keep their server session ({probe.evidence})")
    elif not probe.kept:
        say(f"  pool mode transaction: a transaction pooler is in front ({probe.evidence})")
    else:
        say(
            f"  pool mode transaction: connections keep their server session here ({probe.evidence});"
            " --database.pool-mode session would plan each batch statement once per connection"
            " instead of on every refresh"
        )
    return Described(True)


async def _describe_redis(redis: RedisStreams, timeouts: Timeouts, say: Callable[[str], None]) -> bool:
    """The Redis deployment the URL names (standalone, Sentinel, Cluster) and, behind sentinels, the master they name;
    False when the sentinels cannot name one."""
    say(f"Redis {shown(redis.settings.url)}: {redis.settings.target.describe()}")
    try:
        async with asyncio.timeout(timeouts.deadline):
            where = await redis.where_reads_go()
    except Exception as exc:  # reported as a reason, like any measurement
        failure = classify(exc, timeouts.deadline)
        say(f"  cannot read: {failure.reason}: {failure.detail}")
        say(f"  hint: {hint(failure.reason, Source.REDIS)}")
        return False
    if where is not None:
        say(f"  {where}")
    return True


async def _report(
    name: str, sources: Sources, timeouts: Timeouts, catalog: Catalog, say: Callable[[str], None]
) -> bool:
    """One status line for the signal (and its hint when it fails); True when measurable."""
    signal = catalog.signals[name]
    started = time.monotonic()
    outcome = await measure(signal, sources, timeouts, catalog.registry)
    elapsed = (time.monotonic() - started) * 1000
    if outcome.samples is not None:
        say(f"ok   {name}: measurable ({len(outcome.samples)} series, {elapsed:.0f} ms)")
        return True
    failure = outcome.failure or Failure(Reason.INTERNAL_ERROR, "unmeasured without a reason")
    say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
    if signal.reads_tenants and sources.postgres is not None and failure.reason not in NOT_PER_TENANT:
        found = await _first_failing_tenant(signal, sources.postgres, timeouts, catalog)
        if found is not None:
            slug, tenant_failure = found
            say(f"     first failing tenant: {quoted(slug)} ({tenant_failure.reason}: {tenant_failure.detail})")
            failure = tenant_failure
    say(f"     hint: {hint(failure.reason, signal.source)}")
    return False


def _table_signals(settings: Settings) -> tuple[Backlog, ...]:
    """The enabled table signals' declarations: the declared backlogs', then the built-ins' in force
    (dlq, preservation: shipped, or replaced by the declarations file)."""
    declared = (*settings.backlogs, *shipped_or_replaced(settings.tables))
    return tuple(backlog for backlog in declared if backlog.name in settings.signals)


async def _check_plans(settings: Settings, postgres: Postgres, say: Callable[[str], None]) -> None:
    """Warn about table signals the planner would read with a whole-table scan."""
    for backlog in _table_signals(settings):
        # A backlog with states reads every row by design: a sequential scan is its plan.
        if backlog.states is not None:
            continue
        try:
            async with asyncio.timeout(settings.deadline):
                table = await explained_table(backlog, postgres)
                scans = [] if table is None else await sequential_scans(backlog, postgres, table)
        except Exception as exc:  # a backlog that cannot be read is reported by its measurement already
            failure = classify(exc, settings.deadline)
            say(f"     {backlog.name}: plan not checked: {failure.reason}")
            continue
        for scan in scans:
            rows = "pending rows and recent arrivals" if backlog.arrivals is not None else "pending rows"
            say(
                f"warn {backlog.name}: the planner reads all of {scan.table} (~{scan.rows:,} rows, over"
                f" {SEQSCAN_ROWS:,}) with a sequential scan for its {rows}"
            )
            assert table is not None
            say(f"     hint: index the rows read: {suggested_index(backlog, table)}")


async def _check_backlogs(
    settings: Settings,
    what: str,
    applies: Callable[[Backlog], bool],
    check: Callable[[Backlog], Awaitable[Sequence[Finding]]],
    say: Callable[[str], None],
) -> None:
    """`check`'s findings for each enabled table signal it `applies` to, each with its hint."""
    for backlog in _table_signals(settings):
        if not applies(backlog):
            continue
        try:
            async with asyncio.timeout(settings.deadline):
                found = await check(backlog)
        except Exception as exc:  # a backlog that cannot be read is reported by its measurement already
            failure = classify(exc, settings.deadline)
            say(f"     {backlog.name}: {what} not checked: {failure.reason}")
            continue
        for finding in found:
            say(finding.line)
            if finding.hint is not None:
                say(f"     hint: {finding.hint}")


def _escaped(say: Callable[[str], None]) -> Callable[[str], None]:
    """Tenant slugs and server error texts reach these lines: none may forge another."""
    return lambda line: say(printable(line))


async def diagnose(settings: Settings, say: Callable[[str], None]) -> int:
    """Every enabled signal gets one line, whatever fails; exit code 1 when anything does."""
    say = _escaped(say)
    timeouts = timeouts_of(settings)
    catalog = declared_catalog(settings.declarations)
    sources = build_sources(settings)
    healthy = True
    path_failure: Failure | None = None
    try:
        if sources.postgres is not None:
            healthy, path_failure = await _describe_postgres(sources.postgres, timeouts, say)
        if sources.redis is not None:
            healthy = await _describe_redis(sources.redis, timeouts, say) and healthy
        for name in settings.signals:
            if path_failure is not None and catalog.signals[name].source is Source.POSTGRES:
                # Not measured: it would only wait for the same connection path again.
                say(f"FAIL {name}: not measurable: {path_failure.reason}: {path_failure.detail}")
                say("     hint: see PostgreSQL above")
                continue
            try:
                healthy = await _report(name, sources, timeouts, catalog, say) and healthy
            except Exception as exc:  # a defect of diagnose itself still ends as a line, never a traceback
                failure = classify(exc, timeouts.deadline)
                say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
                say(f"     hint: {hint(failure.reason)}")
                healthy = False
        if sources.postgres is not None and path_failure is None:
            postgres = sources.postgres
            # What the declaration names that the database does not hold; then the plans and the time columns.
            await _check_backlogs(settings, "contract", lambda _: True, lambda b: check_held(b, postgres), say)
            await _check_plans(settings, postgres, say)
            await _check_backlogs(
                settings, "time column", lambda b: b.oldest is not None, lambda b: check_times(b, postgres), say
            )
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await sources.close()
    return 0 if healthy else 1
