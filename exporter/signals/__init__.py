"""The table of signals, registered here and nowhere else: the table signals
(dlq, preservation) from their shipped declarations (exporter.contract.tables)
on the one table-signal mechanism (exporter.signals.backlog), the others one
module each."""

from __future__ import annotations

from exporter.contract.tables import DLQ, PRESERVATION
from exporter.signals import audit_chain, backlog, housekeeping, migration_lock, streams
from exporter.signals.base import Signal, Source
from registry import SIGNALS as REGISTERED_SIGNALS

SIGNALS: tuple[Signal, ...] = (
    backlog.signal(DLQ),
    backlog.signal(PRESERVATION),
    audit_chain.SIGNAL,
    migration_lock.SIGNAL,
    housekeeping.SIGNAL,
    streams.SIGNAL,
)

BY_NAME: dict[str, Signal] = {signal.name: signal for signal in SIGNALS}

# The table and the registry must name the same signals, in the same order.
if tuple(BY_NAME) != REGISTERED_SIGNALS:
    raise RuntimeError(f"signal table {tuple(BY_NAME)} differs from the registry {REGISTERED_SIGNALS}")

__all__ = ["BY_NAME", "SIGNALS", "Signal", "Source"]
