"""The file-descriptor budget: the soft RLIMIT_NOFILE raised to the hard
limit at start, and the HTTP connection cap taken from it, with headroom
kept for everything else the process opens."""

from __future__ import annotations

import logging
import os
import resource
from typing import NamedTuple

from exporter.options import flag_of

log = logging.getLogger("orpycamcp.http")

# Kept free for the database and Redis clients, the listening socket, the
# log, certificate files being read, uvloop's own descriptors, and a margin.
RESERVED_FDS = 128
# Beyond this, memory rather than descriptors is what runs out (a few KiB per
# idle connection): the default cap stops here unless set explicitly.
DEFAULT_CAP_CEILING = 16_384
# A hard limit of "unlimited" is read as this many.
UNLIMITED = 1 << 20


class FdBudget(NamedTuple):
    soft_before: int
    soft: int
    hard: int
    in_use: int


def _finite(limit: int) -> int:
    return UNLIMITED if limit == resource.RLIM_INFINITY else limit


def raise_fd_limit() -> FdBudget:
    """Raise the soft limit to the hard one (a process may do so without privilege); log both."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    before = soft
    if soft != hard:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
            soft = hard
        except (ValueError, OSError) as exc:
            log.warning("cannot raise the file-descriptor limit from %d to %d: %s", soft, _finite(hard), exc)
    in_use = len(os.listdir("/proc/self/fd")) if os.path.isdir("/proc/self/fd") else 16
    budget = FdBudget(_finite(before), _finite(soft), _finite(hard), in_use)
    log.info("file descriptors: soft limit %d (was %d), hard limit %d", budget.soft, budget.soft_before, budget.hard)
    return budget


def connection_cap(budget: FdBudget, database_connections: int, max_connections: int | None) -> int:
    """The most HTTP connections held at once: the configured cap, else the budget's, and never
    more than the descriptors left once the clients and the headroom are counted."""
    available = max(16, budget.soft - budget.in_use - RESERVED_FDS - database_connections - 1)
    if max_connections is not None:
        if max_connections > available:
            log.warning(
                "%s %d exceeds the file-descriptor budget (soft limit %d): %d used",
                flag_of("web_max_connections"),
                max_connections,
                budget.soft,
                available,
            )
        return min(max_connections, available)
    return min(available, DEFAULT_CAP_CEILING)
