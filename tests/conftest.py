from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Generator, Iterator

import pytest

from devkit.docker_engine import DockerEngine, EngineUnavailable, session_engine
from devkit.servers import (
    POSTGRES_HINT,
    LocalPostgres,
    PostgresServer,
    RedisServer,
    in_containers,
    postgres_server,
    redis_server,
    servers_header,
    serving,
    start_postgres,
)
from tests import hypotheses  # noqa: F401 -- loads the hypothesis profile of this run
from tests.parallel import ALONE, run_order, shared_directory, turn
from tests.platform import Platform, create_platform

# The slow tier, by test id prefix: images and the wheel built, whole stacks end
# to end, the fault matrix and the load, scale; the Redis topologies (a replica,
# sentinels, a cluster: several servers each); and promtool's evaluation of the
# rule test files (each file, then each again on two other renders; the
# replays; the mixin fetched from git): 2 to 20 s of CPU each, about 300 s in
# all, which alone kept the fast tier at 4 minutes. Everything else (pure and
# single-server tests, the rendering and linting of the mixin) is the fast
# tier: `scripts/test --fast`, or `pytest -m "not slow"`.
SLOW_TIER = (
    "tests/alerts/test_config_keys.py::test_each_key_alone_fails_a_promtool_test_of_the_rules_it_changes",
    "tests/alerts/test_mixin.py::test_other_config_rule_tests_pass_against_their_render",
    "tests/alerts/test_mixin.py::test_renamed_job_and_cluster_label_pass_every_rule_test",
    "tests/alerts/test_mixin.py::test_renamed_rule_tests_fail_against_the_default_rules",
    "tests/alerts/test_mixin_lint.py::test_installed_from_git_it_renders_under_its_full_and_its_legacy_name",
    "tests/alerts/test_pending_scenarios.py",
    "tests/alerts/test_purge_scenarios.py",
    "tests/alerts/test_rules.py::test_promtool_test_rules",
    "tests/alerts/test_trim_scenarios.py",
    "tests/exporter/sources/redis/test_cluster.py",
    "tests/exporter/sources/redis/test_replica.py",
    "tests/exporter/sources/redis/test_sentinel.py",
    "tests/deploy/test_compose_up.py",
    "tests/deploy/test_image.py",
    "tests/deploy/test_wheel.py",
    "tests/e2e/",
    "tests/faults/",
    "tests/exporter/sources/postgres/test_scale.py",
    "tests/majors/",
)


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    for item in items:
        if item.nodeid.startswith(SLOW_TIER):
            item.add_marker(pytest.mark.slow)
    run_order(items, config.rootpath)


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtest_protocol(item: pytest.Item, nextitem: pytest.Item | None) -> Generator[None, object, object]:
    """Around a test's setup, call and teardown (and its timeout): its turn among the workers (tests/parallel.py)."""
    with turn(shared_directory(item.config), alone=item.get_closest_marker(ALONE) is not None):
        return (yield)


def pytest_report_header(config: pytest.Config) -> list[str]:
    fast_tier_only = config.getoption("markexpr") == "not slow"
    return servers_header(docker_needed=not fast_tier_only)


def pytest_configure(config: pytest.Config) -> None:
    # A test that fails by timing must show it: no plugin may run a failed test again.
    for rerunning in ("rerunfailures", "flaky", "pytest_rerunfailures", "retry"):
        if config.pluginmanager.hasplugin(rerunning):
            raise pytest.UsageError(f"the plugin {rerunning!r} reruns failed tests: this suite runs each test once")


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def docker_engine() -> Iterator[DockerEngine]:
    """The engine of DOCKER_HOST (scripts/test starts one), else a private one for the session.

    No engine is a failure, never a skip.
    """
    try:
        with session_engine() as engine:
            yield engine
    except EngineUnavailable as exc:
        pytest.fail(str(exc), pytrace=False)


@pytest.fixture(scope="session", autouse=True)
def _engine_for_container_servers(request: pytest.FixtureRequest) -> None:
    """With ORPYCAMCP_TEST_SERVERS=docker, every server is a container: the engine comes first."""
    if in_containers():
        request.getfixturevalue("docker_engine")


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL; tests that stop or kill a server use their own."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture
def primary_pg() -> Iterator[LocalPostgres]:
    """A local PostgreSQL of this test's own, to make hot standbys of (devkit/standby.py)."""
    with serving(start_postgres, POSTGRES_HINT) as server:
        yield server


@pytest.fixture
def statements_pg() -> Iterator[LocalPostgres]:
    """A PostgreSQL of its own that counts every statement (pg_stat_statements)."""
    with serving(lambda: start_postgres({"shared_preload_libraries": "pg_stat_statements"}), POSTGRES_HINT) as server:
        yield server


@pytest.fixture(scope="module")
def module_platform(pg_server: PostgresServer) -> Iterator[Platform]:
    """One database with one tenant ("acme"), shared by a module's tests of a running process."""

    async def build() -> Platform:
        platform = await create_platform(pg_server)
        await platform.add_tenant("acme")
        return platform

    platform = asyncio.run(build())
    yield platform
    asyncio.run(platform.drop())


@pytest.fixture
async def platform(pg_server: PostgresServer) -> AsyncIterator[Platform]:
    """A fresh database holding the reference contract and the exporter role's grants; dropped afterwards."""
    platform = await create_platform(pg_server)
    yield platform
    await platform.drop()
