"""What an operator should do about each reason a signal is unmeasured: the hints
of registry/reasons.py, with the flags they name spelled as exporter/options.py
spells them.
"""

from __future__ import annotations

from exporter.options import flag_of, name_of, setting
from exporter.reasons import Reason
from exporter.signals.base import Source
from registry.reasons import HINT_TEXTS


class _Flag:
    """`{flag:NAME}` in a hint: the flag of the option NAME."""

    def __format__(self, name: str) -> str:
        return flag_of(name_of(name))


class _Setting:
    """`{setting:NAME=VALUE}` in a hint: how to give the option NAME that value."""

    def __format__(self, assignment: str) -> str:
        name, value = assignment.split("=", 1)
        return setting(name_of(name), value)


_FIELDS = {"flag": _Flag(), "setting": _Setting(), **HINT_TEXTS}


def _spelled(template: str) -> str:
    return template.format_map(_FIELDS)


HINTS: dict[Reason, str] = {reason: _spelled(reason.hint) for reason in Reason}
# Where the same reason means something else on Redis.
REDIS_HINTS: dict[Reason, str] = {
    reason: _spelled(reason.redis_hint) for reason in Reason if reason.redis_hint is not None
}


def hint(reason: Reason, source: Source | None = None) -> str:
    """What to do about `reason`, for the given source when it matters."""
    if source is Source.REDIS and reason in REDIS_HINTS:
        return REDIS_HINTS[reason]
    return HINTS[reason]
