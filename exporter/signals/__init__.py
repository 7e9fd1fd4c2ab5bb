"""The table of signals: one module each, registered here and nowhere else."""

from __future__ import annotations

from exporter.signals import audit_chain, dlq, preservation, streams
from exporter.signals.base import Signal, Source
from registry import SIGNALS as REGISTERED_SIGNALS

SIGNALS: tuple[Signal, ...] = (
    dlq.SIGNAL,
    preservation.SIGNAL,
    audit_chain.SIGNAL,
    streams.SIGNAL,
)

BY_NAME: dict[str, Signal] = {signal.name: signal for signal in SIGNALS}

# The table and the registry must name the same signals, in the same order.
if tuple(BY_NAME) != REGISTERED_SIGNALS:
    raise RuntimeError(f"signal table {tuple(BY_NAME)} differs from the registry {REGISTERED_SIGNALS}")

__all__ = ["BY_NAME", "SIGNALS", "Signal", "Source"]
