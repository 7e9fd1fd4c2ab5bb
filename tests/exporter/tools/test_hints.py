from __future__ import annotations

from exporter.errors import MeasurementError, Reason
from exporter.tools.hints import HINTS, hint


def _subclasses(cls: type[MeasurementError]) -> list[type[MeasurementError]]:
    found = []
    for sub in cls.__subclasses__():
        found += [sub, *_subclasses(sub)]
    return found


def test_every_reason_has_a_hint_of_its_own() -> None:
    assert set(HINTS) == set(Reason)
    assert all(hint(reason).strip() for reason in Reason)


def test_every_typed_error_names_a_reason() -> None:
    errors = _subclasses(MeasurementError)
    assert errors, "the typed measurement errors are found"
    assert all(isinstance(error.reason, Reason) for error in errors)
    # Each typed error speaks for one reason of its own.
    assert len({error.reason for error in errors}) == len(errors)


def test_a_refused_redis_password_has_a_hint_of_its_own() -> None:
    from exporter.signals.base import Source

    redis_hint = hint(Reason.AUTHENTICATION_FAILED, Source.REDIS)
    assert redis_hint != hint(Reason.AUTHENTICATION_FAILED, Source.POSTGRES)
    assert "--redis-url" in redis_hint
    assert "--database-url" in hint(Reason.AUTHENTICATION_FAILED)
