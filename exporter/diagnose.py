"""`orpycamcp-exporter diagnose`: measures every enabled signal once with the
configured settings and explains, on an operator's terminal, why one cannot be
measured. Tenant names may appear here; they never appear in the metrics."""

from __future__ import annotations

import time
from collections.abc import Callable

from exporter.outcomes import Failure, classify
from exporter.postgres import Postgres, PostgresSettings
from exporter.scrape import Exporter
from exporter.settings import Settings, redact_url
from exporter.signals import Signal, Sources
from exporter.validate import complete

HINTS = {
    "missing_table": "the tenant's schema lacks a contract table: finish its provisioning, or set its"
    " provisioning_status to something other than 'active' until it is provisioned",
    "permission_denied": "grant the exporter role read access: SELECT public.orpycamcp_grant_tenant('<slug>')"
    " (sql/grants.sql)",
    "authentication_failed": "check the user and password in --database-url / DATABASE_URL",
    "connection_error": "check host, port and that the server accepts connections from here",
    "too_many_connections": "the server has no free connection slot (max_connections)",
    "timeout": "the measurement did not finish within --deadline: look for locks"
    " (SELECT * FROM pg_locks WHERE NOT granted) or raise the deadline (below the TTL)",
    "lock_timeout": "a statement waited too long for a lock another session holds:"
    " SELECT * FROM pg_locks WHERE NOT granted",
    "statement_timeout": "a statement ran into the statement timeout: look for locks"
    " (SELECT * FROM pg_locks WHERE NOT granted) or raise --deadline",
    "unregistered_value": "the data holds a value the registry does not declare: fix the row, or add the"
    " value to registry/values.py and release a new version",
    "contract_violation": "the data breaks the contract (a NULL or out-of-range value): fix the row",
    "invalid_tenant": "a tenant slug is too long to name a schema (63-byte identifiers)",
    "missing_group": "create the consumer group (XGROUP CREATE <stream> <group> $ MKSTREAM)",
}


class TenantProbe(Postgres):
    """The same reader, restricted to the tenants it is told to read."""

    def __init__(self, settings: PostgresSettings) -> None:
        super().__init__(settings)
        self.slugs: list[str] = []

    async def active_tenant_slugs(self) -> list[str]:
        return list(self.slugs)


async def _first_failing_tenant(signal: Signal, postgres: Postgres, deadline: float) -> tuple[str, Failure] | None:
    probe = TenantProbe(postgres.settings)
    try:
        for slug in await postgres.active_tenant_slugs():
            probe.slugs = [slug]
            try:
                complete(signal.name, await signal.measure(Sources(postgres=probe)))
            except Exception as exc:
                return slug, classify(exc, deadline)
    finally:
        await probe.close()
    return None


async def diagnose(settings: Settings, say: Callable[[str], None]) -> int:
    exporter = Exporter.from_settings(settings)
    postgres = exporter.sources.postgres
    healthy = True
    try:
        if postgres is not None:
            say(f"PostgreSQL {redact_url(postgres.settings.url)}")
            try:
                row = (
                    await postgres.fetch(
                        "SELECT current_setting('server_version') AS version, current_user AS role,"
                        " current_setting('transaction_read_only') AS read_only"
                    )
                )[0]
                slugs = await postgres.active_tenant_slugs()
                say(f"  server {row['version']}, role {row['role']}, read-only {row['read_only']}")
                say(f"  {len(slugs)} active tenants")
            except Exception as exc:
                failure = classify(exc, settings.deadline)
                say(f"  cannot read: {failure.reason}: {failure.detail}")
                say(f"  hint: {HINTS.get(failure.reason, 'see the log for details')}")
        if exporter.sources.redis is not None:
            say(f"Redis {redact_url(exporter.sources.redis.settings.url)}")
        for name, cache in exporter.caches.items():
            started = time.monotonic()
            outcome = await cache.get(settings.deadline + 1)
            elapsed = (time.monotonic() - started) * 1000
            if outcome is not None and outcome.samples is not None:
                say(f"ok   {name}: measurable ({len(outcome.samples)} series, {elapsed:.0f} ms)")
                continue
            healthy = False
            failure = Failure("timeout", "still measuring after the deadline")
            if outcome is not None and outcome.failure is not None:
                failure = outcome.failure
            say(f"FAIL {name}: not measurable: {failure.reason}: {failure.detail}")
            if cache.signal.reads_tenants and postgres is not None and failure.reason != "connection_error":
                found = await _first_failing_tenant(cache.signal, postgres, settings.deadline)
                if found is not None:
                    slug, tenant_failure = found
                    say(f"     first failing tenant: {slug!r} ({tenant_failure.reason}: {tenant_failure.detail})")
                    failure = tenant_failure
            say(f"     hint: {HINTS.get(failure.reason, 'see the log for details')}")
    finally:
        await exporter.close()
    return 0 if healthy else 1
