from __future__ import annotations

import re

from exporter.errors import Closed, MeasurementError, SourceError
from exporter.reasons import Reason
from exporter.settings import OPTIONS
from exporter.tools.hints import HINTS, REDIS_HINTS, hint


def _subclasses(cls: type[Exception]) -> list[type[Exception]]:
    found: list[type[Exception]] = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_reason_has_a_hint_of_its_own() -> None:
    assert set(HINTS) == set(Reason)
    assert all(hint(reason).strip() for reason in Reason)


def test_every_typed_error_names_a_reason() -> None:
    errors = _subclasses(MeasurementError)
    assert errors, "the typed measurement errors are found"
    assert all(isinstance(getattr(error, "reason", None), Reason) for error in errors)
    # Each typed error speaks for one reason of its own, or refines its parent's
    # (ColumnTypeMismatch, a kind of ContractViolation, names the column and both types).
    own = [error for error in errors if getattr(error.__base__, "reason", None) is not getattr(error, "reason", None)]
    assert len({getattr(error, "reason", None) for error in own}) == len(own)
    assert all(MeasurementError in error.__mro__[2:] for error in errors if error not in own)


def test_every_error_a_source_raises_carries_a_reason() -> None:
    errors = _subclasses(SourceError)
    assert Closed in errors
    assert all(isinstance(getattr(error, "reason", None), Reason) for error in errors)


def test_every_flag_a_hint_names_is_a_declared_option() -> None:
    flags = {item.flag for item in OPTIONS}
    named = {
        flag
        for text in [*HINTS.values(), *REDIS_HINTS.values()]
        for flag in re.findall(r"(?<!redis-cli )--[a-z][a-z.-]*", text)
    }
    assert named, "the hints name flags"
    assert named <= flags, named - flags


def test_a_refused_redis_password_has_a_hint_of_its_own() -> None:
    from exporter.signals.base import Source

    redis_hint = hint(Reason.AUTHENTICATION_FAILED, Source.REDIS)
    assert redis_hint != hint(Reason.AUTHENTICATION_FAILED, Source.POSTGRES)
    assert "--redis.url" in redis_hint
    assert "--database.url" in hint(Reason.AUTHENTICATION_FAILED)


def test_every_field_of_a_hint_is_spelled() -> None:
    # {flag:NAME}, {setting:NAME=VALUE} and the registry's texts: none left unspelled, no brace of a typo.
    templates = [text for reason in Reason for text in (reason.hint, reason.redis_hint) if text is not None]
    assert any("{flag:" in text for text in templates), "the hints name flags through the template"
    assert all("{" not in text and "}" not in text for text in [*HINTS.values(), *REDIS_HINTS.values()])
