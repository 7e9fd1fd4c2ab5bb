"""A platform whose tables differ from the shipped contract: its preservation
table has another name, another status word and another artifact set, and a
fifth service dead-letters under a new origin_group. The shipped contract
leaves dlq and preservation unmeasured; the printed contract, edited where
the platform differs and given as the declarations file, measures both
exactly, into the same families and labels (ADR-041)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.commands import run_exporter
from tests.platform import Platform, at
from tests.scrapes import Page, scrape_once

pytestmark = pytest.mark.anyio

ARTIFACTS = ("expediente", "firma", "sello")  # replaces the shipped seven
PHASES = ("reconcile", "renewal", "packaging", "sealing", "fixity", "replication", "transfer")
ORIGIN_GROUPS = ("signature-service", "workflow-service", "notification-service", "knowledge-service", "billing")

# The platform as it is: in every tenant, preservacion_reintento and its estado column.
DIFFERENT_PLATFORM = """
ALTER TABLE {schema}.preservation_retry RENAME TO preservacion_reintento;
ALTER TABLE {schema}.preservacion_reintento RENAME COLUMN status TO estado;
ALTER TABLE {schema}.preservacion_reintento DROP CONSTRAINT preservation_retry_status_check;
"""


def edited_contract() -> str:
    """`orpycamcp-exporter contract`, edited where the platform differs, as an operator would."""
    done = run_exporter("contract")
    assert done.returncode == 0, done.stderr
    text = done.stdout
    edits = {
        "    table: preservation_retry\n    pending:\n      status: exhausted\n": (
            "    table: preservacion_reintento\n    pending:\n      estado: reintento_agotado\n"
        ),
        "    - knowledge-service\n": "    - knowledge-service\n    - billing\n",
        "        values:\n        - document\n        - attachment\n        - signature\n        - timestamp\n"
        "        - electronic_index\n        - aip_package\n        - audit_anchor\n": (
            "        values:\n" + "".join(f"        - {artifact}\n" for artifact in ARTIFACTS)
        ),
    }
    for old, new in edits.items():
        assert text.count(old) == 1, old
        text = text.replace(old, new)
    return text


async def different_platform(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")
    for slug in ("acme", "globex", "initech"):
        await platform.execute(DIFFERENT_PLATFORM.format(schema=f'"tenant_{slug}"'))
        for number, (artifact, phase, estado) in enumerate(
            [
                ("expediente", "sealing", "reintento_agotado"),
                ("firma", "fixity", "reintento_agotado"),
                ("firma", "fixity", "reintentando"),
                ("sello", "transfer", "reintento_agotado"),
            ]
        ):
            await platform.execute(
                f'INSERT INTO "tenant_{slug}".preservacion_reintento (artifact_id, artifact, phase, estado, attempts)'
                " VALUES ($1, $2, $3, $4, 3)",
                f"{slug}-{number}",
                artifact,
                phase,
                estado,
            )
    await platform.add_dead_letter("acme", "e1", "billing", "pending", at("2026-11-01 10:00:00"))
    await platform.add_dead_letter("acme", "e2", "signature-service", "pending", at("2026-11-02 10:00:00"))
    await platform.add_dead_letter("globex", "e1", "billing", "pending", at("2026-10-30 08:00:00"))
    await platform.add_dead_letter("globex", "e2", "billing", "resolved", at("2026-10-01 08:00:00"))
    await platform.add_dead_letter("initech", "e1", "billing", "pending", at("2026-01-01 00:00:00"))


async def truth(platform: Platform) -> tuple[dict[str, int], dict[str, float], dict[tuple[str, str], int]]:
    """Read apart, tenant by tenant, with the platform's own words."""
    pending = dict.fromkeys(ORIGIN_GROUPS, 0)
    oldest: dict[str, float] = {}
    exhausted = {(artifact, phase): 0 for artifact in ARTIFACTS for phase in PHASES}
    for slug in ("acme", "globex"):  # initech is still provisioning
        for row in await platform.fetch(
            f'SELECT origin_group, created_at FROM "tenant_{slug}".evento_dead_letter WHERE status = $1', "pending"
        ):
            pending[row["origin_group"]] += 1
            created = row["created_at"].timestamp()
            oldest[row["origin_group"]] = min(oldest.get(row["origin_group"], created), created)
        for row in await platform.fetch(
            f'SELECT artifact, phase FROM "tenant_{slug}".preservacion_reintento WHERE estado = $1',
            "reintento_agotado",
        ):
            exhausted[row["artifact"], row["phase"]] += 1
    return pending, oldest, exhausted


def labelled(page: Page, family: str) -> dict[tuple[str, ...], float]:
    return {tuple(value for _, value in labels): value for labels, value in page.family(family).items()}


async def test_the_shipped_contract_leaves_both_unmeasured(platform: Platform) -> None:
    await different_platform(platform)
    page = await scrape_once(platform.exporter_url, signals="dlq,preservation")
    assert page.measured("dlq") == page.measured("preservation") == 0
    assert page.failure_reasons("dlq") == {"unregistered_value"}
    assert page.failure_reasons("preservation") == {"missing_table"}


async def test_the_edited_contract_measures_both_exactly(platform: Platform, tmp_path: Path) -> None:
    await different_platform(platform)
    path = tmp_path / "contract.yml"
    path.write_text(edited_contract())
    page = await scrape_once(platform.exporter_url, signals="dlq,preservation", backlogs_file=str(path))
    assert page.measured("dlq") == page.measured("preservation") == 1
    pending, oldest, exhausted = await truth(platform)
    assert labelled(page, "orpycamcp_dlq_pending_events") == {(group,): n for group, n in pending.items()}
    assert pending["billing"] == 2
    assert labelled(page, "orpycamcp_dlq_oldest_pending_timestamp_seconds") == {(g,): t for g, t in oldest.items()}
    assert labelled(page, "orpycamcp_preservation_exhausted_artifacts") == exhausted
    assert sum(exhausted.values()) == 6
    # The label names stay ADR-041's.
    assert {name for labels in page.family("orpycamcp_preservation_exhausted_artifacts") for name, _ in labels} == {
        "artifact",
        "phase",
    }
    assert b"expediente" in page.raw
    assert b'artifact="document"' not in page.raw
