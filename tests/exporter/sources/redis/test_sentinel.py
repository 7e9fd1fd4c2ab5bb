"""Which master the Redis reader trusts behind sentinels, asked of real ones: a
deployment of three sentinels, an impostor sentinel naming another master under
the same service name, and ports nobody listens on. What the reader says is
where reads go (diagnose's line) or the typed error naming every sentinel's
answer. The failovers themselves: tests/faults/test_redis_sentinel.py."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from devkit.redis_sentinel import (
    SERVICE,
    SentinelDeployment,
    SentinelProcess,
    sentinel_config,
    start_sentinel_deployment,
)
from devkit.servers import REDIS_HINT, free_port, serving
from exporter.sources.redis import errors
from exporter.tools.throwaway import redis_binary
from tests.redis_streams import streams_source
from tests.waits import wait_until_sync

pytestmark = pytest.mark.anyio

PASSWORD = "data-Pw7"
SENTINEL_PASSWORD = "watch-Pw9"


@pytest.fixture(scope="module")
def deployment() -> Iterator[SentinelDeployment]:
    with serving(lambda: start_sentinel_deployment(PASSWORD, SENTINEL_PASSWORD, sentinels=3), REDIS_HINT) as started:
        yield started


@pytest.fixture(scope="module")
def impostor() -> Iterator[SentinelDeployment]:
    """Another master with a sentinel of its own, monitoring it under the same service name."""
    with serving(lambda: start_sentinel_deployment(PASSWORD, SENTINEL_PASSWORD, sentinels=1), REDIS_HINT) as started:
        yield started


@pytest.fixture(scope="module")
def watchers() -> Iterator[tuple[SentinelProcess, int, SentinelProcess]]:
    """A sentinel whose master of the service is down (nobody listens on its port),
    seen down, and that port; and a sentinel monitoring nothing."""
    base = Path(tempfile.mkdtemp(prefix="orpycamcp-sentinel-"))
    down, bare = (SentinelProcess(base / name, free_port(), redis_binary()) for name in ("down", "bare"))
    try:
        for process in (down, bare):
            process.base.mkdir()
        gone = free_port()
        down.start(sentinel_config(down.port, gone, PASSWORD, SENTINEL_PASSWORD))
        bare.start(f"port {bare.port}\nbind 127.0.0.1\nprotected-mode no\nrequirepass {SENTINEL_PASSWORD}\n")

        def seen_down() -> bool:
            with redis.Redis(port=down.port, password=SENTINEL_PASSWORD, decode_responses=True) as client:
                return bool(client.sentinel_master(SERVICE)["is_sdown"])

        assert wait_until_sync(seen_down, 30), "the sentinel never saw its master down"
        yield down, gone, bare
    finally:
        down.stop()
        bare.stop()
        shutil.rmtree(base, ignore_errors=True)


def url_of(*sentinels: int, service: str = SERVICE, sentinel_password: str = SENTINEL_PASSWORD) -> str:
    hosts = ",".join(f"127.0.0.1:{port}" for port in sentinels)
    return f"redis+sentinel://:{PASSWORD}@{hosts}/{service}?sentinel_password={sentinel_password}"


async def where(url: str, majority: str = "configured") -> str | None:
    source = streams_source(url, sentinel_majority=majority)
    try:
        return await source.where_reads_go()
    finally:
        await source.close()


def named(deployment: SentinelDeployment) -> str:
    return f"the sentinels name master 127.0.0.1:{deployment.master.port} for service {SERVICE!r}"


def says(sentinel: int, master: SentinelDeployment) -> tuple[str, str]:
    return (f"sentinel 127.0.0.1:{sentinel}", f"names 127.0.0.1:{master.master.port}")


async def test_a_sentinel_naming_another_master_is_outvoted(
    deployment: SentinelDeployment, impostor: SentinelDeployment
) -> None:
    wrong = impostor.sentinels[0].port
    right = [sentinel.port for sentinel in deployment.sentinels]
    assert await where(url_of(wrong, *right)) == named(deployment)
    assert await where(url_of(*right, wrong)) == named(deployment)
    assert await where(url_of(right[0])) == named(deployment)


async def test_one_against_one_is_a_disagreement_naming_each_answer(
    deployment: SentinelDeployment, impostor: SentinelDeployment
) -> None:
    wrong, right = impostor.sentinels[0].port, deployment.sentinels[0].port
    for majority in ("configured", "answering"):
        with pytest.raises(errors.SentinelsDisagree) as raised:
            await where(url_of(wrong, right), majority)
        assert raised.value.service == SERVICE
        assert raised.value.votes == (says(wrong, impostor), says(right, deployment))


async def test_two_of_four_configured_are_no_majority_but_two_of_three_answering_are(
    deployment: SentinelDeployment, impostor: SentinelDeployment
) -> None:
    wrong = impostor.sentinels[0].port
    right = [sentinel.port for sentinel in deployment.sentinels[:2]]
    silent = free_port()
    url = url_of(wrong, *right, silent)
    with pytest.raises(errors.SentinelsDisagree) as raised:
        await where(url)
    votes = raised.value.votes
    assert votes[:3] == (says(wrong, impostor), says(right[0], deployment), says(right[1], deployment))
    assert len(votes) == 4
    assert votes[3][0] == f"sentinel 127.0.0.1:{silent}"
    assert votes[3][1].startswith("did not answer (ConnectionError: ")
    assert await where(url, "answering") == named(deployment)


async def test_one_master_named_by_too_few_of_those_configured(deployment: SentinelDeployment) -> None:
    right = deployment.sentinels[0].port
    silent = [free_port(), free_port()]
    url = url_of(right, *silent)
    with pytest.raises(errors.SentinelsTooFew) as raised:
        await where(url)
    assert raised.value.configured == 3
    assert raised.value.service == SERVICE
    assert raised.value.answers[0] == says(right, deployment)
    assert [sentinel for sentinel, _ in raised.value.answers[1:]] == [f"sentinel 127.0.0.1:{port}" for port in silent]
    assert all(answer.startswith("did not answer (ConnectionError: ") for _, answer in raised.value.answers[1:])
    # Of those answering, the one that did is a majority.
    assert await where(url, "answering") == named(deployment)
    # Two configured, one silent: one of two is no strict majority, and nobody knows.
    with pytest.raises(errors.SentinelsTooFew) as raised:
        await where(url_of(right, silent[0]))
    assert raised.value.configured == 2


async def test_a_service_no_sentinel_monitors_names_those_they_do(deployment: SentinelDeployment) -> None:
    right = [sentinel.port for sentinel in deployment.sentinels]
    for ports in (right, [*right[:2], free_port()]):
        with pytest.raises(errors.SentinelServiceUnknown) as raised:
            await where(url_of(*ports, service="nosuch"))
        assert raised.value.service == "nosuch"
        assert raised.value.known == (SERVICE,)


async def test_no_sentinel_answering_names_each_one() -> None:
    silent = [free_port(), free_port()]
    with pytest.raises(errors.SentinelsUnreachable) as raised:
        await where(url_of(*silent))
    assert type(raised.value) is errors.SentinelsUnreachable
    assert raised.value.service == SERVICE
    assert [sentinel for sentinel, _ in raised.value.attempts] == [f"sentinel 127.0.0.1:{port}" for port in silent]
    assert all(problem.startswith("ConnectionError: ") for _, problem in raised.value.attempts)


async def test_sentinels_refusing_the_credentials_are_told_from_unreachable_ones(
    deployment: SentinelDeployment,
) -> None:
    right = [sentinel.port for sentinel in deployment.sentinels]
    with pytest.raises(errors.SentinelsRefusedCredentials) as raised:
        await where(url_of(*right, sentinel_password="not-it"))
    assert raised.value.service == SERVICE
    assert [sentinel for sentinel, _ in raised.value.attempts] == [f"sentinel 127.0.0.1:{port}" for port in right]
    assert all(problem.startswith("AuthenticationError: ") for _, problem in raised.value.attempts)
    # One refusing, one silent: not every sentinel refused, so none is said to have.
    with pytest.raises(errors.SentinelsUnreachable) as unreachable:
        await where(url_of(right[0], free_port(), sentinel_password="not-it"))
    assert type(unreachable.value) is errors.SentinelsUnreachable


def seen_down(state: str, sentinel: int, master: int) -> bool:
    """`state` says the sentinel sees the master down (the flags in the sentinel's order)."""
    seen, _, flags = state.rpartition(" as ")
    return seen == f"sentinel 127.0.0.1:{sentinel} sees 127.0.0.1:{master}" and {"master", "s_down"} <= set(
        flags.split(",")
    )


async def test_a_master_seen_down_is_no_master_with_what_each_sentinel_sees(
    deployment: SentinelDeployment, impostor: SentinelDeployment, watchers: tuple[SentinelProcess, int, SentinelProcess]
) -> None:
    down, gone, bare = watchers
    with pytest.raises(errors.SentinelNoMaster) as raised:
        await where(url_of(down.port, bare.port))
    assert raised.value.service == SERVICE
    (state,) = raised.value.states
    assert seen_down(state, down.port, gone)
    # A vote for no master up: one master named of two answering is no majority.
    right = deployment.sentinels[0].port
    with pytest.raises(errors.SentinelNoMaster) as raised:
        await where(url_of(right, down.port, bare.port), "answering")
    assert raised.value.states[0] == f"sentinel 127.0.0.1:{right} sees 127.0.0.1:{deployment.master.port} as master"
    assert seen_down(raised.value.states[1], down.port, gone)
    # Beside two naming different masters, its answer is said in a disagreement.
    wrong = impostor.sentinels[0].port
    with pytest.raises(errors.SentinelsDisagree) as disagree:
        await where(url_of(wrong, right, down.port))
    assert disagree.value.votes[2] == (f"sentinel 127.0.0.1:{down.port}", "names no master up")
    # One naming the master, one seeing it down, one silent, one not monitoring it, of four:
    # even the silent one agreeing would make two, no strict majority: no master, not too few.
    with pytest.raises(errors.SentinelNoMaster):
        await where(url_of(right, down.port, free_port(), bare.port))
    # Of three, two answered, one seeing the master down: no silent vote could change that.
    with pytest.raises(errors.SentinelNoMaster):
        await where(url_of(right, down.port, free_port()))


async def test_sentinels_monitoring_nothing_know_no_service(
    deployment: SentinelDeployment, watchers: tuple[SentinelProcess, int, SentinelProcess]
) -> None:
    _, _, bare = watchers
    with pytest.raises(errors.SentinelServiceUnknown) as raised:
        await where(url_of(bare.port))
    assert raised.value.known == ()
    # Listed first, it casts no vote; the sentinels after it do.
    right = [sentinel.port for sentinel in deployment.sentinels]
    assert await where(url_of(bare.port, *right)) == named(deployment)
