"""The families of declared backlogs: one part per backlog of each shared
family it emits, built at start from the backlogs' declarations (plain
values: the registry never reads a configuration file itself)."""

from __future__ import annotations

import re
from typing import NamedTuple

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

ITEMS = PREFIX + "backlog_items"
ITEMS_HELP = "Rows of a declared backlog per declared group and state, in any state, summed over all tenants."
ARRIVALS = PREFIX + "backlog_arrivals"
ARRIVALS_HELP = (
    "Rows of a declared backlog per declared group, in any state, whose arrival time falls within the window"
    " ending at the measurement (the database's clock); rows already deleted are not counted."
)
ARRIVALS_THRESHOLD = PREFIX + "backlog_arrivals_threshold"
ARRIVALS_THRESHOLD_HELP = (
    "Arrivals per group within the window above which a declared backlog alerts, as declared (alert_above)."
)
UNDECLARED = PREFIX + "backlog_undeclared_values"
UNDECLARED_HELP = (
    "Distinct values a declared backlog's (or dlq's, preservation's) rows hold in the column of a value set"
    " (group, state; origin_group, artifact, phase) that the set does not list, each counted under the set's"
    " declared catch-all value; only for a set declared with one."
)
# The value sets that may declare a catch-all value: a declared backlog's; a built-in table
# signal's are its labels (registry.families.TABLE_SIGNAL_FAMILIES), its name the `backlog` label.
VALUE_SETS = ("group", "state")


class BacklogShape(NamedTuple):
    """What a declared backlog emits: its name, its groups (None: no group
    label), whether it has an oldest column, its states, its arrival windows,
    the windows given a threshold and the value sets declared with a
    catch-all value (its last group or state)."""

    name: str
    groups: tuple[str, ...] | None
    oldest: bool
    states: tuple[str, ...] | None = None
    windows: tuple[str, ...] | None = None
    thresholds: tuple[str, ...] = ()
    catch_alls: tuple[str, ...] = ()


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


def _per_group(name: str, help_text: str, shape: BacklogShape, label: str, values: tuple[str, ...]) -> Family:
    """`shape`'s part of a family labelled by group (if any) and by `label` ∈ `values`."""
    check_name(shape.name)
    combinations: tuple[tuple[str, ...], ...]
    if shape.groups is None:
        combinations = tuple((shape.name, value) for value in values)
        return Family(name, help_text, shape.name, ("backlog", label), combinations)
    combinations = tuple((shape.name, group, value) for group in shape.groups for value in values)
    return Family(name, help_text, shape.name, ("backlog", "group", label), combinations)


def undeclared_part(signal: str, value_sets: tuple[str, ...]) -> Family:
    """A table signal's part of orpycamcp_backlog_undeclared_values: one series per value set with a catch-all."""
    return Family(UNDECLARED, UNDECLARED_HELP, signal, ("backlog", "value_set"), tuple((signal, s) for s in value_sets))


def backlog_families(
    backlogs: tuple[BacklogShape, ...], tables: tuple[tuple[str, tuple[str, ...]], ...] = ()
) -> tuple[Family, ...]:
    """Every declared backlog's parts, each shared family's parts together; `tables`: the
    built-in table signals' value sets declared with a catch-all, by signal (their parts of
    orpycamcp_backlog_undeclared_values, after the backlogs')."""
    pending = tuple(pending_part(b.name, b.groups) for b in backlogs)
    oldest = tuple(oldest_part(b.name, b.groups) for b in backlogs if b.oldest)
    items = tuple(_per_group(ITEMS, ITEMS_HELP, b, "state", b.states) for b in backlogs if b.states is not None)
    arrivals = tuple(
        _per_group(ARRIVALS, ARRIVALS_HELP, b, "window", b.windows) for b in backlogs if b.windows is not None
    )
    thresholds = tuple(
        Family(
            ARRIVALS_THRESHOLD,
            ARRIVALS_THRESHOLD_HELP,
            b.name,
            ("backlog", "window"),
            tuple((b.name, window) for window in b.thresholds),
        )
        for b in backlogs
        if b.thresholds
    )
    undeclared = tuple(undeclared_part(b.name, b.catch_alls) for b in backlogs if b.catch_alls)
    undeclared += tuple(undeclared_part(signal, value_sets) for signal, value_sets in tables)
    for b in backlogs:
        if not set(b.catch_alls) <= set(VALUE_SETS):
            raise RegistryError(UNDECLARED, f"value sets {b.catch_alls} are not among {VALUE_SETS}")
    return pending + oldest + items + arrivals + thresholds + undeclared
