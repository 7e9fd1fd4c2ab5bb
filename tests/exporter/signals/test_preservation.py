from __future__ import annotations

import pytest

from exporter.contract.tables import PRESERVATION
from exporter.errors import ContractViolation, InvalidTenantSlug, SourceNotConfigured
from exporter.signals import backlog
from exporter.sources import Sources
from registry.values import ARTIFACTS, PHASES
from tests.platform import Platform
from tests.scrapes import PRESERVATION_PREFIX, make_exporter, scrape_once, value_series

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


async def test_each_batch_of_tenants_adds_to_the_same_combination(platform: Platform) -> None:
    for number, slug in enumerate(("a", "b", "c"), start=1):
        await platform.add_tenant(slug)
        for artifact_id in range(number):
            await platform.add_retry(slug, f"d{artifact_id}", "document", "sealing", "exhausted")
    page = await scrape_once(platform.exporter_url, signals="preservation", database_batch_size="1")
    assert page.get("orpycamcp_preservation_exhausted_artifacts", artifact="document", phase="sealing") == 6


@pytest.mark.parametrize("column", ["artifact", "phase"])
async def test_an_exhausted_row_out_of_contract_names_its_columns(platform: Platform, column: str) -> None:
    await platform.add_tenant("acme")
    await platform.add_retry("acme", "d1", "document", "sealing", "exhausted")
    # Contract drift: the key (artifact_id, phase) and the NOT NULL gone.
    await platform.execute('ALTER TABLE "tenant_acme".preservation_retry DROP CONSTRAINT preservation_retry_pkey')
    await platform.execute(f'ALTER TABLE "tenant_acme".preservation_retry ALTER COLUMN {column} DROP NOT NULL')
    await platform.execute(f'UPDATE "tenant_acme".preservation_retry SET {column} = NULL')
    exporter = make_exporter(platform.exporter_url, signals="preservation")
    try:
        with pytest.raises(ContractViolation) as raised:
            await backlog.measure(PRESERVATION, exporter.sources)
    finally:
        await exporter.close()
    assert (raised.value.signal, raised.value.where, raised.value.problem) == (
        "preservation",
        f"preservation_retry.{column}",
        "NULL in a row read",
    )


async def test_without_a_database_preservation_names_itself_unconfigured() -> None:
    with pytest.raises(SourceNotConfigured) as raised:
        await backlog.measure(PRESERVATION, Sources())
    assert raised.value.signal == "preservation"


async def test_a_tenant_that_cannot_name_a_schema_is_refused_for_preservation(platform: Platform) -> None:
    await platform.execute("INSERT INTO public.tenants (slug) VALUES ($1)", "x" * 80)
    exporter = make_exporter(platform.exporter_url, signals="preservation")
    try:
        with pytest.raises(InvalidTenantSlug) as raised:
            await backlog.measure(PRESERVATION, exporter.sources)
    finally:
        await exporter.close()
    assert raised.value.signal == "preservation"
