"""The closed sets of label values, as the platform defines them."""

from __future__ import annotations

from registry.reasons import Reason

PREFIX = "orpycamcp_"

# Signals, in the order they are measured and rendered.
SIGNALS: tuple[str, ...] = ("dlq", "preservation", "audit_chain", "migration_lock", "housekeeping", "streams")

ORIGIN_GROUPS: tuple[str, ...] = (
    "signature-service",
    "workflow-service",
    "notification-service",
    "knowledge-service",
)

ARTIFACTS: tuple[str, ...] = (
    "document",
    "attachment",
    "signature",
    "timestamp",
    "electronic_index",
    "aip_package",
    "audit_anchor",
)

PHASES: tuple[str, ...] = (
    "reconcile",
    "renewal",
    "packaging",
    "sealing",
    "fixity",
    "replication",
    "transfer",
)

# Consumer groups per source stream: a closed set of pairs, not a cross product.
STREAM_GROUPS: tuple[tuple[str, str], ...] = (
    ("orpycamcp.document.events", "signature-service"),
    ("orpycamcp.document.events", "workflow-service"),
    ("orpycamcp.document.events", "notification-service"),
    ("orpycamcp.workflow.events", "notification-service"),
)

# Why a group's undelivered count is withheld (orpycamcp_stream_undelivered_unknown_groups):
# Redis answered nil, or a `lag` that contradicts what the same round trip says of the
# stream (redis/redis#13957: Redis 7.0 and 7.2 miscount it after a trim). docs/streams.md.
UNDELIVERED_UNKNOWN_REASONS: tuple[str, ...] = (
    "not_counted",  # XINFO GROUPS lag is nil
    "exceeds_length",  # lag > the stream's length (XINFO STREAM length)
    "not_zero_at_last_id",  # last-delivered-id is the stream's last-generated-id, lag is not 0
    "counters_disagree",  # lag != entries-added - entries-read
)

DEADLETTER_STREAMS: tuple[str, ...] = (
    "orpycamcp.signature.deadletter",
    "orpycamcp.workflow.deadletter",
    "orpycamcp.notification.deadletter",
)

# Why a signal can be unmeasured: the words of registry.reasons.Reason, in their order.
FAILURE_REASONS: tuple[str, ...] = tuple(reason.value for reason in Reason)

# The exporter's version: the single place it is written (pyproject reads it,
# and build_info's closed `version` label takes exactly this value).
VERSION = "0.1.0"
