"""End to end, a sharded platform: two real PostgreSQL clusters holding different
tenants, two exporter replicas each, a shared Redis, and a real Prometheus that
scrapes them with an `orpycamcp_cluster` target label and a `pod` label of their own (as
Kubernetes service discovery labels replicas) and evaluates the shipped rules
(shortened). The replicas of a cluster count once.

The platform totals equal the sums over both clusters' fixtures; when one
cluster's database stops, the totals disappear (never a partial sum) while the
other cluster's series stay, and OrpycamcpPlatformTotalUnknown names the
cluster; when it is back, the totals return.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest
import redis

from devkit.process import RunningProcess, exporter_process, http_get
from devkit.servers import PostgresServer, RedisServer, postgres_server
from registry.values import ARTIFACTS, ORIGIN_GROUPS, PHASES, STREAM_GROUPS
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.stack import Targets, prometheus, query, wait_for
from tests.platform import Platform, create_platform

NOW = datetime.now(UTC).replace(microsecond=0)


@dataclass(frozen=True)
class DeadLetter:
    slug: str
    event_id: str
    origin_group: str
    status: str
    created_at: datetime


@dataclass(frozen=True)
class Retry:
    slug: str
    artifact_id: str
    artifact: str
    phase: str
    status: str


@dataclass(frozen=True)
class Shard:
    """What one cluster's database holds: its own tenants and their rows."""

    cluster: str
    tenants: tuple[str, ...]
    dead_letters: tuple[DeadLetter, ...]
    retries: tuple[Retry, ...]


EAST = Shard(
    "east",
    ("acme", "globex"),
    (
        DeadLetter("acme", "e1", "signature-service", "pending", NOW - timedelta(hours=5)),
        DeadLetter("acme", "e2", "signature-service", "pending", NOW - timedelta(hours=1)),
        DeadLetter("globex", "e3", "workflow-service", "pending", NOW - timedelta(hours=2)),
        DeadLetter("globex", "e4", "workflow-service", "resolved", NOW - timedelta(days=9)),
    ),
    (
        Retry("acme", "d1", "document", "sealing", "exhausted"),
        Retry("globex", "d2", "document", "sealing", "exhausted"),
        Retry("globex", "d3", "signature", "fixity", "retrying"),
    ),
)
WEST = Shard(
    "west",
    ("initech", "umbrella", "hooli"),
    (
        DeadLetter("initech", "w1", "signature-service", "pending", NOW - timedelta(hours=7)),
        DeadLetter("umbrella", "w2", "notification-service", "pending", NOW - timedelta(minutes=30)),
        DeadLetter("hooli", "w3", "workflow-service", "discarded", NOW - timedelta(days=3)),
    ),
    (
        Retry("initech", "x1", "document", "sealing", "exhausted"),
        Retry("umbrella", "x2", "attachment", "transfer", "exhausted"),
        Retry("hooli", "x3", "attachment", "transfer", "exhausted"),
    ),
)
SHARDS = (EAST, WEST)
# Exporter replicas per cluster, each a target with a `pod` label of its own.
REPLICAS = 2


def pending(shards: tuple[Shard, ...]) -> dict[str, float]:
    counts = dict.fromkeys(ORIGIN_GROUPS, 0.0)
    for shard in shards:
        for letter in shard.dead_letters:
            if letter.status == "pending":
                counts[letter.origin_group] += 1
    return counts


def oldest(shards: tuple[Shard, ...]) -> dict[str, float]:
    found: dict[str, float] = {}
    for shard in shards:
        for letter in shard.dead_letters:
            if letter.status == "pending":
                stamp = letter.created_at.timestamp()
                found[letter.origin_group] = min(found.get(letter.origin_group, stamp), stamp)
    return found


def exhausted(shards: tuple[Shard, ...]) -> dict[tuple[str, str], float]:
    counts = {(artifact, phase): 0.0 for artifact in ARTIFACTS for phase in PHASES}
    for shard in shards:
        for retry in shard.retries:
            if retry.status == "exhausted":
                counts[(retry.artifact, retry.phase)] += 1
    return counts


async def load(platform: Platform, shard: Shard) -> None:
    for slug in shard.tenants:
        await platform.add_tenant(slug)
    for letter in shard.dead_letters:
        await platform.add_dead_letter(
            letter.slug, letter.event_id, letter.origin_group, letter.status, letter.created_at
        )
    for retry in shard.retries:
        await platform.add_retry(retry.slug, retry.artifact_id, retry.artifact, retry.phase, retry.status)


@contextmanager
def two_shards(pg_server: PostgresServer) -> Iterator[tuple[Platform, Platform, PostgresServer]]:
    """East on the session's server, west on a server of its own, each loaded with its shard."""
    with postgres_server() as west_server:
        east = asyncio.run(create_platform(pg_server))
        west = asyncio.run(create_platform(west_server))
        asyncio.run(load(east, EAST))
        asyncio.run(load(west, WEST))
        yield east, west, west_server


def shard_exporter_args(platform: Platform, redis_url: str) -> list[str]:
    """One shard's exporter: its own database, the platform's one Redis, refreshed every second."""
    return ["--database.url", platform.exporter_url, "--redis.url", redis_url, "--ttl", "1", "--deadline", "0.8"]


def load_streams(url: str) -> None:
    """The platform's one event bus: one message delivered and never acknowledged."""
    client = redis.Redis.from_url(url, decode_responses=True)
    try:
        client.flushall()
        for stream, group in STREAM_GROUPS:
            client.xgroup_create(stream, group, id="$", mkstream=True)
        client.xadd("orpycamcp.document.events", {"event": "document.signed"})
        client.xreadgroup("signature-service", "worker-1", {"orpycamcp.document.events": ">"})
    finally:
        client.close()


def by_labels(prom: RunningProcess, expr: str, *labels: str) -> dict[Any, float]:
    """The instant vector of `expr`, keyed by the values of `labels` (one label: the value itself)."""
    result: dict[Any, float] = {}
    for sample in query(prom, expr):
        key = tuple(sample["metric"].get(label, "") for label in labels)
        result[key[0] if len(key) == 1 else key] = float(sample["value"][1])
    return result


@dataclass
class Totals:
    pending: dict[str, float]
    oldest: dict[str, float]
    exhausted: dict[tuple[str, str], float]
    stream_pending: dict[tuple[str, str], float]


def series_count(prom: RunningProcess, expr: str) -> int:
    return len(query(prom, expr))


def totals(prom: RunningProcess) -> Totals:
    return Totals(
        by_labels(prom, "orpycamcp:dlq_pending_events:total", "origin_group"),
        by_labels(prom, "orpycamcp:dlq_oldest_pending_timestamp_seconds:total", "origin_group"),
        by_labels(prom, "orpycamcp:preservation_exhausted_artifacts:total", "artifact", "phase"),
        by_labels(prom, "orpycamcp:stream_pending_messages:total", "stream", "group"),
    )


EXPECTED_STREAM_PENDING = {
    (stream, group): 1.0 if (stream, group) == ("orpycamcp.document.events", "signature-service") else 0.0
    for stream, group in STREAM_GROUPS
}


def complete(current: Totals) -> bool:
    return (
        current.pending == pending(SHARDS)
        and current.oldest == oldest(SHARDS)
        and current.exhausted == exhausted(SHARDS)
        and current.stream_pending == EXPECTED_STREAM_PENDING
    )


def show(current: Totals) -> str:
    nonzero = {key: value for key, value in current.exhausted.items() if value}
    return (
        f"dlq pending {current.pending}; dlq oldest {current.oldest}; "
        f"preservation exhausted (non-zero of {len(current.exhausted)}) {nonzero}; "
        f"stream pending {current.stream_pending}"
    )


@dataclass(frozen=True)
class OutageView:
    """What the sharded test reads while one cluster's database is down."""

    pending: dict[str, float]
    oldest: dict[str, float]
    exhausted: dict[tuple[str, str], float]
    stream_pending: dict[tuple[str, str], float]
    measured: dict[tuple[str, str], float]
    east_pending: dict[str, float]
    west_pending: dict[str, float]
    dlq_clusters_measured: dict[str, float]


def outage_view(prom: RunningProcess) -> OutageView:
    current = totals(prom)
    return OutageView(
        pending=current.pending,
        oldest=current.oldest,
        exhausted=current.exhausted,
        stream_pending=current.stream_pending,
        measured=by_labels(prom, 'orpycamcp_signal_measured{signal=~"dlq|preservation"}', "pod", "signal"),
        east_pending=by_labels(prom, 'orpycamcp:dlq_pending_events:max{orpycamcp_cluster="east"}', "origin_group"),
        west_pending=by_labels(prom, 'orpycamcp:dlq_pending_events:max{orpycamcp_cluster="west"}', "origin_group"),
        dlq_clusters_measured=by_labels(prom, 'orpycamcp:signal_measured_clusters:count{signal="dlq"}', "signal"),
    )


def never_partial(prom: RunningProcess, start: float, end: float) -> list[str]:
    """Every sample a total recorded over the run that differs from the complete sum (none expected)."""
    wrong: list[str] = []
    expected: dict[str, dict[Any, float]] = {
        "orpycamcp:dlq_pending_events:total": dict(pending(SHARDS)),
        "orpycamcp:dlq_oldest_pending_timestamp_seconds:total": dict(oldest(SHARDS)),
    }
    for expr, values in expected.items():
        params: dict[str, str | float] = {"query": expr, "start": start, "end": end, "step": 1}
        response = http_get(prom.url + "/api/v1/query_range", params=params, timeout=10)
        response.raise_for_status()
        for series in response.json()["data"]["result"]:
            want = values.get(series["metric"]["origin_group"])
            wrong += [f"{expr} {series['metric']} {v}" for _, v in series["values"] if float(v) != want]
    return wrong


def platform_total_unknown(prom: RunningProcess) -> dict[str, str]:
    """Firing OrpycamcpPlatformTotalUnknown alerts: signal -> description."""
    response = http_get(prom.url + "/api/v1/alerts", timeout=10)
    response.raise_for_status()
    return {
        alert["labels"]["signal"]: alert["annotations"]["description"]
        for alert in response.json()["data"]["alerts"]
        if alert["labels"]["alertname"] == "OrpycamcpPlatformTotalUnknown" and alert["state"] == "firing"
    }


@dataclass
class ShardedStack:
    east: Platform
    west: Platform
    west_server: PostgresServer
    prom: RunningProcess


@pytest.fixture
def sharded(pg_server: PostgresServer, redis: RedisServer, tmp_path: Path) -> Iterator[ShardedStack]:
    load_streams(redis.url)
    rules = write_shortened_rules(tmp_path / "rules.yml", for_duration="2s", interval="1s", offset="10s")
    with two_shards(pg_server) as (east, west, west_server), ExitStack() as stack:
        targets = [
            Targets(
                (stack.enter_context(exporter_process(shard_exporter_args(platform, redis.url), tmp_path)).port,),
                {"orpycamcp_cluster": shard.cluster, "pod": f"orpycamcp-exporter-{shard.cluster}-{replica}"},
            )
            for platform, shard in ((east, EAST), (west, WEST))
            for replica in range(REPLICAS)
        ]
        prom = stack.enter_context(prometheus(targets, None, rules, tmp_path))
        yield ShardedStack(east, west, west_server, prom)


def test_totals_over_clusters_are_complete_or_absent(sharded: ShardedStack) -> None:
    prom = sharded.prom
    started = time.time()

    # 1. Both clusters measured: the totals are the sums (and minima) over both
    #    clusters' fixtures; the stream total counts the one Redis once.
    assert pending((EAST,)) != pending(SHARDS), "the fixtures must make the total differ from one cluster"

    def steady() -> tuple[object, ...]:
        return (
            complete(totals(prom)),
            by_labels(prom, "orpycamcp:clusters:count", "job"),
            by_labels(prom, 'orpycamcp:dlq_pending_events:max{orpycamcp_cluster="east"}', "origin_group"),
            by_labels(prom, 'orpycamcp:dlq_pending_events:max{orpycamcp_cluster="west"}', "origin_group"),
            # The replicas of a cluster are one series per family label set, not one per pod.
            series_count(prom, 'up{orpycamcp_cluster="east"}'),
            series_count(prom, "orpycamcp:dlq_pending_events:max"),
            series_count(prom, "orpycamcp:dlq_pending_events:total"),
        )

    expected_steady = (
        True,
        {"orpycamcp-exporter": 2.0},
        pending((EAST,)),
        pending((WEST,)),
        REPLICAS,
        len(SHARDS) * len(ORIGIN_GROUPS),
        len(ORIGIN_GROUPS),
    )
    wait_for(lambda: steady() == expected_steady, 60, lambda: (steady(), show(totals(prom)), prom.log()[-2000:]))
    print(f"\nbefore the outage: {show(totals(prom))}")

    # 2. West's database stops: its exporter answers but cannot measure the
    #    PostgreSQL signals. The per-cluster totals vanish instead of becoming
    #    east's values; east's series stay; the streams total stays (Redis is up).
    sharded.west_server.stop()

    # Each piece settles on its own clock: the totals vanish as soon as west's
    # identity read fails, its replicas' signal caches say `measured 0` only
    # when their TTL ends. So the wait is for the whole state asserted.
    expected_outage = OutageView(
        pending={},
        oldest={},
        exhausted={},
        stream_pending=EXPECTED_STREAM_PENDING,
        measured={
            (f"orpycamcp-exporter-{cluster}-{replica}", signal): 1.0 if cluster == "east" else 0.0
            for cluster in ("east", "west")
            for replica in range(REPLICAS)
            for signal in ("dlq", "preservation")
        },
        east_pending=pending((EAST,)),
        west_pending={},
        dlq_clusters_measured={"dlq": 1.0},
    )
    wait_for(lambda: outage_view(prom) == expected_outage, 90, lambda: outage_view(prom))
    print(f"during the outage: {outage_view(prom)}")

    # West's exporters cannot read their database's identity either; they reported it before.
    described = (
        "Databases known: 2; measured now: 1.",
        "(orpycamcp_cluster west).",
        "Targets without a database identity: none.",
    )

    def unknown_as_described() -> bool:
        unknown = platform_total_unknown(prom)
        database_signals = ("dlq", "preservation")
        return (
            "streams" not in unknown
            and all(signal in unknown for signal in database_signals)
            and all(part in unknown[signal] for signal in database_signals for part in described)
        )

    wait_for(unknown_as_described, 60, lambda: platform_total_unknown(prom))
    print(f"OrpycamcpPlatformTotalUnknown: {platform_total_unknown(prom)}")

    # 3. West is back: the totals return, equal to the sums again.
    sharded.west_server.start()
    wait_for(lambda: complete(totals(prom)), 90, lambda: show(totals(prom)))
    print(f"after the outage: {show(totals(prom))}")
    wait_for(lambda: not platform_total_unknown(prom), 30, lambda: platform_total_unknown(prom))

    # 4. Over the whole run, at every evaluation, a total was the complete sum or absent: never partial.
    assert never_partial(prom, started, time.time()) == []
