"""Typed errors. Each carries its context and builds its own message.

A MeasurementError makes its signal unmeasured for one TTL; the mapping from
any exception to that outcome lives in exporter.outcomes. Each error names its
`Reason` (exporter.reasons). The drivers' exceptions are translated into these
next to each source (exporter.sources.postgres.errors, exporter.sources.redis.errors).
"""

from __future__ import annotations

from collections.abc import Sequence

from exporter.flags import flag_of, setting
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
        super().__init__(f"cannot listen on {address}: {problem} (set another with {flag_of('listen_address')})")


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


class ClusterChanged(SourceError):
    """A Redis Cluster node redirected a command (MOVED; an ASK where it is not
    followed) or asked for it again (TRYAGAIN): the slot map the measurement was
    routed by is no longer the cluster's, so none of its replies is kept."""

    reason = Reason.CLUSTER_CHANGED

    def __init__(self, node: str, command: str, redirect: str) -> None:
        self.node = node
        self.command = command
        self.redirect = redirect
        super().__init__(
            f"node {node} answered {redirect} to {command}: a slot moved since the slot map was read;"
            " it is read again for the next measurement"
        )


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


class DatabaseUnreachable(SourceError):
    """No host of the PostgreSQL URL gave a session of the kind it asks for;
    says, host by host, why (never the password: hosts are named as parsed)."""

    reason = Reason.CONNECTION_ERROR

    def __init__(self, wanted: str, attempts: Sequence[tuple[str, str]]) -> None:
        self.wanted = wanted
        self.attempts = tuple(attempts)
        tried = "; ".join(f"{host}: {problem}" for host, problem in self.attempts) or "no host was tried"
        kind = "" if wanted == "any" else f" with target_session_attrs={wanted}"
        super().__init__(f"no host gave a session{kind}: {tried}")


class DatabaseRefused(SourceError):
    """PostgreSQL answered with an error: its SQLSTATE, its message, and the reason
    the SQLSTATE means (exporter.sources.postgres.errors)."""

    def __init__(self, reason: Reason, sqlstate: str, words: str) -> None:
        self.reason = reason
        self.sqlstate = sqlstate
        self.words = words  # the server's error on one line (exporter.sources.postgres.errors.server_words)
        super().__init__(words)


class RowSecurityRefused(DatabaseRefused):
    """Row-level security would filter a table the exporter reads: with
    row_security off (exporter.sources.postgres.transaction) PostgreSQL refuses the
    statement instead of counting the rows a policy leaves."""

    def __init__(self, table: str, sqlstate: str, words: str) -> None:
        self.table = table
        super().__init__(Reason.ROW_SECURITY, sqlstate, words)

    def __str__(self) -> str:
        return (
            f"row-level security would filter the rows of table {quoted(self.table)} for the exporter's role:"
            f" nothing is counted rather than the rows a policy leaves ({self.words})"
        )


class DatabaseConnectionBroken(SourceError):
    """The connection to PostgreSQL failed under a statement (closed, reset, or left
    in a protocol state the client refuses to use); it is replaced."""

    reason = Reason.CONNECTION_ERROR

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"connection in an unusable state: {problem}")


class ArgumentDoesNotFit(SourceError):
    """A value bound to a statement does not fit its column's type (text for an integer, ...)."""

    reason = Reason.CONTRACT_VIOLATION

    def __init__(self, problem: str) -> None:
        self.problem = problem
        super().__init__(f"a value does not fit its column: {problem}")


class SessionNotKept(SourceError):
    """In session pool mode, a connection's server session did not last from one
    of its transactions to the next: a transaction pooler is in between."""

    reason = Reason.TRANSACTION_POOLER

    def __init__(self, evidence: str) -> None:
        self.evidence = evidence
        super().__init__(
            f"the server session of a connection changed between two of its transactions ({evidence}):"
            f" a transaction pooler is in front of the database; set {setting('pool_mode', 'transaction')}"
        )


class InvalidRedisUrl(ConfigError):
    """The Redis URL asks for something the exporter refuses; names the parameter when
    one is at fault, never its value when that may be a secret, never the password."""

    def __init__(self, setting: str, shown_url: str, problem: str, parameter: str | None = None) -> None:
        self.shown_url = shown_url
        self.parameter = parameter
        super().__init__(setting, f"{shown_url}: {problem}")


class RedisPermissionDenied(SourceError):
    """NOPERM: the ACL user may not run a command, or not on a key."""

    reason = Reason.PERMISSION_DENIED

    def __init__(self, command: str, key: str | None, server_message: str) -> None:
        self.command = command
        self.key = key
        self.server_message = server_message
        on = f" on key {key!r}" if key is not None else ""
        super().__init__(f"Redis refused {command}{on} to the exporter's ACL user: NOPERM {server_message}")


class RedisGroupMissing(SourceError):
    """NOGROUP: a consumer group the registry declares does not exist on its stream."""

    reason = Reason.MISSING_GROUP

    def __init__(self, stream: str, group: str) -> None:
        self.stream = stream
        self.group = group
        super().__init__(f"stream {stream!r} has no consumer group {group!r} (or the stream does not exist)")


class RedisClusterRedirect(SourceError):
    """MOVED or ASK on a client that does not follow them: the URL names one node of a cluster."""

    reason = Reason.CLUSTER_REDIRECT

    def __init__(self, key: str | None, slot: int, node: str) -> None:
        self.key = key
        self.slot = slot
        self.node = node
        which = f"key {key!r}" if key is not None else "a key"
        super().__init__(
            f"the server is a node of a Redis Cluster: {which} (slot {slot}) is served by {node};"
            " use a redis+cluster:// URL (rediss+cluster:// with TLS)"
        )


class RedisUnavailable(SourceError):
    """The server answered with a state in which it cannot serve the read, and the
    reason its code means (exporter.sources.redis.errors.UNAVAILABLE_CODES)."""

    def __init__(self, code: str, server_message: str, reason: Reason) -> None:
        self.code = code
        self.server_message = server_message
        self.reason = reason
        super().__init__(f"Redis answered {code} {server_message}")


class SentinelServiceUnknown(SourceError):
    """The sentinels answered, and none of them monitors the URL's service name."""

    reason = Reason.UNKNOWN_SENTINEL_SERVICE

    def __init__(self, service: str, known: Sequence[str]) -> None:
        self.service = service
        self.known = tuple(known)
        names = ", ".join(repr(name) for name in self.known) or "none"
        super().__init__(f"no sentinel monitors a service named {service!r} (they monitor: {names})")


class SentinelNoMaster(SourceError):
    """The sentinels monitor the service but name no master up: down, or a failover in progress."""

    reason = Reason.MASTER_DOWN

    def __init__(self, service: str, states: Sequence[str]) -> None:
        self.service = service
        self.states = tuple(states)
        seen = "; ".join(self.states) or "no sentinel answered with a state"
        super().__init__(f"the sentinels name no master up for service {service!r} ({seen})")


class SentinelsDisagree(SourceError):
    """The sentinels that answered name different masters for the service, none by a majority of them."""

    reason = Reason.SENTINELS_DISAGREE

    def __init__(self, service: str, votes: Sequence[tuple[str, str]]) -> None:
        """`votes`: each sentinel and what it said ("names HOST:PORT", "did not answer (...)")."""
        self.service = service
        self.votes = tuple(votes)
        named = "; ".join(f"{sentinel} {answer}" for sentinel, answer in self.votes)
        super().__init__(
            f"the sentinels disagree on the master of service {service!r}, none named by a majority"
            f" ({named}): nothing is read until a majority agrees"
        )


class SentinelsTooFew(SourceError):
    """One master named, by fewer than a strict majority of the sentinels the URL
    configures, the others not answering: it would be trusted on too few words."""

    reason = Reason.SENTINELS_TOO_FEW

    def __init__(self, service: str, configured: int, answers: Sequence[tuple[str, str]]) -> None:
        self.service = service
        self.configured = configured
        self.answers = tuple(answers)
        said = "; ".join(f"{sentinel} {answer}" for sentinel, answer in self.answers)
        super().__init__(
            f"too few sentinels answered to trust a master of service {service!r}: a strict majority of the"
            f" {configured} configured must name it ({said}); nothing is read until they do"
        )


class NotACluster(SourceError):
    """A redis+cluster:// URL names servers that are not Redis Cluster nodes."""

    reason = Reason.NOT_A_CLUSTER

    def __init__(self, server_message: str) -> None:
        self.server_message = server_message
        super().__init__(
            f"the Redis URL is redis+cluster:// but the server is not a cluster node ({server_message}):"
            " use redis:// (or redis+sentinel://) for it"
        )


class RedisTooOld(SourceError):
    """The server lacks a field the exporter reads (XINFO GROUPS `lag` is Redis 7.0+)."""

    reason = Reason.REDIS_TOO_OLD

    def __init__(self, command: str, missing: str, version: str) -> None:
        self.command = command
        self.missing = missing
        self.version = version
        super().__init__(f"{command} answered without {missing!r}: the streams signal needs Redis {version} or later")


class SentinelsUnreachable(SourceError):
    """No sentinel of the URL answered; says, sentinel by sentinel, why."""

    reason = Reason.CONNECTION_ERROR
    summary = "no sentinel answered"

    def __init__(self, service: str, attempts: Sequence[tuple[str, str]]) -> None:
        self.service = service
        self.attempts = tuple(attempts)
        tried = "; ".join(f"{node}: {problem}" for node, problem in self.attempts) or "no sentinel was tried"
        super().__init__(f"{self.summary} for service {service!r}: {tried}")


class SentinelsRefusedCredentials(SentinelsUnreachable):
    """Every sentinel refused the exporter's credentials for them (?sentinel_username=, ?sentinel_password=)."""

    reason = Reason.AUTHENTICATION_FAILED
    summary = "every sentinel refused the credentials given for the sentinels"


class ConnectNotGranted(SourceError):
    """The server refused the role a session on the database: no CONNECT privilege."""

    reason = Reason.CONNECT_NOT_GRANTED

    def __init__(self, role: str, database: str) -> None:
        self.role = role
        self.database = database
        super().__init__(f"role {role!r} may not connect to database {database!r} (no CONNECT privilege)")


class IdentityOutsideRule(SourceError):
    """The database answered an identity the registry's rule refuses (a NULL, a
    value of another shape): it is not published, and the rules cannot count it."""

    reason = Reason.UNREGISTERED_VALUE

    def __init__(self, value: object, rule: str) -> None:
        self.value = value
        self.rule = rule
        super().__init__(f"database identity {value!r} does not match the registered rule {rule}")
