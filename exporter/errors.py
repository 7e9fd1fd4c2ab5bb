"""Typed errors. Each carries its context and builds its own message.

A MeasurementError makes its signal unmeasured for one TTL; the mapping from
any exception to that outcome lives in exporter.outcomes.
"""

from __future__ import annotations

from collections.abc import Sequence


class ConfigError(Exception):
    """A setting is invalid; the process exits 2 before serving anything."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        super().__init__(f"invalid setting {setting}: {problem}")


class MeasurementError(Exception):
    """A signal could not be measured completely."""

    reason = "measurement_error"

    def __init__(self, signal: str, detail: str) -> None:
        self.signal = signal
        self.detail = detail
        super().__init__(f"signal {signal}: {detail}")


class UnregisteredFamily(MeasurementError):
    reason = "unregistered_family"

    def __init__(self, signal: str, family: str) -> None:
        self.family = family
        super().__init__(signal, f"family {family!r} is not registered for this signal")


class UnregisteredLabelValue(MeasurementError):
    reason = "unregistered_value"

    def __init__(self, signal: str, family: str, labels: Sequence[str], values: Sequence[object]) -> None:
        self.family = family
        self.labels = tuple(labels)
        self.values = tuple(values)
        shown = ", ".join(f"{label}={value!r}" for label, value in zip(labels, values, strict=False))
        super().__init__(signal, f"family {family}: label values ({shown}) are outside the registry")


class DuplicateSample(MeasurementError):
    reason = "duplicate_sample"

    def __init__(self, signal: str, family: str, values: Sequence[str]) -> None:
        self.family = family
        self.values = tuple(values)
        super().__init__(signal, f"family {family}: label values {self.values} reported twice")


class InvalidValue(MeasurementError):
    """A value is not a finite, non-negative number where one is required."""

    reason = "invalid_value"

    def __init__(self, signal: str, family: str, value: object) -> None:
        self.family = family
        self.value = value
        super().__init__(signal, f"family {family}: value {value!r} is not a finite non-negative number")


class ContractViolation(MeasurementError):
    """The data does not honour the contract (a NULL where NOT NULL, a bad id, ...)."""

    reason = "contract_violation"

    def __init__(self, signal: str, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(signal, f"{where}: {problem}")


class InvalidTenantSlug(MeasurementError):
    """A tenant slug that cannot name a schema (too long once prefixed)."""

    reason = "invalid_tenant"

    def __init__(self, signal: str, problem: str) -> None:
        self.problem = problem
        # The slug itself is not repeated: it may reach logs read by many.
        super().__init__(signal, f"a tenant slug cannot name a schema: {problem}")


class SourceNotConfigured(MeasurementError):
    reason = "not_configured"

    def __init__(self, signal: str, source: str) -> None:
        self.source = source
        super().__init__(signal, f"no {source} is configured")
