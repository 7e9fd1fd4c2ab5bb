from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from devkit.servers import PostgresServer, RedisServer, postgres_server, redis_server
from tests.platform import Platform, create_platform


@pytest.fixture(scope="session")
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture(scope="session")
def pg_server() -> Iterator[PostgresServer]:
    """The session's PostgreSQL; tests that stop or kill a server use their own."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="session")
def redis() -> Iterator[RedisServer]:
    with redis_server() as server:
        yield server


@pytest.fixture(scope="module")
def module_platform(pg_server: PostgresServer) -> Platform:
    """One database with one tenant ("acme"), shared by a module's tests of a running process."""

    async def build() -> Platform:
        platform = await create_platform(pg_server)
        await platform.add_tenant("acme")
        return platform

    return asyncio.run(build())


@pytest.fixture
async def platform(pg_server: PostgresServer) -> Platform:
    """A fresh database holding the reference contract and the exporter role's grants."""
    return await create_platform(pg_server)
