"""Why a signal is unmeasured: the closed vocabulary every error names, and the
logs, `diagnose`'s hints and the runbook (its generated reasons table,
docs/runbook.md) key on. Each reason is one row of registry/reasons.py (its
word and its hint); this is the exporter's name for it."""

from __future__ import annotations

from registry.reasons import Reason

__all__ = ["Reason"]
