"""What an operator should do about each reason a signal is unmeasured.

Every `Reason` has a hint: a reason without one fails at import.
"""

from __future__ import annotations

from exporter.flags import flag_of, setting
from exporter.reasons import Reason
from exporter.signals.base import Source

DATABASE_URL, REDIS_URL, DEADLINE = flag_of("database_url"), flag_of("redis_url"), flag_of("deadline")

PG_LOCKS = "SELECT * FROM pg_locks WHERE NOT granted"

HINTS: dict[Reason, str] = {
    Reason.UNREGISTERED_FAMILY: "the exporter emitted a family outside the registry: a defect, please report it",
    Reason.UNREGISTERED_VALUE: "the data holds a value the registry does not declare: fix the row, or declare the"
    " value (a built-in signal: registry/values.py and a new release; a declared backlog: its `groups` or its"
    " `states` values)",
    Reason.DUPLICATE_SAMPLE: "a signal reported the same series twice: a defect, please report it",
    Reason.INVALID_VALUE: "the data holds a negative, NULL or infinite count: fix the row",
    Reason.CONTRACT_VIOLATION: "the data breaks the contract (a NULL, an out-of-range value, a timestamp more"
    " than 5 minutes in the future, infinite, before the year 1 or past 9999, a column of another type than"
    " the contract states, the detail naming both types): fix the row or the column, or the clock of the host"
    " that wrote it; for a declared backlog's time column, `diagnose` says which type and zone it is read in",
    Reason.INVALID_TENANT: "a tenant slug is too long to name a schema (63-byte identifiers)",
    Reason.NOT_CONFIGURED: f"the signal's source is not configured: set {DATABASE_URL} or {REDIS_URL}",
    Reason.TIMEOUT: f"the measurement did not finish within {DEADLINE}: look for locks ({PG_LOCKS})"
    " or raise the deadline (below the TTL)",
    Reason.SCRAPE_TIMEOUT: "the measurement had not finished when the scrape's own timeout ran out"
    " (X-Prometheus-Scrape-Timeout-Seconds less 0.5 s); it goes on and serves the next scrape: give the job"
    f" a scrape_timeout above {DEADLINE}",
    Reason.STATEMENT_TIMEOUT: "a statement ran into the statement timeout: look for locks"
    f" ({PG_LOCKS}) or raise {DEADLINE}",
    Reason.LOCK_TIMEOUT: f"a statement waited too long for a lock another session holds: {PG_LOCKS}",
    Reason.TENANT_LIST_UNREADABLE: "the exporter lists tenants from public.tenants (or the table the"
    " declarations file's tenants: names, with its slug and filter columns): create it"
    " (exporter/contract/contract.sql) or grant the role read access:"
    " GRANT USAGE ON SCHEMA public TO orpycamcp_exporter; GRANT SELECT ON public.tenants TO orpycamcp_exporter"
    " (exporter/contract/grants.sql)",
    Reason.MISSING_TABLE: "the tenant's schema lacks a contract table: finish its provisioning, or set its"
    " provisioning_status to something other than 'active' until it is provisioned",
    Reason.PERMISSION_DENIED: "grant the exporter role read access: SELECT public.orpycamcp_grant_tenant('<slug>')"
    " (exporter/contract/grants.sql)",
    Reason.ROW_SECURITY: "row-level security is enabled on the table the detail names, and the exporter's role"
    " is subject to it: every row or no number, so give the role BYPASSRLS (ALTER ROLE orpycamcp_exporter"
    " BYPASSRLS, as a superuser) or read as the tables' owner (not with FORCE ROW LEVEL SECURITY); no policy,"
    " not even USING (true), lets the role count (docs/connecting.md, the database role)",
    Reason.AUTHENTICATION_FAILED: f"PostgreSQL refused the user or password: check them in {DATABASE_URL}"
    " (or its file, or PGPASSWORD / PGPASSFILE when the URL has no password) and the server's pg_hba.conf",
    Reason.TOO_MANY_CONNECTIONS: "the server has no free connection slot (max_connections)",
    Reason.CONNECTION_ERROR: "check host, port and that the server accepts connections from here; the detail"
    " names each host of the URL and what went wrong with it (refused, a missing socket directory, a"
    " certificate, a primary where target_session_attrs asks for a standby)",
    Reason.SQL_ERROR: "the server refused a statement: see the SQLSTATE in the detail and the server's log",
    Reason.TRANSACTION_POOLER: "a transaction pooler (PgBouncer pool_mode = transaction) is in front of the"
    " database, and the exporter runs in session pool mode: set"
    f" {setting('pool_mode', 'transaction')} and restart it; `diagnose` checks the connection path",
    Reason.STATEMENT_POOLER: "statement pooling (PgBouncer pool_mode = statement) is not supported: each"
    " reading is a transaction of several statements; use transaction pooling (pool_mode = transaction) with"
    f" {setting('pool_mode', 'transaction')}",
    Reason.CONNECT_NOT_GRANTED: "the role may not connect to the database: GRANT CONNECT ON DATABASE <database>"
    " TO orpycamcp_exporter (exporter/contract/grants.sql grants it with the rest)",
    Reason.REPLICA_STALE: "the server read is a replica (or a standby) that has not heard from its master for"
    " longer than the bound: mend its link (Redis: INFO replication, master_link_status; PostgreSQL:"
    f" pg_stat_wal_receiver), read the master instead, or raise {flag_of('redis_replica_max_staleness')} /"
    f" {flag_of('database_replica_max_staleness')} (docs/connecting.md, Replicas and standbys)",
    Reason.CLUSTER_CHANGED: "a Redis Cluster slot moved (a resharding, a failover) since the slot map was read:"
    " the next measurement reads the new slot map; if it lasts, check the cluster (redis-cli --cluster check"
    " HOST:PORT)",
    Reason.MISSING_GROUP: "create the consumer group (XGROUP CREATE <stream> <group> $ MKSTREAM)",
    Reason.CLUSTER_REDIRECT: "the Redis URL names one node of a Redis Cluster, which redirects (MOVED, ASK) the keys"
    " it does not own: use redis+cluster://HOST:PORT[,HOST:PORT...] (rediss+cluster:// with TLS)",
    Reason.CLUSTER_DOWN: "the Redis Cluster does not serve every slot (CLUSTERDOWN): CLUSTER INFO on a node shows"
    " cluster_state, CLUSTER NODES the failed masters; it is measured again once every slot is served",
    Reason.READ_ONLY_REPLICA: "the server read is a replica and refused a command as read-only (READONLY): point"
    " the URL at the master, or at the sentinels (redis+sentinel://SENTINEL/SERVICE) to follow failovers",
    Reason.SERVER_LOADING: "Redis is loading its dataset into memory after a restart (LOADING): it is measured"
    " again once loaded; INFO persistence shows the progress",
    Reason.MASTER_DOWN: "no master is up: a replica whose link to its master is down (MASTERDOWN), or sentinels"
    " seeing the master down, a failover in progress (SENTINEL MASTERS, SENTINEL CKQUORUM <service> on a"
    " sentinel); it is measured again once a master serves",
    Reason.UNKNOWN_SENTINEL_SERVICE: "the sentinels monitor no service of the URL's name: compare"
    " redis+sentinel://HOST:PORT/SERVICE_NAME with SENTINEL MASTERS on a sentinel (the detail lists the names"
    " they monitor)",
    Reason.REDIS_ERROR: "Redis refused a command: see the error code in the detail (WRONGTYPE: check the key's"
    " type with TYPE <key>)",
    Reason.NOT_A_CLUSTER: "the redis+cluster:// URL names a server without cluster mode (cluster-enabled no):"
    " use redis://HOST:PORT for one server, redis+sentinel://SENTINEL/SERVICE behind sentinels",
    Reason.SENTINELS_DISAGREE: "the sentinels name different masters for the service and no master is named by"
    " a strict majority of the sentinels in the URL (the detail lists each sentinel's answer): SENTINEL MASTERS on"
    " each; a sentinel monitoring another server under the same name needs SENTINEL REMOVE / SENTINEL MONITOR",
    Reason.SENTINELS_TOO_FEW: "too few of the sentinels in the URL answered to trust the master the others name"
    " (the detail lists each sentinel's answer): bring the silent sentinels back (redis-cli -p 26379 PING), check"
    " the URL lists the deployment's sentinels, or accept a majority of those answering with"
    f" {setting('redis_sentinel_majority', 'answering')} (docs/connecting.md, what it risks)",
    Reason.REDIS_TOO_OLD: "the streams signal counts undelivered entries with XINFO GROUPS lag, which Redis 7.0"
    " added: upgrade the server (INFO server shows redis_version)",
    Reason.INTERNAL_ERROR: "a defect of the exporter: the log has its traceback, please report it",
}

# The exporter's Redis ACL user, with exactly what it needs (docs/connecting.md).
REDIS_ACL = (
    "ACL SETUSER orpycamcp_exporter on >PASSWORD resetkeys %R~orpycamcp.* resetchannels"
    " -@all +xpending +xinfo|groups +xinfo|stream +xinfo|consumers +xlen +xrange +info +client|setname"
)
# What a Redis Cluster's nodes also allow the same user: the slot map, and reading a
# key whose slot is being migrated on the node importing it.
REDIS_CLUSTER_RIGHTS = "+cluster|slots +asking"

# Where the same reason means something else on Redis.
REDIS_HINTS: dict[Reason, str] = {
    Reason.TIMEOUT: "Redis did not answer within --deadline: look at SLOWLOG GET and the latency"
    " (LATENCY DOCTOR), or raise the deadline (below the TTL)",
    Reason.PERMISSION_DENIED: "the Redis ACL user may not run a command, or not on a key, that the exporter reads"
    f" (the detail names both): {REDIS_ACL} (on every node of a Redis Cluster, with {REDIS_CLUSTER_RIGHTS};"
    " on sentinels with ACL users of their own: +sentinel|masters +client|setname);"
    " ACL LOG on the server lists the denials",
    Reason.AUTHENTICATION_FAILED: "Redis refused the password (or ACL user): check redis://user:password@host"
    f" in {REDIS_URL} (or its file) against the server's requirepass or ACL; sentinels with a password of their"
    " own take it as ?sentinel_username=...&sentinel_password=... in the redis+sentinel:// URL",
    Reason.CONNECTION_ERROR: "check host, port and that Redis accepts connections from here (bind,"
    " protected-mode; TLS: a rediss:// URL and --redis.tls-ca-file); with Sentinel the detail names each"
    " sentinel and what went wrong",
}

_missing = [reason.value for reason in Reason if reason not in HINTS]
if _missing:
    raise RuntimeError(f"reasons without a hint: {', '.join(_missing)}")


def hint(reason: Reason, source: Source | None = None) -> str:
    """What to do about `reason`, for the given source when it matters."""
    if source is Source.REDIS and reason in REDIS_HINTS:
        return REDIS_HINTS[reason]
    return HINTS[reason]
