"""`orpycamcp-exporter diagnose`: measures every enabled signal once with the
configured settings and explains, on an operator's terminal, why one cannot be
measured. Tenant names may appear here; they never appear in the metrics."""

from __future__ import annotations

import time
from collections.abc import Callable

from exporter.errors import Reason
from exporter.measure import measure
from exporter.outcomes import Failure, classify
from exporter.service import build_sources, timeouts_of
from exporter.settings import Settings, redact_url
from exporter.signals import BY_NAME, Signal
from exporter.sources import Sources
from exporter.sources.postgres import PoolMode, Postgres
from exporter.timeouts import Timeouts
from exporter.tools.hints import hint

SERVER_SQL = (
    "SELECT current_setting('server_version') AS version, current_user AS role,"
    " current_setting('transaction_read_only') AS read_only"
)


async def _first_failing_tenant(signal: Signal, postgres: Postgres, timeouts: Timeouts) -> tuple[str, Failure] | None:
    """The first active tenant on whose schema alone the signal fails."""
    try:
        slugs = await postgres.active_tenant_slugs()
    except Exception:  # already reported by _describe_postgres
        return None
    for slug in slugs:
        outcome = await measure(signal, Sources(postgres=postgres.narrowed([slug])), timeouts)
        if outcome.failure is not None:
            return slug, outcome.failure
    return None


async def _describe_postgres(postgres: Postgres, timeouts: Timeouts, say: Callable[[str], None]) -> bool:
    """What the server and the road to it are; False when the road does not fit the pool mode."""
    say(f"PostgreSQL {redact_url(postgres.settings.url)}")
    try:
        probe = await postgres.probe_session()
        row = (await postgres.fetch(SERVER_SQL))[0]
        slugs = await postgres.active_tenant_slugs()
    except Exception as exc:  # reported as a reason, like any measurement
        failure = classify(exc, timeouts.deadline)
        say(f"  cannot read: {failure.reason}: {failure.detail}")
        say(f"  hint: {hint(failure.reason)}")
        return True  # the signals fail on their own, with this reason
    say(f"  server {row['version']}, role {row['role']}, read-only {row['read_only']}")
    say(f"  {len(slugs)} active tenants")
    mode = postgres.settings.pool_mode
    if mode is PoolMode.SESSION and not probe.kept:
        say(f"FAIL pool mode session, but a transaction pooler is in front of the database ({probe.evidence})")
        say(f"     hint: {hint(Reason.TRANSACTION_POOLER)}")
        return False
    if mode is PoolMode.SESSION:
        say(f"  pool mode session: connections keep their server session ({probe.evidence})")
    elif not probe.kept:
        say(f"  pool mode transaction: a transaction pooler is in front ({probe.evidence})")
    else:
        say(
            f"  pool mode transaction: connections keep their server session here ({probe.evidence});"
            " --database.pool-mode session would plan each batch statement once per connection"
            " instead of on every refresh"
        )
    return True


async def diagnose(settings: Settings, say: Callable[[str], None]) -> int:
    timeouts = timeouts_of(settings)
    sources = build_sources(settings)
    healthy = True
    try:
        if sources.postgres is not None:
            healthy = await _describe_postgres(sources.postgres, timeouts, say)
        if sources.redis is not None:
            say(f"Redis {redact_url(sources.redis.settings.url)}")
        for name in settings.signals:
            signal = BY_NAME[name]
            started = time.monotonic()
            outcome = await measure(signal, sources, timeouts)
            elapsed = (time.monotonic() - started) * 1000
            if outcome.samples is not None:
                say(f"ok   {name}: measurable ({len(outcome.samples)} series, {elapsed:.0f} ms)")
                continue
            healthy = False
            assert outcome.failure is not None  # an unmeasured outcome always carries its failure
            failure = outcome.failure
            say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
            if signal.reads_tenants and sources.postgres is not None and failure.reason != "connection_error":
                found = await _first_failing_tenant(signal, sources.postgres, timeouts)
                if found is not None:
                    slug, tenant_failure = found
                    say(f"     first failing tenant: {slug!r} ({tenant_failure.reason}: {tenant_failure.detail})")
                    failure = tenant_failure
            say(f"     hint: {hint(failure.reason)}")
    finally:
        await sources.close()
    return 0 if healthy else 1
