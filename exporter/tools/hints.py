"""What an operator should do about each reason a signal is unmeasured.

Every `Reason` has a hint: a reason without one fails at import.
"""

from __future__ import annotations

from exporter.errors import Reason

PG_LOCKS = "SELECT * FROM pg_locks WHERE NOT granted"

HINTS: dict[Reason, str] = {
    Reason.UNREGISTERED_FAMILY: "the exporter emitted a family outside the registry: a defect, please report it",
    Reason.UNREGISTERED_VALUE: "the data holds a value the registry does not declare: fix the row, or add the"
    " value to registry/values.py and release a new version",
    Reason.DUPLICATE_SAMPLE: "a signal reported the same series twice: a defect, please report it",
    Reason.INVALID_VALUE: "the data holds a negative, NULL or infinite count: fix the row",
    Reason.CONTRACT_VIOLATION: "the data breaks the contract (a NULL or out-of-range value): fix the row",
    Reason.INVALID_TENANT: "a tenant slug is too long to name a schema (63-byte identifiers)",
    Reason.NOT_CONFIGURED: "the signal's source is not configured: set --database-url or --redis-url",
    Reason.TIMEOUT: f"the measurement did not finish within --deadline: look for locks ({PG_LOCKS})"
    " or raise the deadline (below the TTL)",
    Reason.STATEMENT_TIMEOUT: "a statement ran into the statement timeout: look for locks"
    f" ({PG_LOCKS}) or raise --deadline",
    Reason.LOCK_TIMEOUT: f"a statement waited too long for a lock another session holds: {PG_LOCKS}",
    Reason.MISSING_TABLE: "the tenant's schema lacks a contract table: finish its provisioning, or set its"
    " provisioning_status to something other than 'active' until it is provisioned",
    Reason.PERMISSION_DENIED: "grant the exporter role read access: SELECT public.orpycamcp_grant_tenant('<slug>')"
    " (exporter/contract/grants.sql)",
    Reason.AUTHENTICATION_FAILED: "check the user and password in --database-url / DATABASE_URL",
    Reason.TOO_MANY_CONNECTIONS: "the server has no free connection slot (max_connections)",
    Reason.CONNECTION_ERROR: "check host, port and that the server accepts connections from here",
    Reason.SQL_ERROR: "the server refused a statement: see the SQLSTATE in the detail and the server's log",
    Reason.TRANSACTION_POOLER: "a transaction pooler (PgBouncer pool_mode = transaction) is in front of the"
    " database, and the exporter runs in session pool mode: set --database.pool-mode transaction"
    " (ORPYCAMCP_DATABASE_POOL_MODE=transaction) and restart it; `diagnose` checks the road",
    Reason.MISSING_GROUP: "create the consumer group (XGROUP CREATE <stream> <group> $ MKSTREAM)",
    Reason.REDIS_ERROR: "Redis refused a command: see the detail and check the key's type (TYPE <key>)",
    Reason.INTERNAL_ERROR: "a defect of the exporter: the log has its traceback, please report it",
}

_missing = [reason.value for reason in Reason if reason not in HINTS]
if _missing:
    raise RuntimeError(f"reasons without a hint: {', '.join(_missing)}")


def hint(reason: Reason) -> str:
    return HINTS[reason]
