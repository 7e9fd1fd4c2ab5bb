"""Why a signal is unmeasured: the closed vocabulary every error names, and the
logs, `diagnose`'s hints and the runbook (its generated reasons table,
docs/runbook.md) key on."""

from __future__ import annotations

from enum import StrEnum


class Reason(StrEnum):
    """Why a signal is unmeasured: stable words for logs, hints and the runbook."""

    # The data or the registry
    UNREGISTERED_FAMILY = "unregistered_family"
    UNREGISTERED_VALUE = "unregistered_value"
    DUPLICATE_SAMPLE = "duplicate_sample"
    INVALID_VALUE = "invalid_value"
    CONTRACT_VIOLATION = "contract_violation"
    INVALID_TENANT = "invalid_tenant"
    NOT_CONFIGURED = "not_configured"
    # Time
    TIMEOUT = "timeout"
    SCRAPE_TIMEOUT = "scrape_timeout"
    STATEMENT_TIMEOUT = "statement_timeout"
    LOCK_TIMEOUT = "lock_timeout"
    # PostgreSQL
    TENANT_LIST_UNREADABLE = "tenant_list_unreadable"
    MISSING_TABLE = "missing_table"
    PERMISSION_DENIED = "permission_denied"
    ROW_SECURITY = "row_security"
    AUTHENTICATION_FAILED = "authentication_failed"
    TOO_MANY_CONNECTIONS = "too_many_connections"
    CONNECTION_ERROR = "connection_error"
    SQL_ERROR = "sql_error"
    TRANSACTION_POOLER = "transaction_pooler"
    STATEMENT_POOLER = "statement_pooler"
    CONNECT_NOT_GRANTED = "connect_not_granted"
    # Replicas and standbys, on either source
    REPLICA_STALE = "replica_stale"
    # Redis
    MISSING_GROUP = "missing_group"
    CLUSTER_REDIRECT = "cluster_redirect"
    CLUSTER_DOWN = "cluster_down"
    READ_ONLY_REPLICA = "read_only_replica"
    SERVER_LOADING = "server_loading"
    MASTER_DOWN = "master_down"
    UNKNOWN_SENTINEL_SERVICE = "unknown_sentinel_service"
    REDIS_ERROR = "redis_error"
    CLUSTER_CHANGED = "cluster_changed"
    NOT_A_CLUSTER = "not_a_cluster"
    SENTINELS_DISAGREE = "sentinels_disagree"
    SENTINELS_TOO_FEW = "sentinels_too_few"
    REDIS_TOO_OLD = "redis_too_old"
    # A defect of the exporter itself
    INTERNAL_ERROR = "internal_error"
