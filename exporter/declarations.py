"""What a declarations file declares, as plain frozen values: a table signal
(`Backlog`: a declared backlog, or a built-in table signal's declaration), its
closed columns and output families, and `Declarations`, everything one file
declares or replaces. Read and validated by exporter.backlogs; measured by
exporter.signals.backlog.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import NamedTuple

from exporter import zones
from exporter.audit_runs import AuditRuns
from exporter.cadence import INHERITED, DeclaredCadence
from exporter.conditions import Condition
from exporter.declared_streams import NO_STREAMS, SHIPPED_STREAMS, DeclaredStreams
from exporter.tenant_list import DEFAULT_TENANTS, TenantList
from registry import Family, Registry, extended
from registry.backlogs import OLDEST_PENDING, PENDING_ITEMS, BacklogShape, backlog_families
from registry.families import TABLE_SIGNAL_FAMILIES
from registry.model import product

# The built-in signals whose contract a file may replace besides the table signals.
AUDIT_CHAIN = "audit_chain"
STREAMS = "streams"


class Scope(StrEnum):
    TENANT = "tenant"  # the table in every active tenant schema
    GLOBAL = "global"  # one schema-qualified table


@dataclass(frozen=True)
class ClosedColumn:
    """A column whose values are a closed set: every row's value must be one of
    `values` (label text), or, with `catch_all`, is counted under that one
    declared value when it is not."""

    column: str
    values: tuple[str, ...]
    catch_all: str | None = None

    @property
    def labels(self) -> tuple[str, ...]:
        """The label values the column takes: the declared ones, then the catch-all."""
        return self.values if self.catch_all is None else (*self.values, self.catch_all)


@dataclass(frozen=True)
class States(ClosedColumn):
    """Rows per value of `column` (the `state` label)."""


@dataclass(frozen=True)
class LabelColumn(ClosedColumn):
    """A label of the pending counts read from a column: a declared backlog's `group`,
    a built-in table signal's own (origin_group; artifact and phase)."""

    label: str = field(default="group", kw_only=True)


@dataclass(frozen=True)
class Output:
    """Where a table signal's pending counts and oldest times go: two families,
    their first label the signal's name (`backlog`) when `named`, then one label
    per label column. Declared backlogs share the backlog families; a built-in
    signal (exporter.contract.tables) has families of its own."""

    pending: str = PENDING_ITEMS
    oldest: str | None = OLDEST_PENDING  # None: the signal reads no oldest column
    named: bool = True


DECLARED_OUTPUT = Output()


def table_signal_output(name: str) -> Output:
    """A built-in table signal's own families (registry.families.TABLE_SIGNAL_FAMILIES)."""
    pending, oldest = TABLE_SIGNAL_FAMILIES[name]
    return Output(pending.name, None if oldest is None else oldest.name, named=False)


class Window(NamedTuple):
    label: str  # as declared: "1h"
    seconds: int


@dataclass(frozen=True)
class Arrivals:
    """Rows whose `column` falls within each window ending at the measurement;
    `alert_above` holds the declared thresholds, by window label."""

    column: str
    windows: tuple[Window, ...]
    alert_above: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True)
class Backlog:
    name: str
    help: str
    scope: Scope
    table: tuple[str, ...]  # (table,) in tenant scope, (schema, table) in global scope
    pending: tuple[Condition, ...]
    group_by: str | None = None
    groups: tuple[str, ...] | None = None  # label values, in declared order
    oldest: str | None = None
    timezone: str = zones.UTC  # the zone of `oldest` and `arrivals` when not timestamptz (exporter.zones)
    states: States | None = None
    arrivals: Arrivals | None = None
    # The group every undeclared group value is summed under (opt-in); None: an undeclared value is refused.
    group_catch_all: str | None = None
    # A built-in signal's label columns and families; a declared backlog's come from group_by.
    label_columns: tuple[LabelColumn, ...] | None = None
    output: Output = DECLARED_OUTPUT
    # Its own TTL and deadline (`ttl:`, `deadline:`), else the global ones (exporter.cadence).
    cadence: DeclaredCadence = INHERITED

    @property
    def grouping(self) -> tuple[LabelColumn, ...]:
        """The columns the pending counts are grouped by, each a label (a declared backlog's: `group`)."""
        if self.label_columns is not None:
            return self.label_columns
        if self.group_by is None or self.groups is None:
            return ()
        return (LabelColumn(self.group_by, self.groups, self.group_catch_all),)

    @property
    def group_labels(self) -> tuple[str, ...] | None:
        """The label values the groups take: the declared ones, then the catch-all."""
        if self.groups is None or self.group_catch_all is None:
            return self.groups
        return (*self.groups, self.group_catch_all)

    @property
    def catch_all_sets(self) -> tuple[str, ...]:
        """The value sets declared with a catch-all, as `value_set` label values: a declared
        backlog's group and state, a built-in table signal's label names (origin_group, ...)."""
        states = self.states is not None and self.states.catch_all is not None
        groups = tuple(column.label for column in self.grouping if column.catch_all is not None)
        return (*groups, *(("state",) if states else ()))

    @property
    def scans_all_rows(self) -> bool:
        """Whether the statement reads more than the pending rows (states or arrivals declared)."""
        return self.states is not None or self.arrivals is not None

    def shape(self) -> BacklogShape:
        """What the backlog emits, as the registry takes it."""
        arrivals = self.arrivals
        return BacklogShape(
            self.name,
            self.group_labels,
            self.oldest is not None,
            self.states.labels if self.states is not None else None,
            tuple(window.label for window in arrivals.windows) if arrivals is not None else None,
            tuple(label for label, _ in arrivals.alert_above) if arrivals is not None else (),
            self.catch_all_sets,
        )


@dataclass(frozen=True)
class Declarations:
    """Everything a declarations file declares."""

    backlogs: tuple[Backlog, ...] = ()
    streams: DeclaredStreams = NO_STREAMS
    tenants: TenantList = DEFAULT_TENANTS
    tables: tuple[Backlog, ...] = ()  # built-in table signals' declarations replaced (signals.dlq, ...)
    audit: AuditRuns | None = None  # audit_chain's runs replaced (signals.audit_chain)
    bus: DeclaredStreams | None = None  # the streams signal's own pairs replaced (signals.streams)

    @property
    def replaced(self) -> tuple[str, ...]:
        """The built-in signals whose contract the file replaces, in the contract's order."""
        return (
            *(table.name for table in self.tables),
            *((AUDIT_CHAIN,) if self.audit is not None else ()),
            *((STREAMS,) if self.bus is not None else ()),
        )

    def registry(self) -> Registry:
        """The built-in registry extended with what is declared; RegistryError when
        a declared name or value breaks one of the registry's rules."""
        return extended(
            tuple(b.name for b in self.backlogs),
            backlog_families(
                tuple(b.shape() for b in self.backlogs),
                tuple((t.name, t.catch_all_sets) for t in self.tables if t.catch_all_sets),
            ),
            self.streams.consumer_groups,
            self.streams.dead_letter_streams,
            self.streams.signals,
            replaced_families(self.tables),
            (SHIPPED_STREAMS if self.bus is None else self.bus).pairs_and_dead_letters,
        )


def replaced_families(tables: tuple[Backlog, ...]) -> tuple[Family, ...]:
    """The built-in table signals' families with the label values of their replaced declarations."""
    families: list[Family] = []
    for table in tables:
        pending, oldest = TABLE_SIGNAL_FAMILIES[table.name]
        combinations = product(*(label.labels for label in table.grouping))
        families.append(replace(pending, combinations=combinations))
        if oldest is not None and table.oldest is not None:
            families.append(replace(oldest, combinations=combinations))
    return tuple(families)


NO_DECLARATIONS = Declarations()
