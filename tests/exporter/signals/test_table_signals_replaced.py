"""A platform whose tables differ from the shipped contract: its preservation
table has another name, another status word and another artifact set, and a
fifth service dead-letters under a new origin_group. The shipped contract
leaves dlq and preservation unmeasured; the printed contract, edited where
the platform differs and given as the declarations file, measures both
exactly, into the same families and labels (ADR-041)."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.different_platform import ARTIFACTS, ORIGIN_GROUPS, PHASES, different_platform, edited_contract
from tests.platform import Platform
from tests.scrapes import Page, scrape_once

pytestmark = pytest.mark.anyio


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
    page = await scrape_once(platform.exporter_url, signals="dlq,preservation", backlogs_config_file=str(path))
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
