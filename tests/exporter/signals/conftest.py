"""Fixtures shared by the signals' tests: the declared backlogs' tenants, the emptied Redis."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from tests.platform import Platform


@pytest.fixture
async def db(redis: LocalRedis) -> AsyncIterator[Redis]:
    """The session Redis, emptied for this test (replies as text)."""
    client = Redis.from_url(redis.url, decode_responses=True)
    await client.flushall()
    try:
        yield client
    finally:
        await client.aclose()


@pytest.fixture
async def tenants(platform: Platform) -> Platform:
    """acme (active), globex (suspended: measured), initech (provisioning: skipped), each with a dead-letter queue."""
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")
    for slug in ("acme", "globex", "initech"):
        await platform.add_dead_letter_queue(slug)
    return platform
