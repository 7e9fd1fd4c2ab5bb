"""audit_chain's runs and the streams signal's own pairs, replaced from the
printed contract: a platform whose audit runs live in another table with
other column names and another word for a complete run, and whose bus lacks
one of the shipped consumer groups. The shipped contract leaves each signal
unmeasured; the printed contract, edited and given as the declarations
file, measures each exactly into the same families (ADR-041)."""

from __future__ import annotations

from pathlib import Path

import pytest
from redis.asyncio import Redis

from devkit.servers import LocalRedis
from devkit.streams import create_stream_groups
from exporter.declarations import NO_DECLARATIONS
from exporter.tools.contract import contract_yaml
from registry.values import DEADLETTER_STREAMS, STREAM_GROUPS
from tests.platform import Platform, at
from tests.scrapes import STREAMS_PREFIX, scrape_once, value_series

pytestmark = pytest.mark.anyio

PRINTED = contract_yaml(NO_DECLARATIONS)
RUNS = """
CREATE TABLE auditoria.verificaciones (
    n bigserial PRIMARY KEY, terminada timestamp NOT NULL, alcance text NOT NULL,
    rupturas int, rupturas_declaradas int, correcta boolean);
GRANT USAGE ON SCHEMA auditoria TO orpycamcp_exporter;
GRANT SELECT ON auditoria.verificaciones TO orpycamcp_exporter;
INSERT INTO auditoria.verificaciones (terminada, alcance, rupturas, rupturas_declaradas, correcta) VALUES
    ('2026-12-01 10:00:00', 'completa', 3, 1, false),
    ('2026-12-01 11:00:00', 'parcial', 9, 9, true),
    ('2026-12-01 09:00:00', 'completa', 0, 0, true);
"""
AUDIT = """  audit_chain:
    source: postgresql
    scope: global
    table: auditoria.verificaciones
    complete:
      alcance: completa
    latest:
    - terminada
    - n
    columns:
      breaks: rupturas
      declared_breaks: rupturas_declaradas
      verification_ok: correcta
      finished_at: terminada
    timezone: Europe/Madrid
"""
MISSING = ("orpycamcp.workflow.events", "notification-service")  # the platform never created it
BILLING = ("orpycamcp.billing.events", "invoicing")


def edited(old: str, new: str, text: str = PRINTED) -> str:
    assert text.count(old) == 1, old
    return text.replace(old, new)


def write(tmp_path: Path, text: str) -> str:
    path = tmp_path / "contract.yml"
    path.write_text(text)
    return str(path)


async def test_audit_runs_of_another_table_measured_from_the_edited_contract(
    platform: Platform, tmp_path: Path
) -> None:
    await platform.execute("DROP TABLE public.audit_chain_runs; CREATE SCHEMA auditoria;" + RUNS)
    shipped = await scrape_once(platform.exporter_url, signals="audit_chain")
    assert shipped.measured("audit_chain") == 0
    assert shipped.failure_reasons("audit_chain") == {"missing_table"}

    start = PRINTED.index("  audit_chain:\n")
    text = PRINTED[:start] + AUDIT + PRINTED[PRINTED.index("  migration_lock:\n") :]
    page = await scrape_once(platform.exporter_url, signals="audit_chain", backlogs_config_file=write(tmp_path, text))

    assert page.measured("audit_chain") == 1
    # The latest complete run (the partial one is later): 10:00 in Madrid (UTC+1), 09:00 UTC.
    assert page.get("orpycamcp_audit_chain_breaks") == 3
    assert page.get("orpycamcp_audit_chain_declared_breaks") == 1
    assert page.get("orpycamcp_audit_chain_verification_ok") == 0
    finished = page.get("orpycamcp_audit_chain_last_verification_timestamp_seconds")
    assert finished == at("2026-12-01 09:00:00").timestamp()


def pairs_on(page_values: list[tuple[str, tuple[tuple[str, str], ...]]]) -> set[tuple[str, str]]:
    return {(dict(labels)["stream"], dict(labels)["group"]) for _, labels in page_values if "group" in dict(labels)}


async def test_a_shipped_pair_removed_from_the_edited_contract_is_not_read(
    redis: LocalRedis, db: Redis, tmp_path: Path
) -> None:
    present = tuple(pair for pair in STREAM_GROUPS if pair != MISSING)
    await create_stream_groups(db, (*present, BILLING))
    shipped = await scrape_once(None, redis.url, signals="streams")
    assert shipped.measured("streams") == 0
    assert shipped.failure_reasons("streams") == {"missing_group"}

    # The workflow stream's one pair removed, billing's added; one dead-letter stream dropped.
    text = edited(
        "      orpycamcp.workflow.events:\n      - notification-service\n",
        "      orpycamcp.billing.events:\n      - invoicing\n",
    )
    text = edited("    - orpycamcp.notification.deadletter\n", "", text)
    page = await scrape_once(None, redis.url, signals="streams", backlogs_config_file=write(tmp_path, text))

    assert page.measured("streams") == 1
    series = value_series(page, STREAMS_PREFIX)
    assert pairs_on(series) == {*present, BILLING}
    assert {dict(labels)["stream"] for name, labels in series if name.startswith("orpycamcp_deadletter_")} == set(
        DEADLETTER_STREAMS[:2]
    )
    assert page.get("orpycamcp_stream_pending_messages", stream=BILLING[0], group=BILLING[1]) == 0
