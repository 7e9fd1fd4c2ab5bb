"""Redis behind Sentinel, for real: a master, a replica and three sentinels.

The exporter asks the sentinels for the master before every refresh; when the
master is killed, it is unmeasured until the sentinels have promoted the
replica, then exact again on the new master, never a stale or false number in
between, even when the old master comes back empty."""

from __future__ import annotations

import asyncio
import signal
import time
from collections.abc import Iterator

import pytest
import trustme
from redis.asyncio import Redis

from devkit.redis_sentinel import SERVICE, SentinelDeployment, start_sentinel_deployment
from devkit.redis_tls import issue
from devkit.servers import ServerUnavailable
from exporter.reasons import Reason
from exporter.signals.base import Source
from exporter.sources.redis.tls import RedisTls
from exporter.tools.hints import hint
from tests.redis_streams import (
    Values,
    counts_of,
    expected_values,
    failure_of,
    failure_reading,
    measure_streams,
    streams_source,
    write_backlog,
)

pytestmark = pytest.mark.anyio

REFRESH = 0.25  # seconds between two refreshes, as a TTL this short would make them
PASSWORD = "data-Pw7"
SENTINEL_PASSWORD = "watch-Pw9"


def _started(password: str | None, sentinel_password: str | None) -> SentinelDeployment:
    try:
        return start_sentinel_deployment(password, sentinel_password)
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install Redis 7 (apt-get install redis-server).", pytrace=False)


@pytest.fixture
def deployment() -> Iterator[SentinelDeployment]:
    started = _started(password=PASSWORD, sentinel_password=SENTINEL_PASSWORD)
    yield started
    started.remove()


def plain_client(port: int) -> Redis:
    return Redis(port=port, password=PASSWORD, decode_responses=True, socket_timeout=5)


async def values_at(port: int) -> Values:
    client = plain_client(port)
    try:
        return await expected_values(client)
    finally:
        await client.aclose()


async def test_a_failover_is_followed_exactly_and_unmeasured_in_between(deployment: SentinelDeployment) -> None:
    master = plain_client(deployment.master.port)
    await write_backlog(master, 3)
    assert await master.wait(1, 5000) == 1  # the replica holds every write
    await master.aclose()
    before = await values_at(deployment.master.port)
    source = streams_source(deployment.url())
    timeline: list[tuple[float, str]] = []
    try:
        assert counts_of(await measure_streams(source)) == before

        deployment.master.stop(signal.SIGKILL)
        killed = time.monotonic()
        new_port = deployment.replica.port
        back: Values | None = None
        unmeasured_reasons: set[Reason] = set()
        while back is None:
            assert time.monotonic() - killed < 60, f"never measured again: {timeline}"
            outcome = await measure_streams(source)
            at = time.monotonic() - killed
            if outcome.samples is None:
                failure = failure_of(outcome)
                unmeasured_reasons.add(failure.reason)
                timeline.append((at, f"unmeasured: {failure.reason}"))
            else:
                # Whatever is measured is the new master's data, exactly: never the dead one's.
                assert deployment.master_address()[1] == new_port, "measured before the sentinels named a master"
                values = counts_of(outcome)
                assert values == await values_at(new_port)
                timeline.append((at, "measured, exact"))
                back = values
            await asyncio.sleep(REFRESH)
        assert unmeasured_reasons, "the kill went unnoticed"
        assert unmeasured_reasons <= {Reason.CONNECTION_ERROR, Reason.MASTER_DOWN, Reason.TIMEOUT}
        assert back == before

        # New writes on the new master are read exactly.
        promoted = plain_client(new_port)
        await write_backlog(promoted, 2)
        await promoted.aclose()
        after = await values_at(new_port)
        assert after != before
        assert counts_of(await measure_streams(source)) == after

        # The old master comes back empty (no persistence) and, until the sentinels
        # demote it, calls itself a master: it is never read.
        deployment.master.start()
        restarted = time.monotonic()
        while time.monotonic() - restarted < 3 * REFRESH + 4:
            outcome = await measure_streams(source)
            if outcome.samples is not None:
                assert counts_of(outcome) == after
            await asyncio.sleep(REFRESH)
        assert counts_of(await measure_streams(source)) == after
    finally:
        await source.close()
        print("\nfailover timeline (seconds after SIGKILL of the master):")
        for at, what in timeline:
            print(f"  {at:6.2f}  {what}")


async def test_an_unknown_service_name_is_a_reason_of_its_own(deployment: SentinelDeployment) -> None:
    failure = await failure_reading(deployment.url(service="no-such-service"))
    assert failure.reason is Reason.UNKNOWN_SENTINEL_SERVICE
    assert failure.detail == (f"no sentinel monitors a service named 'no-such-service' (they monitor: {SERVICE!r})")
    assert "SENTINEL MASTERS" in hint(failure.reason, Source.REDIS)


async def test_a_lone_sentinel_naming_another_master_is_not_trusted(
    deployment: SentinelDeployment, impostor: SentinelDeployment
) -> None:
    """Two of three configured sentinels down, the third naming another server: unmeasured,
    not the other server's numbers; unless a majority of those answering is asked for."""
    for server, round_ in ((deployment.master, 2), (impostor.master, 7)):
        client = plain_client(server.port)
        await write_backlog(client, round_)
        await client.aclose()
    wrong = impostor.sentinels[0].port
    down = [sentinel.port for sentinel in deployment.sentinels[:2]]
    url = url_of(down[0], down[1], wrong)
    for sentinel in deployment.sentinels[:2]:
        sentinel.stop()

    failure = await failure_reading(url)
    assert failure.reason is Reason.SENTINELS_TOO_FEW
    assert f"sentinel 127.0.0.1:{wrong} names 127.0.0.1:{impostor.master.port}" in failure.detail
    for port in down:
        assert f"sentinel 127.0.0.1:{port} did not answer" in failure.detail
    assert "strict majority of the 3 configured" in failure.detail
    assert "--redis.sentinel-majority answering" in hint(failure.reason, Source.REDIS)

    # What the option risks: the lone sentinel decides, and the other server is read.
    answering = streams_source(url, sentinel_majority="answering")
    try:
        assert counts_of(await measure_streams(answering)) == await values_at(impostor.master.port)
    finally:
        await answering.close()


async def test_sentinels_wanting_their_own_password_are_refused_without_it(deployment: SentinelDeployment) -> None:
    failure = await failure_reading(deployment.url(with_sentinel_password=False))
    assert failure.reason is Reason.AUTHENTICATION_FAILED
    assert "sentinel_password" in hint(failure.reason, Source.REDIS)
    assert SENTINEL_PASSWORD not in failure.detail
    assert PASSWORD not in failure.detail


async def test_no_sentinel_answering_names_each_one(deployment: SentinelDeployment) -> None:
    for sentinel in deployment.sentinels:
        sentinel.stop()
    failure = await failure_reading(deployment.url())
    assert failure.reason is Reason.CONNECTION_ERROR
    for sentinel in deployment.sentinels:
        assert f"sentinel 127.0.0.1:{sentinel.port}:" in failure.detail


async def test_a_stalled_sentinel_leaves_time_for_the_others(deployment: SentinelDeployment) -> None:
    master = plain_client(deployment.master.port)
    await write_backlog(master, 2)
    await master.aclose()
    expected = await values_at(deployment.master.port)
    deadline = 2.0
    source = streams_source(deployment.url(), deadline=deadline)
    deployment.sentinels[0].pause()  # the first the URL names: asked first
    try:
        for _ in range(3):  # every refresh, not only the first
            assert counts_of(await measure_streams(source, deadline=deadline)) == expected
    finally:
        deployment.sentinels[0].resume()
        await source.close()


async def test_over_tls_the_sentinels_and_the_master_are_verified(tmp_path_factory: pytest.TempPathFactory) -> None:
    ca = trustme.CA()
    files = issue(ca, tmp_path_factory.mktemp("pki"), "sentinel", "127.0.0.1")
    stranger = issue(trustme.CA(), tmp_path_factory.mktemp("other"), "stranger", "127.0.0.1")
    try:
        deployment = start_sentinel_deployment(tls=files)
    except ServerUnavailable as exc:
        pytest.fail(f"{exc}. Install Redis 7 built with TLS (Debian's redis-server).", pytrace=False)
    try:
        assert deployment.url().startswith("rediss+sentinel://")
        master = Redis(host="127.0.0.1", port=deployment.master.port, ssl=True, ssl_ca_certs=str(files.ca))
        await write_backlog(master, 3)
        expected = await expected_values(master)
        await master.aclose()
        # A strict majority of the three must answer: each gets time for a TLS handshake
        # on a loaded machine (a sentinel's share of the deadline is a quarter of it).
        trusted = streams_source(deployment.url(), RedisTls(ca_file=str(files.ca)), deadline=10.0)
        untrusted = streams_source(deployment.url(), RedisTls(ca_file=str(stranger.ca)))
        try:
            assert counts_of(await measure_streams(trusted, deadline=10.0)) == expected
            refused = failure_of(await measure_streams(untrusted))
            assert refused.reason is Reason.CONNECTION_ERROR
            assert refused.detail.startswith("no sentinel answered for service 'mymaster': sentinel 127.0.0.1:")
            assert "CERTIFICATE_VERIFY_FAILED" in refused.detail
        finally:
            await trusted.close()
            await untrusted.close()
    finally:
        deployment.remove()


@pytest.fixture
def impostor() -> Iterator[SentinelDeployment]:
    """Another master with a sentinel of its own, monitoring it under the same service name."""
    started = start_sentinel_deployment(PASSWORD, SENTINEL_PASSWORD, sentinels=1)
    yield started
    started.remove()


def url_of(*sentinels: int) -> str:
    hosts = ",".join(f"127.0.0.1:{port}" for port in sentinels)
    return f"redis+sentinel://:{PASSWORD}@{hosts}/{SERVICE}?sentinel_password={SENTINEL_PASSWORD}"


async def test_a_sentinel_naming_another_master_is_outvoted_or_a_disagreement(
    deployment: SentinelDeployment, impostor: SentinelDeployment
) -> None:
    for server, round_ in ((deployment.master, 2), (impostor.master, 7)):
        client = plain_client(server.port)
        await write_backlog(client, round_)
        await client.aclose()
    expected = await values_at(deployment.master.port)
    assert expected != await values_at(impostor.master.port)
    wrong = impostor.sentinels[0].port
    right = [sentinel.port for sentinel in deployment.sentinels]

    # Listed first, outvoted by the three others. While the third is frozen, two of
    # the four configured are no strict majority: nothing read, unless a majority of
    # those answering is accepted (--redis.sentinel-majority answering).
    source = streams_source(url_of(wrong, *right))
    answering = streams_source(url_of(wrong, *right), sentinel_majority="answering")
    try:
        assert counts_of(await measure_streams(source)) == expected
        deployment.sentinels[2].pause()
        try:
            failure = failure_of(await measure_streams(source))
            assert failure.reason is Reason.SENTINELS_DISAGREE
            assert f"sentinel 127.0.0.1:{right[2]} did not answer" in failure.detail
            assert counts_of(await measure_streams(answering)) == expected
        finally:
            deployment.sentinels[2].resume()
    finally:
        await source.close()
        await answering.close()

    # One against one: no majority, nothing read, each sentinel's answer named.
    failure = await failure_reading(url_of(wrong, right[0]))
    assert failure.reason is Reason.SENTINELS_DISAGREE
    assert f"sentinel 127.0.0.1:{wrong} names 127.0.0.1:{impostor.master.port}" in failure.detail
    assert f"sentinel 127.0.0.1:{right[0]} names 127.0.0.1:{deployment.master.port}" in failure.detail
    assert "SENTINEL MASTERS" in hint(failure.reason, Source.REDIS)


SENTINEL_RIGHTS = "+sentinel|masters +client|setname"  # docs/connecting.md, Commands and permissions


async def test_the_documented_sentinel_acl_is_enough_and_each_right_is_needed(deployment: SentinelDeployment) -> None:
    def set_watcher(rules: str) -> None:
        for index in range(len(deployment.sentinels)):
            with deployment.sentinel_client(index) as client:
                client.execute_command("ACL", "SETUSER", "watcher", "reset", "on", ">watch-acl-Pw2", *rules.split())

    master = plain_client(deployment.master.port)
    await write_backlog(master, 2)
    await master.aclose()
    expected = await values_at(deployment.master.port)
    hosts = ",".join(f"127.0.0.1:{sentinel.port}" for sentinel in deployment.sentinels)
    url = f"redis+sentinel://:{PASSWORD}@{hosts}/{SERVICE}?sentinel_username=watcher&sentinel_password=watch-acl-Pw2"
    set_watcher(SENTINEL_RIGHTS)
    source = streams_source(url)
    try:
        assert counts_of(await measure_streams(source)) == expected
    finally:
        await source.close()
    for right in SENTINEL_RIGHTS.split():
        set_watcher(SENTINEL_RIGHTS.replace(right, ""))
        failure = await failure_reading(url)
        assert failure.reason is Reason.PERMISSION_DENIED, (right, failure)
