"""`diagnose` holds a declared backlog's contract against the real PostgreSQL:
the schemas lacking its table, the columns its table lacks, and the values
outside a value set, with their rows, largest first."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from devkit.backlogs import example_backlogs, pending_only, without
from tests.platform import Platform, at

pytestmark = pytest.mark.anyio

KYC = pending_only("kyc_dead_letters")
GROUPS = "    groups: [face_match, ocr_extraction, liveness_detection, doc_processing]\n"


def diagnose(platform: Platform, tmp_path: Path, text: str) -> subprocess.CompletedProcess[str]:
    path = tmp_path / "backlogs.yml"
    path.write_text(text)
    command = [sys.executable, "-m", "exporter", "diagnose", "--database-url", platform.exporter_url]
    command += ["--backlogs.config-file", str(path), "--signals", "kyc_dead_letters"]
    return subprocess.run(command, capture_output=True, text=True, timeout=120)


@pytest.fixture
async def kyc(platform: Platform) -> Platform:
    """Five active tenants; two lack the table; the others hold two task names nobody declared."""
    for slug in ("acme", "globex", "hooli", "initech", "umbrella"):
        await platform.add_tenant(slug)
    for slug in ("acme", "globex", "umbrella"):
        await platform.add_dead_letter_queue(slug)
    for slug, task, status in (
        ("acme", "face_match", "pending"),
        ("acme", "billing_sync", "pending"),
        ("acme", "billing_sync", "pending"),
        ("globex", "billing_sync", "pending"),
        ("globex", "kyc_resync", "pending"),
        ("globex", "kyc_resync", "reprocessed"),  # not pending: not read without states
        ("umbrella", "archive_export", "reprocessed"),
    ):
        await platform.add_dead_letter_task(slug, task, status, at("2026-11-01 10:00:00"))
    return platform


async def test_missing_tables_and_undeclared_values_are_named_largest_first(kyc: Platform, tmp_path: Path) -> None:
    done = diagnose(kyc, tmp_path, KYC)

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (
        "warn kyc_dead_letters: table dead_letter_queue missing in 2 of 5 schemas: tenant_hooli, tenant_initech"
        in lines
    )
    assert (
        "warn kyc_dead_letters: dead_letter_queue.task_name holds 2 values outside groups in the pending rows:"
        " 'billing_sync' 3 rows, 'kyc_resync' 1 row"
    ) in lines
    assert "     hint: declare them in groups, or opt in to a catch-all value" in "\n".join(lines)
    assert "archive_export" not in done.stdout  # in no pending row: the measurement never reads it


async def test_with_states_every_row_is_read_and_each_value_set_is_checked(kyc: Platform, tmp_path: Path) -> None:
    text = without(example_backlogs("kyc_dead_letters"), "arrivals").replace(
        "values: [pending, reprocessed, discarded]", "values: [pending, discarded]"
    )
    done = diagnose(kyc, tmp_path, text)

    assert (
        "warn kyc_dead_letters: dead_letter_queue.task_name holds 3 values outside groups in every row:"
        " 'billing_sync' 3 rows, 'kyc_resync' 2 rows, 'archive_export' 1 row"
    ) in done.stdout.splitlines()
    assert (
        "warn kyc_dead_letters: dead_letter_queue.status holds 1 value outside states.values in every row:"
        " 'reprocessed' 2 rows"
    ) in done.stdout.splitlines()


async def test_with_a_catch_all_the_values_are_said_not_warned(kyc: Platform, tmp_path: Path) -> None:
    text = KYC.replace(GROUPS, GROUPS + "    group_catch_all: other\n")
    done = diagnose(kyc, tmp_path, text)

    assert (
        "     kyc_dead_letters: dead_letter_queue.task_name holds 2 values outside groups in the pending rows,"
        " counted as 'other': 'billing_sync' 3 rows, 'kyc_resync' 1 row"
    ) in done.stdout.splitlines()
    assert "outside groups in the pending rows:" not in done.stdout


async def test_a_column_the_table_lacks_is_named(kyc: Platform, tmp_path: Path) -> None:
    text = KYC.replace("oldest: created_at", "oldest: created_on").replace("group_by: task_name", "group_by: task")
    done = diagnose(kyc, tmp_path, text)

    assert (
        "warn kyc_dead_letters: tenant_acme.dead_letter_queue has no column task, created_on"
        in done.stdout.splitlines()
    )
