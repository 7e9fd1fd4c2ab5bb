from __future__ import annotations

import asyncio
from collections.abc import Iterator

import pytest

from devkit.servers import PostgresServer, RedisServer, postgres_server, redis_server
from devkit.streams import create_stream_groups_at


@pytest.fixture
def own_pg() -> Iterator[PostgresServer]:
    """A PostgreSQL of this test's own, free to be stopped, killed and restarted."""
    with postgres_server() as server:
        yield server


@pytest.fixture(scope="module")
def streams_redis() -> Iterator[RedisServer]:
    """A Redis with the known consumer groups, left alone: the streams signal stays measured."""
    with redis_server() as server:
        asyncio.run(create_stream_groups_at(server.url))
        yield server


@pytest.fixture
def own_redis() -> Iterator[RedisServer]:
    """A Redis of this test's own, free to be stopped, paused and restarted; empty
    (the fault matrix's scene creates the consumer groups, inside the test's event loop)."""
    with redis_server() as server:
        yield server
