"""`orpycamcp-exporter diagnose`: measures every enabled signal once with the
configured settings and explains, on an operator's terminal, why one cannot be
measured. Tenant names may appear here; they never appear in the metrics."""

from __future__ import annotations

import asyncio
import contextlib
import time
from collections.abc import Callable

from exporter.errors import Reason
from exporter.measure import measure
from exporter.outcomes import Failure, classify
from exporter.service import build_sources, timeouts_of
from exporter.settings import Settings, redact_url
from exporter.signals import BY_NAME, Signal
from exporter.sources import Sources
from exporter.sources.postgres import Postgres
from exporter.timeouts import Timeouts
from exporter.tools.hints import hint

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
        Reason.TIMEOUT,
        Reason.NOT_CONFIGURED,
    }
)


async def _first_failing_tenant(signal: Signal, postgres: Postgres, timeouts: Timeouts) -> tuple[str, Failure] | None:
    """The first active tenant on whose schema alone the signal fails; None when none
    does, or when the tenants cannot be listed (already reported)."""
    try:
        async with asyncio.timeout(timeouts.deadline):
            slugs = await postgres.active_tenant_slugs()
    except Exception:  # reported with the PostgreSQL description and the signal's own line
        return None
    for slug in slugs:
        outcome = await measure(signal, Sources(postgres=postgres.narrowed([slug])), timeouts)
        if outcome.failure is not None:
            return slug, outcome.failure
    return None


async def _describe_postgres(postgres: Postgres, timeouts: Timeouts, say: Callable[[str], None]) -> bool:
    say(f"PostgreSQL {redact_url(postgres.settings.url)}")
    try:
        async with asyncio.timeout(timeouts.deadline):
            row = (await postgres.fetch(SERVER_SQL))[0]
            slugs = await postgres.active_tenant_slugs()
    except Exception as exc:  # reported as a reason, like any measurement
        failure = classify(exc, timeouts.deadline)
        say(f"  cannot read: {failure.reason}: {failure.detail}")
        say(f"  hint: {hint(failure.reason)}")
        return False
    say(f"  server {row['version']}, role {row['role']}, read-only {row['read_only']}")
    say(f"  {len(slugs)} active tenants")
    return True


async def _report(name: str, sources: Sources, timeouts: Timeouts, say: Callable[[str], None]) -> bool:
    """One status line for the signal (and its hint when it fails); True when measurable."""
    signal = BY_NAME[name]
    started = time.monotonic()
    outcome = await measure(signal, sources, timeouts)
    elapsed = (time.monotonic() - started) * 1000
    if outcome.samples is not None:
        say(f"ok   {name}: measurable ({len(outcome.samples)} series, {elapsed:.0f} ms)")
        return True
    failure = outcome.failure or Failure(Reason.INTERNAL_ERROR, "unmeasured without a reason")
    say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
    if signal.reads_tenants and sources.postgres is not None and failure.reason not in NOT_PER_TENANT:
        found = await _first_failing_tenant(signal, sources.postgres, timeouts)
        if found is not None:
            slug, tenant_failure = found
            say(f"     first failing tenant: {slug!r} ({tenant_failure.reason}: {tenant_failure.detail})")
            failure = tenant_failure
    say(f"     hint: {hint(failure.reason)}")
    return False


async def diagnose(settings: Settings, say: Callable[[str], None]) -> int:
    """Every enabled signal gets one line, whatever fails; exit code 1 when anything does."""
    timeouts = timeouts_of(settings)
    sources = build_sources(settings)
    healthy = True
    try:
        if sources.postgres is not None:
            healthy = await _describe_postgres(sources.postgres, timeouts, say)
        if sources.redis is not None:
            say(f"Redis {redact_url(sources.redis.settings.url)}")
        for name in settings.signals:
            try:
                healthy = await _report(name, sources, timeouts, say) and healthy
            except Exception as exc:  # a defect of diagnose itself still ends as a line, never a traceback
                failure = classify(exc, timeouts.deadline)
                say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
                say(f"     hint: {hint(failure.reason)}")
                healthy = False
    finally:
        with contextlib.suppress(Exception):
            async with asyncio.timeout(5):
                await sources.close()
    return 0 if healthy else 1
