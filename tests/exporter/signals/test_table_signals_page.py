"""The built-in table signals (dlq, preservation) on the default page, byte
for byte: their lines are what the page carried before they became shipped
declarations of the one table-signal mechanism (exporter.signals.backlog).

The independent truth is read here, tenant by tenant, one plain query per
table through the admin connection (not the exporter's batched statements),
and written out in the page's format: the HELP and TYPE lines as the page has
always carried them, every registered label value in registry order, zeros
filled, the oldest only where an event is pending."""

from __future__ import annotations

import pytest

from exporter.contract import sql
from exporter.exposition.text import format_value
from registry.families import TABLE_SIGNAL_FAMILIES
from registry.values import ARTIFACTS, ORIGIN_GROUPS, PHASES
from tests.platform import Platform
from tests.scrapes import scrape_once

pytestmark = pytest.mark.anyio

DLQ_HEAD = (
    "# HELP orpycamcp_dlq_pending_events Dead-lettered events pending an administrator, summed over all tenants.\n"
    "# TYPE orpycamcp_dlq_pending_events gauge\n"
)
OLDEST_HEAD = (
    "# HELP orpycamcp_dlq_oldest_pending_timestamp_seconds"
    " Unix time the oldest pending dead-lettered event was created; absent when none is pending.\n"
    "# TYPE orpycamcp_dlq_oldest_pending_timestamp_seconds gauge\n"
)
PRESERVATION_HEAD = (
    "# HELP orpycamcp_preservation_exhausted_artifacts"
    " Preservation artifacts whose retries are exhausted, summed over all tenants.\n"
    "# TYPE orpycamcp_preservation_exhausted_artifacts gauge\n"
)
# The families of the two table signals, whatever other families share their prefix.
FAMILIES = tuple(f.name for pair in TABLE_SIGNAL_FAMILIES.values() for f in pair if f is not None)

# Thirty tenants more than the demo's, each with dead letters and retries of every
# status, spread over the value sets by the tenant's number; every fifth suspended
# (measured), every seventh still provisioning (skipped).
MORE_TENANTS = """
INSERT INTO public.tenants (slug, status, provisioning_status)
SELECT 't' || g, CASE WHEN g % 5 = 0 THEN 'suspended' ELSE 'active' END,
       CASE WHEN g % 7 = 0 THEN 'provisioning' ELSE 'active' END
FROM generate_series(1, 30) g;
SELECT public.orpycamcp_create_tenant_schema('t' || g) FROM generate_series(1, 30) g;
SELECT public.orpycamcp_grant_tenant(slug) FROM public.tenants;
DO $$
DECLARE g int;
BEGIN
  FOR g IN 1..30 LOOP
    EXECUTE format(
      'INSERT INTO tenant_t%s.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at)'
      ' SELECT ''e'' || n, ''t%s'', (ARRAY[''signature-service'', ''workflow-service'','
      ' ''notification-service'', ''knowledge-service''])[1 + (n * %s) %% 4],'
      ' (ARRAY[''pending'', ''resolved'', ''discarded''])[1 + n %% 3],'
      ' timestamptz ''2026-11-01 00:00:00+00'' - make_interval(secs => n * 3607.25 + %s * 61)'
      ' FROM generate_series(1, %s) n', g, g, g, g, g % 9);
    EXECUTE format(
      'INSERT INTO tenant_t%s.preservation_retry (artifact_id, artifact, phase, status, attempts)'
      ' SELECT ''a'' || n, (ARRAY[''document'', ''attachment'', ''signature'', ''timestamp'','
      ' ''electronic_index'', ''aip_package'', ''audit_anchor''])[1 + (n + %s) %% 7],'
      ' (ARRAY[''reconcile'', ''renewal'', ''packaging'', ''sealing'', ''fixity'', ''replication'','
      ' ''transfer''])[1 + (n * 3 + %s) %% 7], (ARRAY[''exhausted'', ''retrying'', ''done''])[1 + n %% 3], 4'
      ' FROM generate_series(1, %s) n', g, g, g, 2 * g);
  END LOOP;
END $$;
"""


async def measured_schemas(platform: Platform) -> list[str]:
    rows = await platform.fetch(
        "SELECT 'tenant_' || slug AS schema FROM public.tenants WHERE provisioning_status = 'active' ORDER BY slug"
    )
    return [row["schema"] for row in rows]


async def expected_lines(platform: Platform) -> str:
    pending: dict[str, int] = dict.fromkeys(ORIGIN_GROUPS, 0)
    oldest: dict[str, float] = {}
    exhausted: dict[tuple[str, str], int] = {(a, p): 0 for a in ARTIFACTS for p in PHASES}
    for schema in await measured_schemas(platform):
        for row in await platform.fetch(
            "SELECT origin_group, count(*) AS n, extract(epoch FROM min(created_at))::float8 AS first"
            f' FROM "{schema}".evento_dead_letter WHERE status = $1 GROUP BY origin_group',
            "pending",
        ):
            pending[row["origin_group"]] += row["n"]
            oldest[row["origin_group"]] = min(oldest.get(row["origin_group"], row["first"]), row["first"])
        for row in await platform.fetch(
            f'SELECT artifact, phase, count(*) AS n FROM "{schema}".preservation_retry WHERE status = $1'
            " GROUP BY artifact, phase",
            "exhausted",
        ):
            exhausted[row["artifact"], row["phase"]] += row["n"]
    return (
        DLQ_HEAD
        + "".join(f'orpycamcp_dlq_pending_events{{origin_group="{g}"}} {pending[g]}\n' for g in ORIGIN_GROUPS)
        + (OLDEST_HEAD if oldest else "")
        + "".join(
            f'orpycamcp_dlq_oldest_pending_timestamp_seconds{{origin_group="{g}"}} {format_value(oldest[g])}\n'
            for g in ORIGIN_GROUPS
            if g in oldest
        )
        + PRESERVATION_HEAD
        + "".join(
            f'orpycamcp_preservation_exhausted_artifacts{{artifact="{a}",phase="{p}"}} {exhausted[a, p]}\n'
            for a in ARTIFACTS
            for p in PHASES
        )
    )


def table_signal_lines(raw: bytes) -> str:
    """The page's lines of the dlq and preservation families, HELP and TYPE included, in page order."""
    lines = raw.decode("utf-8").splitlines(keepends=True)
    return "".join(line for line in lines if family_of(line) in FAMILIES)


def family_of(line: str) -> str:
    """The family a page line belongs to: the first word of a HELP or TYPE line, or a sample's name."""
    return line.removeprefix("# HELP ").removeprefix("# TYPE ").split(" ", 1)[0].split("{", 1)[0]


async def test_the_demo_page_carries_the_table_signals_byte_for_byte(platform: Platform) -> None:
    await platform.execute(sql("demo.sql"))
    await platform.execute(MORE_TENANTS)
    page = await scrape_once(platform.exporter_url, database_batch_size="7")
    assert page.measured("dlq") == page.measured("preservation") == 1
    expected = await expected_lines(platform)
    assert expected.count("\n") == 3 * 2 + 4 + 4 + 49  # HELP and TYPE; every group has one pending here
    assert table_signal_lines(page.raw) == expected


async def test_with_nothing_pending_the_oldest_family_is_absent_byte_for_byte(platform: Platform) -> None:
    await platform.add_tenant("acme")
    page = await scrape_once(platform.exporter_url)
    assert page.measured("dlq") == page.measured("preservation") == 1
    assert table_signal_lines(page.raw) == await expected_lines(platform)
