"""A short load run for CI (the full one is bench/load.py): the exporter process
over 200 tenants, 50 keep-alive clients for 8 s, a 2 s TTL. Zero errors, and
exactly one measurement per signal per TTL window (last-success changes, and
the statement counts of pg_stat_statements). No timing assertions."""

from __future__ import annotations

import math
from collections.abc import Iterator
from pathlib import Path

import pytest

from bench.load import run_load
from devkit.servers import LocalPostgres, LocalRedis, start_redis
from tests.scrapes import DATABASE_SIGNALS

pytestmark = pytest.mark.anyio


@pytest.fixture
def load_redis() -> Iterator[LocalRedis]:
    server = start_redis()
    try:
        yield server
    finally:
        server.remove()


async def test_fifty_clients_over_two_hundred_tenants(
    statements_pg: LocalPostgres, load_redis: LocalRedis, tmp_path: Path
) -> None:
    result = await run_load(
        statements_pg,
        load_redis,
        tmp_path,
        tenants=200,
        clients=50,
        duration=8,
        ttl=2,
        deadline=1.5,
        driver="python",
    )
    assert result.clients.errors == 0, result.clients.error_kinds
    assert result.clients.requests > 0
    assert result.monitor_errors == 0
    assert result.unmeasured_pages == dict.fromkeys((*DATABASE_SIGNALS, "streams"), 0)
    assert result.values_correct
    for report in result.windows.values():
        assert report.measurements >= 2, report
        assert report.min_gap is not None, report
        assert report.min_gap >= 2 - 0.01, report  # never two measurements in one window
        # The database's own count is the truth: every statement of a signal ran as
        # often as the others (no measurement ran part of its statements), at least
        # once per measurement the monitor saw (its 50 ms polls can miss one on a
        # loaded machine, never see one that did not run), and never twice in one window.
        calls = report.statement_calls
        if calls is not None:
            assert len(calls) == 1, report
            assert report.measurements <= calls[0] <= math.floor(report.windows) + 1, report
    assert result.database_sessions <= result.max_connections
