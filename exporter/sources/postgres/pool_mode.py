"""What the path to PostgreSQL (directly, or through a pooler) keeps between two
transactions of one connection (--database.pool-mode), and the option's parser."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from enum import StrEnum

from exporter.options import Choice


class PoolMode(StrEnum):
    """What the path to the server keeps between two transactions of one connection."""

    SESSION = "session"  # the server session: a direct connection, or a session pooler
    TRANSACTION = "transaction"  # nothing: a transaction pooler


@dataclass(frozen=True)
class Mode:
    kind: str = " or ".join(mode.value for mode in PoolMode)
    choices: tuple[str, ...] = tuple(mode.value for mode in PoolMode)

    def __call__(self, raw: str, env: Mapping[str, str]) -> PoolMode:
        return PoolMode(Choice(self.choices)(raw, env))
