"""Fixtures shared by the declared-backlog tests."""

from __future__ import annotations

import pytest

from tests.platform import Platform


@pytest.fixture
async def tenants(platform: Platform) -> Platform:
    """acme (active), globex (suspended: measured), initech (provisioning: skipped), each with a dead-letter queue."""
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")
    for slug in ("acme", "globex", "initech"):
        await platform.add_dead_letter_queue(slug)
    return platform
