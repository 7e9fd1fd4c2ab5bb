"""Why a signal is unmeasured: each reason once, as one row: its word (the value
of the `reason` label, the logs' `reason`, the runbook's reasons table) and what
an operator should do about it (`diagnose`'s hint; on Redis, where the same
reason means something else, a hint of its own).

A hint is a template: `{flag:NAME}` is the flag of the option `NAME`,
`{setting:NAME=VALUE}` how to give it that value (the exporter spells both:
exporter/tools/hints.py), `{pg_locks}`, `{redis_acl}` and
`{redis_cluster_rights}` the texts of HINT_TEXTS below. The exporter's `Reason`
is this one (exporter/reasons.py); a reason without a hint fails at import.
"""

from __future__ import annotations

from enum import StrEnum

PG_LOCKS = "SELECT * FROM pg_locks WHERE NOT granted"
# The exporter's Redis ACL user, with exactly what it needs (docs/connecting.md).
REDIS_ACL = (
    "ACL SETUSER orpycamcp_exporter on >PASSWORD resetkeys %R~orpycamcp.* resetchannels"
    " -@all +xpending +xinfo|groups +xinfo|stream +xinfo|consumers +xlen +xrange +info +client|setname"
)
# What a Redis Cluster's nodes also allow the same user: the slot map, and reading a
# key whose slot is being migrated on the node importing it.
REDIS_CLUSTER_RIGHTS = "+cluster|slots +asking"
# The texts a hint names by field.
HINT_TEXTS = {"pg_locks": PG_LOCKS, "redis_acl": REDIS_ACL, "redis_cluster_rights": REDIS_CLUSTER_RIGHTS}


class Reason(StrEnum):
    """Why a signal is unmeasured: stable words for logs, hints and the runbook, in exposition order."""

    hint: str
    redis_hint: str | None

    def __new__(cls, value: str, hint: str, redis_hint: str | None = None) -> Reason:
        member = str.__new__(cls, value)
        member._value_ = value
        member.hint = hint
        member.redis_hint = redis_hint
        return member

    # The data or the registry
    UNREGISTERED_FAMILY = (
        "unregistered_family",
        "the exporter emitted a family outside the registry: a defect, please report it",
    )
    UNREGISTERED_VALUE = (
        "unregistered_value",
        "the data holds a value the registry does not declare: fix the row, or declare the"
        " value (dlq, preservation: their value set in an edited contract, docs/adapting.md; a declared backlog:"
        " its `groups` or its `states` values)",
    )
    DUPLICATE_SAMPLE = ("duplicate_sample", "a signal reported the same series twice: a defect, please report it")
    INVALID_VALUE = ("invalid_value", "the data holds a negative, NULL or infinite count: fix the row")
    CONTRACT_VIOLATION = (
        "contract_violation",
        "the data breaks the contract (a NULL, an out-of-range value, a timestamp more"
        " than 5 minutes in the future, infinite, before the year 1 or past 9999, a column of another type than"
        " the contract states, the detail naming both types): fix the row or the column, or the clock of the host"
        " that wrote it; for a declared backlog's time column, `diagnose` says which type and zone it is read in",
    )
    INVALID_TENANT = ("invalid_tenant", "a tenant slug is too long to name a schema (63-byte identifiers)")
    NOT_CONFIGURED = (
        "not_configured",
        "the signal's source is not configured: set {flag:database_url} or {flag:redis_url}",
    )
    # Time
    TIMEOUT = (
        "timeout",
        "the measurement did not finish within {flag:deadline}: look for locks ({pg_locks})"
        " or raise the deadline (below the TTL)",
        "Redis did not answer within {flag:deadline}: look at SLOWLOG GET and the latency"
        " (LATENCY DOCTOR), or raise the deadline (below the TTL)",
    )
    SCRAPE_TIMEOUT = (
        "scrape_timeout",
        "the measurement had not finished when the scrape's own timeout ran out"
        " (X-Prometheus-Scrape-Timeout-Seconds less 0.5 s); it goes on and serves the next scrape: give the job"
        " a scrape_timeout above {flag:deadline}",
    )
    STATEMENT_TIMEOUT = (
        "statement_timeout",
        "a statement ran into the statement timeout: look for locks ({pg_locks}) or raise {flag:deadline}",
    )
    LOCK_TIMEOUT = ("lock_timeout", "a statement waited too long for a lock another session holds: {pg_locks}")
    # PostgreSQL
    TENANT_LIST_UNREADABLE = (
        "tenant_list_unreadable",
        "the exporter lists tenants from public.tenants (or the table the"
        " declarations file's tenants: names, with its slug and filter columns): create it"
        " (exporter/contract/contract.sql) or grant the role read access:"
        " GRANT USAGE ON SCHEMA public TO orpycamcp_exporter; GRANT SELECT ON public.tenants TO orpycamcp_exporter"
        " (exporter/contract/grants.sql)",
    )
    MISSING_TABLE = (
        "missing_table",
        "the tenant's schema lacks a contract table: finish its provisioning, or set its"
        " provisioning_status to something other than 'active' until it is provisioned",
    )
    PERMISSION_DENIED = (
        "permission_denied",
        "grant the exporter role read access: SELECT public.orpycamcp_grant_tenant('<slug>')"
        " (exporter/contract/grants.sql)",
        "the Redis ACL user may not run a command, or not on a key, that the exporter reads"
        " (the detail names both): {redis_acl} (on every node of a Redis Cluster, with {redis_cluster_rights};"
        " on sentinels with ACL users of their own: +sentinel|masters +client|setname);"
        " ACL LOG on the server lists the denials",
    )
    ROW_SECURITY = (
        "row_security",
        "row-level security is enabled on the table the detail names, and the exporter's role"
        " is subject to it: every row or no number, so give the role BYPASSRLS (ALTER ROLE orpycamcp_exporter"
        " BYPASSRLS, as a superuser) or read as the tables' owner (not with FORCE ROW LEVEL SECURITY); no policy,"
        " not even USING (true), lets the role count (docs/connecting.md, the database role)",
    )
    AUTHENTICATION_FAILED = (
        "authentication_failed",
        "PostgreSQL refused the user or password: check them in {flag:database_url}"
        " (or its file, or PGPASSWORD / PGPASSFILE when the URL has no password) and the server's pg_hba.conf",
        "Redis refused the password (or ACL user): check redis://user:password@host"
        " in {flag:redis_url} (or its file) against the server's requirepass or ACL; sentinels with a password of their"
        " own take it as ?sentinel_username=...&sentinel_password=... in the redis+sentinel:// URL",
    )
    TOO_MANY_CONNECTIONS = ("too_many_connections", "the server has no free connection slot (max_connections)")
    CONNECTION_ERROR = (
        "connection_error",
        "check host, port and that the server accepts connections from here; the detail"
        " names each host of the URL and what went wrong with it (refused, a missing socket directory, a"
        " certificate, a primary where target_session_attrs asks for a standby)",
        "check host, port and that Redis accepts connections from here (bind,"
        " protected-mode; TLS: a rediss:// URL and --redis.tls-ca-file); with Sentinel the detail names each"
        " sentinel and what went wrong",
    )
    SQL_ERROR = ("sql_error", "the server refused a statement: see the SQLSTATE in the detail and the server's log")
    TRANSACTION_POOLER = (
        "transaction_pooler",
        "a transaction pooler (PgBouncer pool_mode = transaction) is in front of the"
        " database, and the exporter runs in session pool mode: set"
        " {setting:database_pool_mode=transaction} and restart it; `diagnose` checks the connection path",
    )
    STATEMENT_POOLER = (
        "statement_pooler",
        "statement pooling (PgBouncer pool_mode = statement) is not supported: each"
        " reading is a transaction of several statements; use transaction pooling (pool_mode = transaction) with"
        " {setting:database_pool_mode=transaction}",
    )
    CONNECT_NOT_GRANTED = (
        "connect_not_granted",
        "the role may not connect to the database: GRANT CONNECT ON DATABASE <database>"
        " TO orpycamcp_exporter (exporter/contract/grants.sql grants it with the rest)",
    )
    # Replicas and standbys, on either source
    REPLICA_STALE = (
        "replica_stale",
        "the server read is a replica (or a standby) that has not heard from its master for"
        " longer than the bound: mend its link (Redis: INFO replication, master_link_status; PostgreSQL:"
        " pg_stat_wal_receiver), read the master instead, or raise {flag:redis_replica_max_staleness} /"
        " {flag:database_replica_max_staleness} (docs/connecting.md, Replicas and standbys)",
    )
    HOT_STANDBY = (
        "hot_standby",
        "the migration lock is a lock of the primary's sessions, which a hot standby does not"
        " have: read it from an exporter of the primary (--signals without migration_lock on the standbys' exporters)",
    )
    # Redis
    MISSING_GROUP = ("missing_group", "create the consumer group (XGROUP CREATE <stream> <group> $ MKSTREAM)")
    CLUSTER_REDIRECT = (
        "cluster_redirect",
        "the Redis URL names one node of a Redis Cluster, which redirects (MOVED, ASK) the keys"
        " it does not own: use redis+cluster://HOST:PORT[,HOST:PORT...] (rediss+cluster:// with TLS)",
    )
    CLUSTER_DOWN = (
        "cluster_down",
        "the Redis Cluster does not serve every slot (CLUSTERDOWN): CLUSTER INFO on a node shows"
        " cluster_state, CLUSTER NODES the failed masters; it is measured again once every slot is served",
    )
    READ_ONLY_REPLICA = (
        "read_only_replica",
        "the server read is a replica and refused a command as read-only (READONLY): point"
        " the URL at the master, or at the sentinels (redis+sentinel://SENTINEL/SERVICE) to follow failovers",
    )
    SERVER_LOADING = (
        "server_loading",
        "Redis is loading its dataset into memory after a restart (LOADING): it is measured"
        " again once loaded; INFO persistence shows the progress",
    )
    MASTER_DOWN = (
        "master_down",
        "no master is up: a replica whose link to its master is down (MASTERDOWN), or sentinels"
        " seeing the master down, a failover in progress (SENTINEL MASTERS, SENTINEL CKQUORUM <service> on a"
        " sentinel); it is measured again once a master serves",
    )
    UNKNOWN_SENTINEL_SERVICE = (
        "unknown_sentinel_service",
        "the sentinels monitor no service of the URL's name: compare"
        " redis+sentinel://HOST:PORT/SERVICE_NAME with SENTINEL MASTERS on a sentinel (the detail lists the names"
        " they monitor)",
    )
    REDIS_ERROR = (
        "redis_error",
        "Redis refused a command: see the error code in the detail (WRONGTYPE: check the key's type with TYPE <key>)",
    )
    CLUSTER_CHANGED = (
        "cluster_changed",
        "a Redis Cluster slot moved (a resharding, a failover) since the slot map was read:"
        " the next measurement reads the new slot map; if it lasts, check the cluster (redis-cli --cluster check"
        " HOST:PORT)",
    )
    NOT_A_CLUSTER = (
        "not_a_cluster",
        "the redis+cluster:// URL names a server without cluster mode (cluster-enabled no):"
        " use redis://HOST:PORT for one server, redis+sentinel://SENTINEL/SERVICE behind sentinels",
    )
    SENTINELS_DISAGREE = (
        "sentinels_disagree",
        "the sentinels name different masters for the service and no master is named by"
        " a strict majority of the sentinels in the URL (the detail lists each sentinel's answer): SENTINEL MASTERS on"
        " each; a sentinel monitoring another server under the same name needs SENTINEL REMOVE / SENTINEL MONITOR",
    )
    SENTINELS_TOO_FEW = (
        "sentinels_too_few",
        "too few of the sentinels in the URL answered to trust the master the others name"
        " (the detail lists each sentinel's answer): bring the silent sentinels back (redis-cli -p 26379 PING), check"
        " the URL lists the deployment's sentinels, or accept a majority of those answering with"
        " {setting:redis_sentinel_majority=answering} (docs/connecting.md, what it risks)",
    )
    REDIS_TOO_OLD = (
        "redis_too_old",
        "the streams signal counts undelivered entries with XINFO GROUPS lag, which Redis 7.0"
        " added: upgrade the server (INFO server shows redis_version)",
    )
    # A defect of the exporter itself
    INTERNAL_ERROR = ("internal_error", "a defect of the exporter: the log has its traceback, please report it")
