"""The families of declared backlogs: one part per backlog of two shared
families, built at start from the backlogs' declarations (plain values: the
registry never reads a configuration file itself)."""

from __future__ import annotations

import re

from registry.model import Family, RegistryError
from registry.values import PREFIX

# A backlog's name is a signal name and a label value: short, plain, lower case.
BACKLOG_NAME = re.compile(r"[a-z][a-z0-9_]*")
MAX_BACKLOG_NAME = 40

PENDING_ITEMS = PREFIX + "backlog_pending_items"
PENDING_HELP = (
    "Pending items of a declared backlog per declared group, summed over all tenants for a tenant-scope backlog."
)
OLDEST_PENDING = PREFIX + "backlog_oldest_pending_timestamp_seconds"
OLDEST_HELP = (
    "Unix time of the oldest pending item of a declared backlog per declared group; absent when none is pending."
)


def pending_part(backlog: str, groups: tuple[str, ...] | None) -> Family:
    """The backlog's part of orpycamcp_backlog_pending_items; `groups` None: no group label."""
    check_name(backlog)
    if groups is None:
        return Family(PENDING_ITEMS, PENDING_HELP, backlog, ("backlog",), ((backlog,),))
    return Family(PENDING_ITEMS, PENDING_HELP, backlog, ("backlog", "group"), tuple((backlog, g) for g in groups))


def oldest_part(backlog: str, groups: tuple[str, ...] | None) -> Family:
    check_name(backlog)
    if groups is None:
        return Family(OLDEST_PENDING, OLDEST_HELP, backlog, ("backlog",), ((backlog,),), sparse=True)
    return Family(
        OLDEST_PENDING, OLDEST_HELP, backlog, ("backlog", "group"), tuple((backlog, g) for g in groups), sparse=True
    )


def check_name(backlog: str) -> None:
    if not BACKLOG_NAME.fullmatch(backlog) or len(backlog) > MAX_BACKLOG_NAME:
        raise RegistryError(PENDING_ITEMS, f"backlog name {backlog!r} is not [a-z][a-z0-9_]* of at most 40 characters")


def backlog_families(backlogs: tuple[tuple[str, tuple[str, ...] | None, bool], ...]) -> tuple[Family, ...]:
    """Every declared backlog's parts, each shared family's parts together:
    `backlogs` holds (name, groups or None, whether it has an oldest column)."""
    pending = tuple(pending_part(name, groups) for name, groups, _ in backlogs)
    oldest = tuple(oldest_part(name, groups) for name, groups, has_oldest in backlogs if has_oldest)
    return pending + oldest
