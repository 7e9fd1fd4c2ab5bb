"""Samples: the values a signal measured, before and after validation."""

from __future__ import annotations

from typing import NamedTuple


class Sample(NamedTuple):
    """One value of a family; `labels` are label values in the family's label order."""

    family: str
    labels: tuple[str, ...]
    value: float
