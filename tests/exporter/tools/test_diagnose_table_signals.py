"""`diagnose` holds the built-in table signals' declarations (dlq,
preservation) against the real PostgreSQL with the checks of declared
backlogs: against a platform whose preservation table, status word and
artifacts differ and whose fifth service dead-letters under a new
origin_group, it names each difference; given the contract edited where the
platform differs, it has nothing to say."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from tests.commands import run_exporter
from tests.different_platform import different_platform, edited_contract
from tests.platform import Platform

pytestmark = pytest.mark.anyio

# The shipped contract's preservation, its table and column renamed; its status word and artifacts not.
RENAMED_ONLY = (
    "    table: preservation_retry\n    pending:\n      status: exhausted\n",
    "    table: preservacion_reintento\n    pending:\n      estado: exhausted\n",
)


def diagnose(platform: Platform, tmp_path: Path, contract: str | None) -> subprocess.CompletedProcess[str]:
    args = ["diagnose", "--database-url", platform.exporter_url, "--signals", "dlq,preservation"]
    if contract is not None:
        path = tmp_path / "contract.yml"
        path.write_text(contract)
        args += ["--backlogs.config-file", str(path)]
    return run_exporter(*args)


def warnings(done: subprocess.CompletedProcess[str]) -> list[str]:
    return [line for line in done.stdout.splitlines() if line.startswith(("warn", "FAIL"))]


async def test_the_shipped_contract_names_the_table_and_the_origin_group(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    done = diagnose(platform, tmp_path, None)

    assert done.returncode == 1, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert (
        "warn preservation: table preservation_retry missing in 2 of 2 schemas: tenant_acme, tenant_globex;"
        " tenant_acme holds a similarly named table: preservacion_reintento"
    ) in lines
    assert (
        "warn dlq: evento_dead_letter.origin_group holds 1 value outside groups in the pending rows: 'billing' 2 rows"
    ) in lines


async def test_a_status_word_that_never_occurs_and_the_artifacts_are_named(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    shipped = run_exporter("contract").stdout
    assert shipped.count(RENAMED_ONLY[0]) == 1
    done = diagnose(platform, tmp_path, shipped.replace(*RENAMED_ONLY))

    lines = done.stdout.splitlines()
    assert (
        "warn preservation: preservacion_reintento.estado is never 'exhausted' in any row;"
        " it holds 'reintento_agotado' 6 rows, 'reintentando' 2 rows"
    ) in lines
    # No row is pending under the declared word: the artifacts of every row are checked.
    assert (
        "warn preservation: preservacion_reintento.artifact holds 3 values outside labels.artifact.values in every"
        " row: 'firma' 4 rows, 'expediente' 2 rows, 'sello' 2 rows"
    ) in lines
    assert "phase holds" not in done.stdout  # the phases are the shipped ones
    assert (
        "warn dlq: evento_dead_letter.origin_group holds 1 value outside groups in the pending rows: 'billing' 2 rows"
    ) in lines


async def test_a_pending_column_of_another_type_is_named(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    text = edited_contract().replace("      estado: reintento_agotado\n", "      attempts: reintento_agotado\n")
    done = diagnose(platform, tmp_path, text)

    assert (
        "warn preservation: tenant_acme.preservacion_reintento.attempts is of type integer,"
        " compared with text values in pending"
    ) in done.stdout.splitlines()


async def test_the_edited_contract_is_clean(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    done = diagnose(platform, tmp_path, edited_contract())

    assert done.returncode == 0, done.stdout + done.stderr
    assert warnings(done) == []
    lines = done.stdout.splitlines()
    assert any(line.startswith("ok   dlq: measurable") for line in lines), done.stdout
    assert any(line.startswith("ok   preservation: measurable") for line in lines), done.stdout
