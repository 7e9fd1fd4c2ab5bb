"""The redis-py clients for each kind of Redis a URL can name (exporter.sources.redis.url):
one server, a master behind sentinels, or a cluster.

Every client is built with the same options: the exporter's timeouts, no
retry (the cache's TTL is the retry), RESP2, replies as bytes (a payload is
never decoded; the sentinels' replies, addresses and names, are text), the exporter's
client name, and the TLS flags when the URL asks for TLS. None connects here.
"""

from __future__ import annotations

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Any

import redis.asyncio
import redis.exceptions
from redis.asyncio.cluster import ClusterNode, RedisCluster
from redis.asyncio.retry import Retry
from redis.asyncio.sentinel import MasterNotFoundError, Sentinel, SentinelConnectionPool
from redis.backoff import NoBackoff

from exporter.sources.redis.errors import (
    SentinelNoMaster,
    SentinelsDisagree,
    SentinelServiceUnknown,
    SentinelsRefusedCredentials,
    SentinelsTooFew,
    SentinelsUnreachable,
)
from exporter.sources.redis.tls import RedisTls
from exporter.sources.redis.url import RedisKind, RedisTarget
from exporter.timeouts import Timeouts

RedisClient = redis.asyncio.Redis | RedisCluster
# Of which sentinels a master needs a strict majority (--redis.sentinel-majority).
MAJORITY_OF_CONFIGURED = "configured"  # those the URL names: the default
MAJORITY_OF_ANSWERING = "answering"  # those that answer: availability over certainty
SENTINEL_MAJORITIES = (MAJORITY_OF_CONFIGURED, MAJORITY_OF_ANSWERING)


def connection_options(client_name: str, timeouts: Timeouts, tls: RedisTls | None) -> dict[str, Any]:
    """The options of every connection the exporter opens to a Redis server or sentinel."""
    options: dict[str, Any] = {
        "socket_timeout": timeouts.deadline,
        "socket_connect_timeout": timeouts.connect,
        # Never retried: a failure is reported, and the next measurement tries again.
        "retry": Retry(NoBackoff(), 0),
        # RESP2: under RESP3, recent clients turn maintenance notifications on, which
        # skips the check that replaces a pooled connection the server has closed; a
        # Redis restart between two measurements would then fail the next one.
        "protocol": 2,
        # Bytes: a stream's payload or a consumer's name need not be UTF-8.
        "decode_responses": False,
        "client_name": client_name,
    }
    if tls is not None:
        options.update(ssl=True, **tls.client_options())
    return options


def _sentinel_name(node: redis.asyncio.Redis) -> str:
    kwargs = node.connection_pool.connection_kwargs
    return f"sentinel {kwargs.get('host')}:{kwargs.get('port')}"


class AgreeingSentinel(Sentinel):
    """Sentinels asked all at once, whose master is the one a strict majority of
    the sentinels configured in the URL name (by default), or of those that
    answer (`answering`, an explicit choice: docs/connecting.md). A sentinel
    frozen or down casts no vote; a sentinel naming another server under the
    same service name (misconfigured, or the minority side of a partition) is
    outvoted; two masters named with neither by a majority is SentinelsDisagree,
    and one named by too few because the others did not answer is
    SentinelsTooFew, each naming every sentinel's answer. A sentinel that sees
    the master down votes for no master; one master named, but not by a majority
    of those that answered, is no master found (a failover in progress)."""

    def __init__(self, sentinels: list[tuple[str, int]], *, majority_of: str, **options: Any) -> None:
        super().__init__(sentinels, **options)  # type: ignore[no-untyped-call]
        self.majority_of = majority_of

    async def discover_master(self, service_name: str) -> tuple[str, int]:
        replies = await asyncio.gather(*(node.sentinel_masters() for node in self.sentinels), return_exceptions=True)
        votes: list[tuple[str, tuple[str, int] | None]] = []
        unanswered: list[tuple[str, str]] = []
        for node, reply in zip(self.sentinels, replies, strict=True):
            if isinstance(reply, redis.exceptions.ConnectionError | redis.exceptions.TimeoutError):
                unanswered.append((_sentinel_name(node), f"did not answer ({type(reply).__name__}: {reply})"))
                continue
            if isinstance(reply, BaseException):
                raise reply
            state = reply.get(service_name) if isinstance(reply, dict) else None
            if state is None:
                continue  # it does not monitor the service: no vote
            up = self.check_master_state(state, service_name)
            votes.append((_sentinel_name(node), (str(state["ip"]), int(state["port"])) if up else None))
        electorate = len(self.sentinels) if self.majority_of == MAJORITY_OF_CONFIGURED else len(votes)
        named = Counter(address for _, address in votes if address is not None)
        answers = [
            (where, f"names {address[0]}:{address[1]}" if address else "names no master up") for where, address in votes
        ]
        for address, count in named.items():
            if 2 * count > electorate:
                return address
        if len(named) > 1:
            raise SentinelsDisagree(service_name, [*answers, *unanswered])
        if named and 2 * (max(named.values()) + len(unanswered)) > electorate and 2 * len(votes) <= electorate:
            # A majority only if those that did not answer agreed: nobody knows.
            raise SentinelsTooFew(service_name, len(self.sentinels), [*answers, *unanswered])
        errors = f": {', '.join(f'{where} {problem}' for where, problem in unanswered)}" if unanswered else ""
        raise MasterNotFoundError(f"No master named by a majority of the sentinels for {service_name!r}{errors}")


@dataclass
class SentinelClients:
    """The sentinels of a redis+sentinel:// URL and the client of the master they name."""

    sentinel: Sentinel
    service: str
    master: redis.asyncio.Redis

    async def follow_master(self) -> None:
        """Ask the sentinels which server is the master now. When it changed, the
        pool drops its idle connections, so the next command reaches the new one:
        a demoted master is never read as if it were still the master."""
        pool = self.master.connection_pool
        assert isinstance(pool, SentinelConnectionPool)
        try:
            await pool.get_master_address()  # type: ignore[no-untyped-call]
        except redis.exceptions.ConnectionError as exc:  # MasterNotFoundError among them
            raise await self.why_no_master() from exc

    async def why_no_master(self) -> Exception:
        """What the sentinels say about the service, once no master was found."""
        attempts: list[tuple[str, str]] = []
        refused = 0
        known: set[str] = set()
        states: list[str] = []
        for node in self.sentinel.sentinels:
            kwargs = node.connection_pool.connection_kwargs
            where = f"sentinel {kwargs.get('host')}:{kwargs.get('port')}"
            try:
                reply = await node.sentinel_masters()
            except redis.exceptions.RedisError as exc:
                attempts.append((where, f"{type(exc).__name__}: {exc}"))
                refused += isinstance(exc, redis.exceptions.AuthenticationError)
                continue
            # A dict by service name under RESP2, which the exporter speaks.
            masters: dict[str, dict[str, Any]] = reply if isinstance(reply, dict) else {}
            known.update(masters)
            state = masters.get(self.service)
            if state is not None:
                states.append(f"{where} sees {state.get('ip')}:{state.get('port')} as {state.get('flags')}")
        if states:
            return SentinelNoMaster(self.service, states)
        if known or len(attempts) < len(self.sentinel.sentinels):
            return SentinelServiceUnknown(self.service, sorted(known))
        if refused == len(attempts):
            return SentinelsRefusedCredentials(self.service, attempts)
        return SentinelsUnreachable(self.service, attempts)

    def master_address(self) -> tuple[str, int] | None:
        """The master the sentinels named at the last follow_master."""
        pool = self.master.connection_pool
        assert isinstance(pool, SentinelConnectionPool)
        address: tuple[str, int] | None = pool.master_address
        return address

    async def aclose(self) -> None:
        try:
            await self.master.aclose()
        finally:
            await self.sentinel.aclose()


@dataclass
class RedisClients:
    """The client the source reads through, and what must happen around it."""

    client: RedisClient
    sentinels: SentinelClients | None = None

    async def before_read(self) -> None:
        if self.sentinels is not None:
            await self.sentinels.follow_master()

    def server(self) -> str:
        """The server the reads go to, as host:port (or the socket's path)."""
        if self.sentinels is not None:
            address = self.sentinels.master_address()
            return f"{address[0]}:{address[1]}" if address else "?"
        kwargs = self.client.connection_pool.connection_kwargs if isinstance(self.client, redis.asyncio.Redis) else {}
        return f"{kwargs.get('host', kwargs.get('path', '?'))}:{kwargs.get('port', '')}".rstrip(":")

    async def where_reads_go(self) -> str | None:
        """Where the next read goes, when it takes more than the URL to know (Sentinel)."""
        if self.sentinels is None:
            return None
        await self.sentinels.follow_master()
        address = self.sentinels.master_address()
        named = f"{address[0]}:{address[1]}" if address else "none"
        return f"the sentinels name master {named} for service {self.sentinels.service!r}"

    async def aclose(self) -> None:
        if self.sentinels is not None:
            await self.sentinels.aclose()
        else:
            await self.client.aclose()


def build_clients(
    target: RedisTarget,
    tls: RedisTls,
    client_name: str,
    timeouts: Timeouts,
    sentinel_majority: str = MAJORITY_OF_CONFIGURED,
) -> RedisClients:
    """The client for `target`; it connects at its first command."""
    options = connection_options(client_name, timeouts, tls if target.tls else None)
    credentials: dict[str, Any] = {"username": target.username, "password": target.password}
    if target.kind is RedisKind.SENTINEL:
        assert target.service_name is not None  # the URL parser requires it
        sentinel_options = {
            **options,
            "socket_timeout": timeouts.per_sentinel(len(target.nodes)),
            "socket_connect_timeout": timeouts.per_sentinel(len(target.nodes)),
            "decode_responses": True,  # a sentinel answers with addresses and service names
            "username": target.sentinel_username,
            "password": target.sentinel_password,
        }
        sentinel = AgreeingSentinel(list(target.nodes), majority_of=sentinel_majority, sentinel_kwargs=sentinel_options)
        master = sentinel.master_for(target.service_name, db=target.db, **credentials, **options)
        return RedisClients(master, SentinelClients(sentinel, target.service_name, master))
    if target.kind is RedisKind.CLUSTER:
        retry = options.pop("retry")
        cluster = RedisCluster(
            startup_nodes=[ClusterNode(host, port) for host, port in target.nodes],
            retry=retry,
            **credentials,
            **options,
        )
        return RedisClients(cluster)
    if target.socket_path is not None:
        return RedisClients(
            redis.asyncio.Redis(unix_socket_path=target.socket_path, db=target.db, **credentials, **options)
        )
    ((host, port),) = target.nodes
    return RedisClients(redis.asyncio.Redis(host=host, port=port, db=target.db, **credentials, **options))
