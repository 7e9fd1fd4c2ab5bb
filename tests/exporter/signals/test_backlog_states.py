"""Rows per state and arrivals within windows of declared backlogs, against the
real PostgreSQL: exact against counts computed here from the rows written,
windows ending at the database's clock, and unmeasured rather than wrong."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path
from typing import Any, NamedTuple

import pytest

from devkit.backlogs import example_backlogs, without
from exporter.backlogs import parse_declarations
from exporter.errors import ContractViolation
from exporter.exporter import Exporter
from exporter.signals.backlog import batch_sql, predicate
from tests.platform import Platform
from tests.scrapes import Page, make_exporter, scrape

pytestmark = pytest.mark.anyio

PENDING = "orpycamcp_backlog_pending_items"
OLDEST = "orpycamcp_backlog_oldest_pending_timestamp_seconds"
ITEMS = "orpycamcp_backlog_items"
ARRIVALS = "orpycamcp_backlog_arrivals"
THRESHOLD = "orpycamcp_backlog_arrivals_threshold"
TASKS = ("face_match", "ocr_extraction", "liveness_detection", "doc_processing")
STATES = ("pending", "reprocessed", "discarded")
WINDOWS = {"1h": 60, "24h": 24 * 60}  # minutes

# The example's KYC backlog (its states), with a second window and a lower threshold.
KYC = (
    example_backlogs("kyc_dead_letters")
    .replace("windows: [1h]", "windows: [1h, 24h]", 1)
    .replace("alert_above: {1h: 10}", "alert_above: {1h: 2}", 1)
)
assert "windows: [1h, 24h]" in KYC
assert "{1h: 2}" in KYC


class Row(NamedTuple):
    tenant: str
    task: str
    status: str
    minutes_ago: int  # before the database's now() when written; negative: in the future


# Every offset at least 2 minutes away from a window's edge: the measurement
# comes seconds after the rows are written.
ROWS = (
    Row("acme", "face_match", "pending", 10),
    Row("acme", "face_match", "pending", 130),
    Row("acme", "face_match", "reprocessed", 50),
    Row("acme", "ocr_extraction", "discarded", 3 * 24 * 60),
    Row("acme", "ocr_extraction", "pending", 62),
    # Stamped 30 minutes ahead of the database's clock: counted in its state, not yet arrived.
    Row("acme", "doc_processing", "reprocessed", -30),
    Row("globex", "face_match", "pending", 5),
    Row("globex", "liveness_detection", "reprocessed", 25 * 60),
    Row("globex", "liveness_detection", "discarded", 23 * 60),
    Row("initech", "doc_processing", "pending", 1),  # provisioning: never read
)
MEASURED_TENANTS = ("acme", "globex")


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "backlogs.yml"
    path.write_text(text)
    return str(path)


def labels(**pairs: str) -> tuple[tuple[str, str], ...]:
    return tuple(sorted(pairs.items()))


async def insert(platform: Platform, row: Row) -> None:
    await platform.execute(
        f"INSERT INTO tenant_{row.tenant}.dead_letter_queue (task_name, status, created_at)"
        " VALUES ($1, $2, now() - make_interval(mins => $3))",
        row.task,
        row.status,
        row.minutes_ago,
    )


async def scrape_once(url: str, config: str, **options: str) -> Page:
    exporter = make_exporter(url, **options)
    try:
        return await scrape(exporter)
    finally:
        await exporter.close()


@pytest.mark.parametrize("batch_size", ["1", "500"], ids=["a-batch-per-tenant", "one-batch"])
async def test_states_and_arrivals_are_exact_in_every_tenant(
    tenants: Platform, tmp_path: Path, batch_size: str
) -> None:
    for row in ROWS:
        await insert(tenants, row)

    page = await scrape_once(
        tenants.exporter_url,
        KYC,
        backlogs_config_file=write(tmp_path, KYC),
        database_batch_size=batch_size,
        signals="kyc_dead_letters",
    )

    read = [row for row in ROWS if row.tenant in MEASURED_TENANTS]
    by_state = Counter((row.task, row.status) for row in read)
    assert page.measured("kyc_dead_letters") == 1
    assert page.family(ITEMS) == {
        labels(backlog="kyc_dead_letters", group=task, state=state): by_state[(task, state)]
        for task in TASKS
        for state in STATES
    }
    assert page.family(ARRIVALS) == {
        labels(backlog="kyc_dead_letters", group=task, window=window): sum(
            1 for row in read if row.task == task and 0 <= row.minutes_ago < minutes
        )
        for task in TASKS
        for window, minutes in WINDOWS.items()
    }
    assert page.family(PENDING) == {
        labels(backlog="kyc_dead_letters", group=task): by_state[(task, "pending")] for task in TASKS
    }
    assert page.family(THRESHOLD) == {labels(backlog="kyc_dead_letters", window="1h"): 2}
    # The oldest pending row per task, as the tables hold it.
    oldest = await tenants.fetch(
        "SELECT task_name, extract(epoch FROM min(created_at))::float8 AS oldest FROM ("
        " SELECT task_name, created_at FROM tenant_acme.dead_letter_queue WHERE status = 'pending'"
        " UNION ALL SELECT task_name, created_at FROM tenant_globex.dead_letter_queue WHERE status = 'pending'"
        ") AS rows GROUP BY task_name"
    )
    assert page.family(OLDEST) == {
        labels(backlog="kyc_dead_letters", group=row["task_name"]): pytest.approx(row["oldest"], abs=1e-6)
        for row in oldest
    }


async def test_states_without_arrivals_are_exact_in_every_tenant(tenants: Platform, tmp_path: Path) -> None:
    for row in ROWS:
        await insert(tenants, row)
    config = without(KYC, "arrivals")
    assert "arrivals" not in config

    page = await scrape_once(
        tenants.exporter_url, config, backlogs_config_file=write(tmp_path, config), signals="kyc_dead_letters"
    )

    by_state = Counter((row.task, row.status) for row in ROWS if row.tenant in MEASURED_TENANTS)
    assert page.measured("kyc_dead_letters") == 1
    assert page.family(ITEMS) == {
        labels(backlog="kyc_dead_letters", group=task, state=state): by_state[(task, state)]
        for task in TASKS
        for state in STATES
    }
    assert page.family(PENDING) == {
        labels(backlog="kyc_dead_letters", group=task): by_state[(task, "pending")] for task in TASKS
    }
    assert page.family(ARRIVALS) == {}


async def test_a_row_moving_between_states_moves_its_count_and_stays_arrived(tenants: Platform, tmp_path: Path) -> None:
    await insert(tenants, Row("acme", "ocr_extraction", "pending", 20))
    await insert(tenants, Row("acme", "ocr_extraction", "pending", 40))
    exporter = make_exporter(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC), signals="kyc_dead_letters"
    )
    try:
        before = await scrape(exporter)
        await tenants.execute(
            "UPDATE tenant_acme.dead_letter_queue SET status = 'reprocessed'"
            " WHERE created_at = (SELECT min(created_at) FROM tenant_acme.dead_letter_queue)"
        )
        after = await refresh(exporter)
    finally:
        await exporter.close()
    group = {"backlog": "kyc_dead_letters", "group": "ocr_extraction"}
    assert before.get(ITEMS, **group, state="pending") == 2
    assert before.get(ITEMS, **group, state="reprocessed") == 0
    assert after.get(ITEMS, **group, state="pending") == 1
    assert after.get(ITEMS, **group, state="reprocessed") == 1
    assert after.get(PENDING, **group) == 1
    # Arrivals count rows in any state: the reprocessed row still arrived within the hour.
    assert before.get(ARRIVALS, **group, window="1h") == after.get(ARRIVALS, **group, window="1h") == 2


async def refresh(exporter: Exporter) -> Page:
    for cache in exporter.caches.values():
        cache.ttl = 0
    return await scrape(exporter)


OUTBOX = """
backlogs:
  outbox:
    help: Outbox events not yet processed.
    scope: global
    table: public.outbox
    pending:
      status: {not: [PROCESSED]}
    group_by: partition
    groups: [0, 1]
    oldest: created_at
    states:
      column: status
      values: [PENDING, FAILED, PROCESSED]
    arrivals:
      column: created_at
      windows: [1h, 24h]
"""
OUTBOX_ROWS = (
    (0, "PENDING", 20),
    (0, "FAILED", 70),
    (0, "PROCESSED", 30),
    (1, "PROCESSED", 23 * 60),
    (1, "PENDING", 3),
)


async def test_a_timestamp_without_time_zone_is_compared_as_utc_whatever_the_zone(
    platform: Platform, tmp_path: Path
) -> None:
    # The exporter's sessions default to a zone 5h45 ahead of UTC: a UTC wall time read
    # in that zone would put every row hours earlier, out of the 1h window.
    await platform.execute(f"ALTER DATABASE {platform.database} SET timezone TO 'Asia/Kathmandu'")
    await platform.execute(
        "CREATE TABLE public.outbox (id bigserial PRIMARY KEY, partition int NOT NULL, status text NOT NULL,"
        " created_at timestamp NOT NULL)"
    )
    await platform.execute("GRANT SELECT ON public.outbox TO orpycamcp_exporter")
    for partition, status, minutes_ago in OUTBOX_ROWS:
        await platform.execute(
            "INSERT INTO public.outbox (partition, status, created_at)"
            " VALUES ($1, $2, (now() AT TIME ZONE 'UTC') - make_interval(mins => $3))",
            partition,
            status,
            minutes_ago,
        )
    page = await scrape_once(
        platform.exporter_url, OUTBOX, backlogs_config_file=write(tmp_path, OUTBOX), signals="outbox"
    )
    assert page.measured("outbox") == 1
    for partition in (0, 1):
        for window, minutes in WINDOWS.items():
            want = sum(1 for p, _, ago in OUTBOX_ROWS if p == partition and ago < minutes)
            assert page.get(ARRIVALS, backlog="outbox", group=str(partition), window=window) == want
        for state in ("PENDING", "FAILED", "PROCESSED"):
            want = sum(1 for p, s, _ in OUTBOX_ROWS if p == partition and s == state)
            assert page.get(ITEMS, backlog="outbox", group=str(partition), state=state) == want


async def test_arrivals_without_states_count_every_state_within_the_windows(platform: Platform, tmp_path: Path) -> None:
    await platform.execute(
        "CREATE TABLE public.outbox (id bigserial PRIMARY KEY, partition int NOT NULL, status text NOT NULL,"
        " created_at timestamptz)"
    )
    await platform.execute("GRANT SELECT ON public.outbox TO orpycamcp_exporter")
    rows = (*OUTBOX_ROWS, (0, "PENDING", 3 * 24 * 60), (1, "PROCESSED", 40 * 24 * 60))
    for partition, status, minutes_ago in rows:
        await platform.execute(
            "INSERT INTO public.outbox (partition, status, created_at)"
            " VALUES ($1, $2, now() - make_interval(mins => $3))",
            partition,
            status,
            minutes_ago,
        )
    # An old processed row without an arrival time: neither pending nor within a window, never read.
    await platform.execute("INSERT INTO public.outbox (partition, status, created_at) VALUES (1, 'PROCESSED', NULL)")
    config = OUTBOX.split("    states:")[0] + "    arrivals:\n      column: created_at\n      windows: [1h, 24h]\n"
    page = await scrape_once(
        platform.exporter_url, config, backlogs_config_file=write(tmp_path, config), signals="outbox"
    )
    assert page.measured("outbox") == 1
    assert page.family(ITEMS) == {}
    for partition in (0, 1):
        pending = sum(1 for p, s, _ in rows if p == partition and s != "PROCESSED")
        assert page.get(PENDING, backlog="outbox", group=str(partition)) == pending
        for window, minutes in WINDOWS.items():
            want = sum(1 for p, _, ago in rows if p == partition and ago < minutes)
            assert page.get(ARRIVALS, backlog="outbox", group=str(partition), window=window) == want


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "exporter", *args], capture_output=True, text=True, timeout=120)


async def test_a_state_outside_the_declared_values_is_unmeasured_and_named_by_diagnose(
    tenants: Platform, tmp_path: Path
) -> None:
    await insert(tenants, Row("acme", "face_match", "pending", 10))
    path = write(tmp_path, KYC)
    exporter = make_exporter(tenants.exporter_url, backlogs_config_file=path, signals="kyc_dead_letters")
    try:
        first = await scrape(exporter)
        assert first.measured("kyc_dead_letters") == 1
        await insert(tenants, Row("globex", "face_match", "archived", 10))
        page = await refresh(exporter)
        outcome = exporter.caches["kyc_dead_letters"].last
    finally:
        await exporter.close()
    assert page.measured("kyc_dead_letters") == 0
    assert [key for key in page.values if key[0].startswith("orpycamcp_backlog_")] == []
    assert outcome is not None
    assert outcome.failure is not None
    assert outcome.failure.reason == "unregistered_value"
    assert "archived" in outcome.failure.detail

    done = run("diagnose", "--database.url", tenants.exporter_url, "--backlogs.config-file", path)
    assert done.returncode == 1
    lines = done.stdout.splitlines()
    failing = [line for line in lines if line.startswith("FAIL kyc_dead_letters")]
    assert failing
    assert "unregistered_value" in failing[0]
    assert any("first failing tenant: 'globex'" in line and "archived" in line for line in lines), done.stdout


@pytest.mark.parametrize(
    ("row", "column"),
    [
        ("('face_match', NULL, now())", "status"),
        # A reprocessed row without an arrival time: read for its state, its arrival unknown.
        ("('face_match', 'reprocessed', NULL)", "created_at"),
    ],
    ids=["null-state", "null-arrival"],
)
async def test_a_null_in_the_state_or_arrival_column_makes_the_backlog_unmeasured(
    tenants: Platform, tmp_path: Path, row: str, column: str
) -> None:
    await tenants.execute("ALTER TABLE tenant_globex.dead_letter_queue ALTER COLUMN status DROP NOT NULL")
    await tenants.execute(f"INSERT INTO tenant_globex.dead_letter_queue (task_name, status, created_at) VALUES {row}")
    exporter = make_exporter(
        tenants.exporter_url, backlogs_config_file=write(tmp_path, KYC), signals="kyc_dead_letters"
    )
    try:
        page = await scrape(exporter)
        outcome = exporter.caches["kyc_dead_letters"].last
        with pytest.raises(ContractViolation) as raised:
            await exporter.caches["kyc_dead_letters"].signal.measure(exporter.sources)
    finally:
        await exporter.close()
    assert page.measured("kyc_dead_letters") == 0
    assert outcome is not None
    assert outcome.failure is not None
    assert outcome.failure.reason == "contract_violation"
    assert str(raised.value) == f"signal kyc_dead_letters: dead_letter_queue.{column}: NULL in a row read"


async def test_diagnose_does_not_warn_of_a_whole_table_read_for_a_states_backlog(
    tenants: Platform, tmp_path: Path
) -> None:
    """A backlog with states reads every row by design; one with arrivals only is
    told to index its arrival column beside its pending rows."""
    await tenants.execute(
        "INSERT INTO tenant_globex.dead_letter_queue (task_name, status, created_at)"
        " SELECT 'face_match', CASE WHEN i % 100 = 0 THEN 'pending' ELSE 'reprocessed' END, now() - interval '2 days'"
        " FROM generate_series(1, 8000) AS i"
    )
    await tenants.execute("VACUUM ANALYZE tenant_globex.dead_letter_queue")
    with_states = run(
        "diagnose", "--database.url", tenants.exporter_url, "--backlogs.config-file", write(tmp_path, KYC)
    )
    assert with_states.returncode == 0, with_states.stdout + with_states.stderr
    assert "warn" not in with_states.stdout

    arrivals_only = without(KYC, "states")
    assert arrivals_only != KYC
    done = run(
        "diagnose", "--database.url", tenants.exporter_url, "--backlogs.config-file", write(tmp_path, arrivals_only)
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "with a sequential scan for its pending rows and recent arrivals" in done.stdout
    table = '"tenant_globex"."dead_letter_queue"'
    pending_index = f'CREATE INDEX ON {table} ("status", "task_name", "created_at")'
    assert f'{pending_index}; CREATE INDEX ON {table} ("created_at")' in done.stdout

    await tenants.execute(pending_index)
    await tenants.execute("VACUUM ANALYZE tenant_globex.dead_letter_queue")
    indexed = run(
        "diagnose", "--database.url", tenants.exporter_url, "--backlogs.config-file", write(tmp_path, arrivals_only)
    )
    assert indexed.returncode == 0, indexed.stdout + indexed.stderr
    assert "warn" not in indexed.stdout, indexed.stdout


def scanned_tables(plan: dict[str, Any]) -> list[str]:
    """The tables a plan reads, once per scan node."""
    found = [f"{plan['Schema']}.{plan['Relation Name']}"] if "Relation Name" in plan else []
    for child in plan.get("Plans", []):
        found += scanned_tables(child)
    return found


async def test_pending_oldest_states_and_arrivals_come_from_one_scan_of_each_table(
    tenants: Platform, tmp_path: Path
) -> None:
    for row in ROWS:
        await insert(tenants, row)
    (backlog,) = parse_declarations(KYC, "test").backlogs
    where, args = predicate(backlog)
    statement = batch_sql(backlog, where, ["tenant_acme", "tenant_globex"])
    rows = await tenants.fetch("EXPLAIN (FORMAT JSON, VERBOSE) " + statement, *args)
    plan = json.loads(rows[0][0])[0]["Plan"]
    assert sorted(scanned_tables(plan)) == ["tenant_acme.dead_letter_queue", "tenant_globex.dead_letter_queue"]
