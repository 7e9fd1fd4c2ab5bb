"""The signals and a declared backlog on every supported PostgreSQL major, 13 to
18 (the binaries of devkit.postgres_majors, one server per major shared by the
tests of this module): every value exact over tenants with odd slugs, a dropped
table unmeasured as `missing_table` without the batch's text in the server log,
no statement planned after its first run, and a hot standby read exactly.

The rest of the suite runs on Debian's PostgreSQL 15; this module is the slow
tier's version matrix."""

from __future__ import annotations

import asyncio
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import NamedTuple

import asyncpg
import pytest

from devkit.backlogs import example_backlogs
from devkit.postgres_majors import MAJORS, start_major
from devkit.servers import LocalPostgres, serving
from devkit.standby import caught_up, start_copied_standby
from exporter.sources.postgres.batches import tenant_batches
from exporter.tools.demo import EXPORTER_ROLE
from registry.values import ARTIFACTS, ORIGIN_GROUPS, PHASES
from tests.platform import Platform, at, create_platform
from tests.scrapes import Page, make_exporter, scrape

pytestmark = pytest.mark.anyio

SIGNALS = "dlq,preservation,audit_chain,kyc_dead_letters"
BATCH_SIZE = "4"  # several batches on both connections, with few tenants
KYC = example_backlogs("kyc_dead_letters")
TASKS = ("face_match", "ocr_extraction", "liveness_detection", "doc_processing")
STATES = ("pending", "reprocessed", "discarded")
# slug -> provisioning_status, status: every active tenant is read (suspended too), the others never.
TENANTS = {
    "acme": ("active", "active"),
    "o'brien": ("active", "active"),
    'dq"x': ("active", "active"),
    "globex": ("active", "suspended"),
    "initech": ("provisioning", "active"),
    **{f"t{number:02d}": ("active", "active") for number in range(1, 13)},
}
READ = tuple(slug for slug, (provisioning, _) in TENANTS.items() if provisioning == "active")


class DeadLetter(NamedTuple):
    slug: str
    group: str
    status: str
    created: datetime


class Retry(NamedTuple):
    slug: str
    artifact: str
    phase: str
    status: str


class Task(NamedTuple):
    slug: str
    task: str
    status: str
    minutes_ago: int  # at least 2 minutes away from the 1h window's edge


def dead_letters() -> list[DeadLetter]:
    rows = []
    for number, slug in enumerate(TENANTS):
        for j in range(number % 4 + 1):
            rows.append(
                DeadLetter(
                    slug,
                    ORIGIN_GROUPS[(number + j) % len(ORIGIN_GROUPS)],
                    ("pending", "resolved", "discarded")[(number * 2 + j) % 3],
                    at("2026-10-01 00:00:00") + timedelta(hours=number * 7 + j),
                )
            )
    return rows


def retries() -> list[Retry]:
    return [
        Retry(
            slug,
            ARTIFACTS[(number + j) % len(ARTIFACTS)],
            PHASES[(number * 3 + j) % len(PHASES)],
            ("exhausted", "retrying")[(number + j) % 2],
        )
        for number, slug in enumerate(TENANTS)
        for j in range(number % 3 + 1)
    ]


def tasks() -> list[Task]:
    return [
        Task(slug, TASKS[(number + j) % len(TASKS)], STATES[(number + 2 * j) % 3], (5, 30, 75, 3 * 24 * 60)[j % 4])
        for number, slug in enumerate(TENANTS)
        for j in range(number % 5 + 1)
    ]


def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pairs.items()))


@dataclass
class Major:
    major: int
    server: LocalPostgres
    platform: Platform
    written: datetime  # the tasks' created_at are this minus their minutes_ago

    def log_size(self) -> int:
        return (self.server.base / "postgres.log").stat().st_size

    def log_since(self, offset: int) -> str:
        with (self.server.base / "postgres.log").open("rb") as log:
            log.seek(offset)
            return log.read().decode(errors="replace")


async def seed(server: LocalPostgres) -> tuple[Platform, datetime]:
    platform = await create_platform(server)
    written = datetime.now(UTC).replace(microsecond=0)
    for slug, (provisioning, status) in TENANTS.items():
        await platform.add_tenant(slug, status=status, provisioning_status=provisioning)
        await platform.add_dead_letter_queue(slug)
    for number, row in enumerate(dead_letters()):
        await platform.add_dead_letter(row.slug, f"e{number}", row.group, row.status, row.created)
    for number, retry in enumerate(retries()):
        await platform.add_retry(retry.slug, f"a{number}", retry.artifact, retry.phase, retry.status)
    for task in tasks():
        await platform.add_dead_letter_task(
            task.slug, task.task, task.status, written - timedelta(minutes=task.minutes_ago)
        )
    # Two complete runs tied on finished_at (the later written wins), then a partial one.
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks=1, declared_breaks=1)
    await platform.add_audit_run("complete", at("2026-12-01 02:00:00"), breaks=4, declared_breaks=2)
    await platform.add_audit_run("partial", at("2026-12-01 03:00:00"), breaks=9, declared_breaks=0)
    await platform.execute("CREATE EXTENSION pg_stat_statements")
    return platform, written


@pytest.fixture(scope="module", params=MAJORS, ids=[f"pg{major}" for major in MAJORS])
def major(request: pytest.FixtureRequest) -> Iterator[Major]:
    """One server of the major for the module's tests, seeded once."""
    settings = {"shared_preload_libraries": "pg_stat_statements", "pg_stat_statements.track_planning": "on"}
    with serving(lambda: start_major(request.param, settings)) as server:
        platform, written = asyncio.run(seed(server))
        yield Major(request.param, server, platform, written)


async def refreshed(url: str, refreshes: int = 1, signals: str = SIGNALS, **options: str) -> Page:
    """The page of the last of `refreshes` refreshes of a new exporter."""
    exporter = make_exporter(url, signals=signals, database_batch_size=BATCH_SIZE, **options)
    try:
        page = await scrape(exporter)
        for cache in exporter.caches.values():
            cache.ttl = 0
        for _ in range(refreshes - 1):
            page = await scrape(exporter)
        return page
    finally:
        await exporter.close()


def assert_exact(page: Page, written: datetime) -> None:
    for signal in SIGNALS.split(","):
        assert page.measured(signal) == 1, page.failure_reasons(signal)
    pending = [row for row in dead_letters() if row.slug in READ and row.status == "pending"]
    assert page.family("orpycamcp_dlq_pending_events") == {
        labels(origin_group=group): sum(1 for row in pending if row.group == group) for group in ORIGIN_GROUPS
    }
    assert page.family("orpycamcp_dlq_oldest_pending_timestamp_seconds") == {
        labels(origin_group=group): min(row.created for row in pending if row.group == group).timestamp()
        for group in {row.group for row in pending}
    }
    exhausted = [retry for retry in retries() if retry.slug in READ and retry.status == "exhausted"]
    assert page.family("orpycamcp_preservation_exhausted_artifacts") == {
        labels(artifact=artifact, phase=phase): sum(1 for r in exhausted if (r.artifact, r.phase) == (artifact, phase))
        for artifact in ARTIFACTS
        for phase in PHASES
    }
    assert page.get("orpycamcp_audit_chain_breaks") == 4
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 2
    read = [task for task in tasks() if task.slug in READ]
    backlog = {"backlog": "kyc_dead_letters"}
    assert page.family("orpycamcp_backlog_pending_items") == {
        labels(**backlog, group=name): sum(1 for t in read if (t.task, t.status) == (name, "pending")) for name in TASKS
    }
    assert page.family("orpycamcp_backlog_oldest_pending_timestamp_seconds") == {
        labels(**backlog, group=name): (
            written - timedelta(minutes=max(t.minutes_ago for t in read if (t.task, t.status) == (name, "pending")))
        ).timestamp()
        for name in {t.task for t in read if t.status == "pending"}
    }
    assert page.family("orpycamcp_backlog_items") == {
        labels(**backlog, group=name, state=state): sum(1 for t in read if (t.task, t.status) == (name, state))
        for name in TASKS
        for state in STATES
    }
    assert page.family("orpycamcp_backlog_arrivals") == {
        labels(**backlog, group=name, window="1h"): sum(1 for t in read if t.task == name and t.minutes_ago < 60)
        for name in TASKS
    }


async def test_every_value_is_exact(major: Major, tmp_path: Path) -> None:
    config = tmp_path / "backlogs.yml"
    config.write_text(KYC)
    page = await refreshed(major.platform.exporter_url, backlogs_config_file=str(config))
    assert_exact(page, major.written)
    assert page.get("orpycamcp_database_replay_lag_seconds") is None  # a primary


async def test_no_statement_is_planned_after_its_first_run(major: Major, tmp_path: Path) -> None:
    config = tmp_path / "backlogs.yml"
    config.write_text(KYC)
    await major.platform.execute("SELECT pg_stat_statements_reset()")
    await refreshed(major.platform.exporter_url, refreshes=8, backlogs_config_file=str(config))
    rows = await major.platform.fetch(
        "SELECT query, calls, plans FROM pg_stat_statements"
        " WHERE userid = (SELECT oid FROM pg_roles WHERE rolname = $1) AND query LIKE '%dead_letter_queue%'",
        EXPORTER_ROLE,
    )
    # Every batch of the backlog binds its pending value and runs on one
    # connection: planned once, run 8 times (PostgreSQL 18 counts batches of
    # the same shape in one entry).
    batches = len(tenant_batches(sorted(READ), int(BATCH_SIZE)))  # the server sorts the slugs in the C locale
    assert sum(row["calls"] for row in rows) == 8 * batches
    assert [row["calls"] for row in rows] == [8 * row["plans"] for row in rows], [dict(row) for row in rows]


async def test_a_dropped_table_is_missing_table_and_its_batch_text_stays_out_of_the_server_log(
    major: Major, tmp_path: Path
) -> None:
    platform = await create_platform(major.server)
    for slug in ("acme", "o'brien", 'dq"x'):
        await platform.add_tenant(slug)
        await platform.add_dead_letter(slug, "e1", "workflow-service", "pending", at("2026-11-01 00:00:00"))
    await platform.execute('DROP TABLE "tenant_o\'brien".evento_dead_letter')
    before = major.log_size()

    page = await refreshed(platform.exporter_url, refreshes=3, signals="dlq,preservation")

    assert page.measured("dlq") == 0
    assert page.failure_reasons("dlq") == {"missing_table"}
    assert page.family("orpycamcp_dlq_pending_events") == {}
    assert page.measured("preservation") == 1
    logged = major.log_since(before)
    assert "tenant_o'brien" in logged  # the error is logged...
    assert "UNION ALL" not in logged  # ...not the statement
    assert len(logged) < 3 * 1024, logged


async def test_a_standby_reads_every_value_exactly(major: Major, tmp_path: Path) -> None:
    config = tmp_path / "backlogs.yml"
    config.write_text(KYC)
    standby = start_copied_standby(major.server)
    try:
        database = major.platform.database
        await caught_up(major.server.url(database=database), standby.url(database=database))
        url = major.platform.exporter_url.replace(f":{major.server.port}/", f":{standby.port}/")
        page = await refreshed(url, backlogs_config_file=str(config))
        assert_exact(page, major.written)
        assert page.get("orpycamcp_database_replay_lag_seconds") == 0
        connection = await asyncpg.connect(standby.url(database=database))
        try:
            assert await connection.fetchval("SELECT pg_is_in_recovery()")
        finally:
            await connection.close()
    finally:
        standby.remove()
