from __future__ import annotations

import pytest

from registry.values import ARTIFACTS, PHASES
from tests.platform import Platform
from tests.scrapes import PRESERVATION_PREFIX, scrape_once, value_series

pytestmark = pytest.mark.anyio


async def test_exhausted_artifacts_per_artifact_and_phase(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.add_tenant("globex", status="suspended")
    await platform.add_tenant("initech", provisioning_status="provisioning")
    await platform.add_retry("acme", "d1", "document", "sealing", "exhausted")
    await platform.add_retry("acme", "d2", "document", "sealing", "retrying")
    await platform.add_retry("acme", "d3", "document", "fixity", "done")
    await platform.add_retry("globex", "d1", "document", "sealing", "exhausted")
    await platform.add_retry("globex", "p1", "aip_package", "replication", "exhausted")
    await platform.add_retry("initech", "p1", "aip_package", "replication", "exhausted")

    page = await scrape_once(platform.exporter_url, signals="preservation")

    family = page.family("orpycamcp_preservation_exhausted_artifacts")
    assert page.measured("preservation") == 1
    assert len(family) == len(ARTIFACTS) * len(PHASES) == 49
    nonzero = {labels: value for labels, value in family.items() if value}
    assert nonzero == {
        (("artifact", "document"), ("phase", "sealing")): 2,
        (("artifact", "aip_package"), ("phase", "replication")): 1,
    }


@pytest.mark.parametrize(("artifact", "phase"), [("spreadsheet", "sealing"), ("document", "shredding")])
async def test_value_outside_the_registry_makes_it_unmeasured(platform: Platform, artifact: str, phase: str) -> None:
    await platform.add_tenant("acme")
    await platform.add_retry("acme", "d1", "document", "sealing", "exhausted")
    await platform.add_retry("acme", "x1", artifact, phase, "exhausted")
    page = await scrape_once(platform.exporter_url)
    assert page.measured("preservation") == 0
    assert value_series(page, PRESERVATION_PREFIX) == []
    assert page.measured("dlq") == 1


async def test_null_artifact_is_contract_drift(platform: Platform) -> None:
    await platform.add_tenant("acme")
    await platform.execute('ALTER TABLE "tenant_acme".preservation_retry ALTER COLUMN artifact DROP NOT NULL')
    await platform.execute(
        'INSERT INTO "tenant_acme".preservation_retry (artifact_id, artifact, phase, status) '
        "VALUES ('x', NULL, 'sealing', 'exhausted')"
    )
    page = await scrape_once(platform.exporter_url, signals="preservation")
    assert page.measured("preservation") == 0
    assert value_series(page, PRESERVATION_PREFIX) == []
