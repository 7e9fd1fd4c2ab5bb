"""What one measurement of a signal produced, and the single place where any
exception becomes a reason for the signal to be unmeasured."""

from __future__ import annotations

import socket
from collections.abc import Sequence
from dataclasses import dataclass
from typing import NamedTuple

import redis.exceptions

from exporter.errors import MeasurementError, SourceError
from exporter.reasons import Reason
from exporter.samples import Sample
from exporter.sources.postgres.dsn import InvalidDatabaseUrl


class Failure(NamedTuple):
    reason: Reason
    detail: str


@dataclass(frozen=True)
class Outcome:
    """The result of one measurement; `samples` is None when the signal is unmeasured."""

    signal: str
    samples: Sequence[Sample] | None
    duration: float
    last_success: float | None
    failure: Failure | None = None
    # Unix time of the data read (a standby's lag subtracted); None when unmeasured.
    data_time: float | None = None

    @property
    def measured(self) -> bool:
        return self.samples is not None


def classify(exc: BaseException, deadline: float) -> Failure:
    """Map any exception raised while measuring to a stable reason and a safe detail.

    The sources translate their drivers' errors where they catch them (typed
    errors carrying their reason); what is left here is time, the network, and
    what the Redis source does not translate yet.
    """
    # A task group's failure: the first one speaks for it.
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    if isinstance(exc, MeasurementError):
        return Failure(exc.reason, exc.detail)
    if isinstance(exc, SourceError):
        return Failure(exc.reason, str(exc))
    if isinstance(exc, TimeoutError | redis.exceptions.TimeoutError):
        return Failure(Reason.TIMEOUT, f"not complete within the {deadline:g} s deadline")
    if isinstance(exc, InvalidDatabaseUrl):
        # Checked at start; a file it names (a certificate) can vanish later.
        return Failure(Reason.CONNECTION_ERROR, f"the database URL cannot be used: {exc}")
    if isinstance(exc, redis.exceptions.AuthenticationError | redis.exceptions.AuthenticationWrongNumberOfArgsError):
        # Before ConnectionError: redis-py makes a refused AUTH a kind of connection error.
        return Failure(Reason.AUTHENTICATION_FAILED, f"Redis: {exc}")
    if isinstance(exc, redis.exceptions.ResponseError):
        # The Redis source translates the codes it knows (exporter.sources.redis.errors).
        return Failure(Reason.REDIS_ERROR, str(exc))
    if isinstance(exc, socket.gaierror):
        return Failure(Reason.CONNECTION_ERROR, f"cannot resolve the host: {exc.strerror}")
    if isinstance(exc, redis.exceptions.ConnectionError | OSError | EOFError):
        return Failure(Reason.CONNECTION_ERROR, f"{type(exc).__name__}: {exc}")
    if isinstance(exc, redis.exceptions.RedisError):
        return Failure(Reason.REDIS_ERROR, f"{type(exc).__name__}: {exc}")
    return Failure(Reason.INTERNAL_ERROR, f"{type(exc).__name__}: {exc}")
