"""Typed errors. Each carries its context and builds its own message.

A MeasurementError makes its signal unmeasured for one TTL; the mapping from
any exception to that outcome lives in exporter.outcomes. Each error names its
`Reason` (exporter.reasons). Each source's own errors, and the translation of its
driver's exceptions into them, live next to it (exporter.sources.postgres.errors,
exporter.sources.redis.errors), on the bases declared here.
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.options import flag_of
from exporter.printable import printable, quoted
from exporter.reasons import Reason

MAX_MESSAGE = 400


def _capped(text: str) -> str:
    return text if len(text) <= MAX_MESSAGE else text[: MAX_MESSAGE - 3] + "..."


class ConfigError(Exception):
    """A setting is invalid; the process exits 2 before serving anything."""

    def __init__(self, setting: str, problem: str) -> None:
        self.setting = setting
        self.problem = problem
        # A configured value can be long or hostile: the message stays one short line.
        super().__init__(printable(_capped(f"invalid setting {setting}: {problem}")))


class InvalidSettings(ConfigError):
    """Every invalid setting found at once, one line each (`setting` and `problem`: the first)."""

    def __init__(self, errors: tuple[ConfigError, ...]) -> None:
        self.errors = errors
        super().__init__(errors[0].setting, errors[0].problem)
        self.args = ("\n".join(str(error) for error in errors),)

    def __str__(self) -> str:
        return "\n".join(str(error) for error in self.errors)


class ListenError(Exception):
    """The listen address cannot be bound; the process exits 2 before serving anything."""

    def __init__(self, address: str, problem: str) -> None:
        self.address = address
        self.problem = problem
        super().__init__(f"cannot listen on {address}: {problem} (set another with {flag_of('web_listen_address')})")


class MeasurementError(Exception):
    """A signal could not be measured completely."""

    reason: Reason = Reason.INTERNAL_ERROR  # every raised subclass names its own

    # A detail reaches a log line on every refresh and diagnose's terminal: bounded.
    MAX_DETAIL = 2000

    def __init__(self, signal: str, detail: str) -> None:
        if len(detail) > self.MAX_DETAIL:
            detail = f"{detail[: self.MAX_DETAIL]}... ({len(detail):,} characters)"
        self.signal = signal
        self.detail = detail
        super().__init__(f"signal {signal}: {detail}")


class UnregisteredFamily(MeasurementError):
    reason = Reason.UNREGISTERED_FAMILY

    def __init__(self, signal: str, family: str) -> None:
        self.family = family
        super().__init__(signal, f"family {family!r} is not registered for this signal")


class UnregisteredLabelValue(MeasurementError):
    """Label values outside the registry: every combination one measurement met, with
    the value it carried, the largest first; the first SHOWN of them named."""

    reason = Reason.UNREGISTERED_VALUE
    SHOWN = 20

    def __init__(
        self, signal: str, family: str, labels: Sequence[str], found: Sequence[tuple[Sequence[object], float]]
    ) -> None:
        self.family = family
        self.labels = tuple(labels)
        self.found = tuple(sorted(((tuple(values), count) for values, count in found), key=lambda item: -item[1]))
        self.values = self.found[0][0] if self.found else ()
        named = "; ".join(
            ", ".join(f"{label}={quoted(value)}" for label, value in zip(labels, values, strict=False)) + f": {count:g}"
            for values, count in self.found[: self.SHOWN]
        )
        more = f"; {len(self.found) - self.SHOWN:,} more" if len(self.found) > self.SHOWN else ""
        combinations = "one label value combination" if len(self.found) == 1 else f"{len(self.found):,} combinations"
        super().__init__(signal, f"family {family}: {combinations} outside the registry ({named}{more})")


class DuplicateSample(MeasurementError):
    reason = Reason.DUPLICATE_SAMPLE

    def __init__(self, signal: str, family: str, values: Sequence[str]) -> None:
        self.family = family
        self.values = tuple(values)
        shown = ", ".join(quoted(value) for value in self.values)
        super().__init__(signal, f"family {family}: label values ({shown}) reported twice")


class InvalidValue(MeasurementError):
    """A value is not a finite, non-negative number where one is required."""

    reason = Reason.INVALID_VALUE

    def __init__(self, signal: str, family: str, value: object) -> None:
        self.family = family
        self.value = value
        super().__init__(signal, f"family {family}: value {quoted(value)} is not a finite non-negative number")


class ContractViolation(MeasurementError):
    """The data does not honour the contract (a NULL where NOT NULL, a bad id, ...)."""

    reason = Reason.CONTRACT_VIOLATION

    def __init__(self, signal: str, where: str, problem: str) -> None:
        self.where = where
        self.problem = problem
        super().__init__(signal, f"{where}: {problem}")


class ColumnTypeMismatch(ContractViolation):
    """A column the contract types is of another type, as the server describes the
    statement's result (or refuses the time expression on it): its values are not read."""

    def __init__(self, signal: str, column: str, found: str, expected: Sequence[str]) -> None:
        self.column = column
        self.found = found
        self.expected = tuple(expected)
        stated = " or ".join(part for part in (", ".join(self.expected[:-1]), self.expected[-1]) if part)
        super().__init__(signal, column, f"column of type {found}, where the contract states {stated}")


class InvalidTenantSlug(MeasurementError):
    """A tenant slug that cannot name a schema (too long once prefixed)."""

    reason = Reason.INVALID_TENANT

    def __init__(self, signal: str, problem: str) -> None:
        self.problem = problem
        # The slug itself is not repeated: it may reach logs read by many.
        super().__init__(signal, f"a tenant slug cannot name a schema: {problem}")


class SourceNotConfigured(MeasurementError):
    reason = Reason.NOT_CONFIGURED

    def __init__(self, signal: str, source: str) -> None:
        self.source = source
        super().__init__(signal, f"no {source} is configured")


class TenantListUnreadable(MeasurementError):
    """public.tenants cannot be read (missing, or no SELECT on it): no tenant signal can be measured."""

    reason = Reason.TENANT_LIST_UNREADABLE

    def __init__(self, sqlstate: str, problem: str) -> None:
        self.sqlstate = sqlstate
        self.problem = problem
        super().__init__("tenants", f"cannot read the tenant list public.tenants: {sqlstate}: {problem}")


class ReplicaStale(MeasurementError):
    """The server read is a replica (or a standby) that may have missed its master's
    writes for longer than the bound: its values are not presented as current."""

    reason = Reason.REPLICA_STALE

    def __init__(self, signal: str, server: str, state: str, bound: float, setting: str) -> None:
        self.server = server
        self.state = state
        self.bound = bound
        self.setting = setting
        super().__init__(signal, f"{server}: {state}, past the {bound:g} s bound ({setting})")


class HotStandby(MeasurementError):
    """The server read is a hot standby: a signal of the primary's own sessions
    (its advisory locks) cannot be read there, and a 0 read would be a lie."""

    reason = Reason.HOT_STANDBY

    def __init__(self, signal: str) -> None:
        super().__init__(
            signal, "the server read is a hot standby: the primary's advisory locks are not in its pg_locks"
        )


class SourceError(Exception):
    """A source could not serve a measurement, for a reason it knows: raised where the
    client's own exception is caught, so that nothing downstream parses a server's words."""

    reason: Reason = Reason.INTERNAL_ERROR  # every raised subclass names its own


class BacklogConfigError(ConfigError):
    """The backlogs file declares something the exporter refuses; names the backlog and the key."""

    def __init__(self, setting: str, backlog: str | None, key: str | None, problem: str) -> None:
        self.backlog = backlog
        self.key = key
        where = ", ".join(
            part
            for part in (f"backlog {backlog!r}" if backlog is not None else "", f"key {key!r}" if key else "")
            if part
        )
        super().__init__(setting, f"{where}: {problem}" if where else problem)


class Closed(SourceError):
    """A long-lived object (a cache, a source, the replay-lag reader) used after
    its close: a defect of the exporter's shutdown, never a new connection."""

    reason = Reason.INTERNAL_ERROR

    def __init__(self, what: str) -> None:
        self.what = what
        super().__init__(f"{what} is closed")


class IdentityOutsideRule(SourceError):
    """The database answered an identity the registry's rule refuses (a NULL, a
    value of another shape): it is not published, and the rules cannot count it."""

    reason = Reason.UNREGISTERED_VALUE

    def __init__(self, value: object, rule: str) -> None:
        self.value = value
        self.rule = rule
        super().__init__(f"database identity {value!r} does not match the registered rule {rule}")
