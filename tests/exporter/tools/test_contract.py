"""`orpycamcp-exporter contract`: one YAML document that round-trips through
yaml.safe_load, names every value of the registry (built in and declared),
and names what the signals' statements and the reference DDL hold."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import yaml

from devkit.catalog import catalog_of
from exporter.audit_runs import DEFAULT_AUDIT_RUNS
from exporter.backlogs import load_declarations
from exporter.contract.tables import DLQ, PRESERVATION
from exporter.declarations import NO_DECLARATIONS
from exporter.signals import backlog, housekeeping, migration_lock
from exporter.tools.contract import contract_document
from registry import BUILTIN, META, Registry
from tests.commands import refused_in_one_line, run_exporter
from tests.platform import Platform

ROOT = Path(__file__).resolve().parents[3]
EXAMPLE = ROOT / "deploy" / "backlogs.example.yml"
SETTING = "--backlogs.config-file (ORPYCAMCP_BACKLOGS_CONFIG_FILE)"


def words(node: object) -> Iterator[str]:
    """Every key and scalar of a loaded document, as text."""
    if isinstance(node, dict):
        for key, value in node.items():
            yield str(key)
            yield from words(value)
    elif isinstance(node, list):
        for item in node:
            yield from words(item)
    else:
        yield str(node)


def registry_values(registry: Registry) -> set[str]:
    """Every label value the signals' value families may carry (not the exporter's own families)."""
    return {
        value
        for family in registry.families
        if family.signal != META
        for combination in family.combinations
        for value in combination
    }


def printed(*args: str) -> dict[str, Any]:
    done = run_exporter("contract", *args)
    assert done.returncode == 0, done.stderr
    assert done.stderr == ""
    loaded = yaml.safe_load(done.stdout)
    assert isinstance(loaded, dict)
    return loaded


def test_the_shipped_contract_round_trips_and_names_every_registry_value() -> None:
    loaded = printed()
    assert loaded == contract_document(NO_DECLARATIONS)
    assert yaml.safe_load(yaml.safe_dump(loaded)) == loaded
    assert list(loaded["signals"]) == list(BUILTIN.signals)
    missing = registry_values(BUILTIN) - set(words(loaded))
    assert missing == set()
    assert loaded["tenants"] == {
        "table": "public.tenants",
        "slug": "slug",
        "schema": "tenant_<slug>",
        "measured": {"provisioning_status": "active"},
    }
    assert "backlogs" not in loaded
    assert "streams" not in loaded


def test_with_a_declarations_file_it_names_what_the_file_declares(tmp_path: Path) -> None:
    text = EXAMPLE.read_text() + (
        "  signals:\n    streams_ledger:\n      consumer_groups:\n        orpycamcp.ledger.events: [posting]\n"
        "tenants:\n  measured:\n    provisioning_status: {not: [provisioning]}\n"
    )
    path = tmp_path / "declarations.yml"
    path.write_text(text)
    loaded = printed("--backlogs.config-file", str(path))
    declared = load_declarations(str(path), SETTING)
    assert loaded == contract_document(declared)
    registry = catalog_of(declared.backlogs, declared.streams).registry
    assert registry_values(registry) - set(words(loaded)) == set()
    assert list(loaded["backlogs"]) == ["kyc_dead_letters", "outbox"]
    assert loaded["backlogs"]["outbox"]["pending"] == {"status": {"not": ["PROCESSED"]}}
    assert loaded["backlogs"]["outbox"]["groups"] == ["0", "1", "2", "3"]  # label values: text
    assert loaded["streams"]["signals"] == {
        "streams_ledger": {"consumer_groups": {"orpycamcp.ledger.events": ["posting"]}}
    }
    assert loaded["tenants"]["measured"] == {"provisioning_status": {"not": ["provisioning"]}}


def test_a_bad_declarations_file_is_refused_in_one_line(tmp_path: Path) -> None:
    path = tmp_path / "bad.yml"
    path.write_text("tenants:\n  table: tenants\n")
    assert "key 'tenants.table'" in refused_in_one_line("contract", "--backlogs.config-file", str(path))


def test_the_migration_lock_statement_reads_the_key_the_contract_names() -> None:
    lock = contract_document(NO_DECLARATIONS)["signals"]["migration_lock"]["advisory_lock"]
    assert int.from_bytes(lock["key"].encode("ascii"), "big") == lock["bigint"]
    for column in ("classid", "objid", "objsubid"):
        assert f"l.{column} = {lock[column]}" in migration_lock.LOCK_SQL, column


def test_the_statements_read_what_the_contract_names() -> None:
    signals = contract_document(NO_DECLARATIONS)["signals"]
    tables = {
        name: backlog.predicate(declaration) for name, declaration in (("dlq", DLQ), ("preservation", PRESERVATION))
    }
    statements = {
        **{
            name: (backlog.batch_sql(declaration, tables[name].sql, ['"tenant_x"']), tables[name].args)
            for name, declaration in (("dlq", DLQ), ("preservation", PRESERVATION))
        },
        "audit_chain": DEFAULT_AUDIT_RUNS.query(),
    }
    for name, (sql, args) in statements.items():
        signal = signals[name]
        assert all(f'"{part}"' in sql for part in signal["table"].split(".")), name
        for column, value in {**signal.get("pending", {}), **signal.get("complete", {})}.items():
            # Every statement binds its status words.
            assert f'"{column}" = $1' in sql, (name, column)
            assert args == (value,), (name, column)
        columns = [
            signal.get("group_by"),
            signal.get("oldest"),
            *(label["column"] for label in signal.get("labels", {}).values()),
            *signal.get("columns", {}).values(),
            *signal.get("latest", []),
        ]
        for column in filter(None, columns):
            assert column in sql, (name, column)


def test_the_housekeeping_statement_reads_what_the_contract_names() -> None:
    tables = contract_document(NO_DECLARATIONS)["signals"]["housekeeping"]["tables"]
    sql = housekeeping.batch_sql(['"tenant_x"'])
    for table, read in tables.items():
        assert f'"tenant_x".{table}' in sql, table
        assert f"(min({read['oldest']}) + interval '0')" in sql, table
        for column, values in read.get("terminal", {}).items():
            assert f"{column} IN ({', '.join(repr(value) for value in values)})" in sql, table
        for label in read.get("labels", {}).values():
            assert f"{label['column']} AS grp" in sql, table


@pytest.mark.anyio
async def test_the_reference_ddl_holds_every_table_and_column_the_contract_names(platform: Platform) -> None:
    await platform.add_tenant("acme")
    document = contract_document(NO_DECLARATIONS)
    wanted: set[tuple[str, str, str]] = set()
    tenants = document["tenants"]
    schema, table = tenants["table"].split(".")
    wanted |= {(schema, table, tenants["slug"]), *((schema, table, column) for column in tenants["measured"])}
    for signal in document["signals"].values():
        # migration_lock reads PostgreSQL's own catalogs (its `tables`), not the platform's DDL.
        if signal["source"] != "postgresql" or "table" not in signal:
            continue
        schema, table = ("tenant_acme", signal["table"]) if signal["scope"] == "tenant" else signal["table"].split(".")
        columns = [
            *signal.get("pending", {}),
            *signal.get("complete", {}),
            signal.get("group_by"),
            signal.get("oldest"),
            *(label["column"] for label in signal.get("labels", {}).values()),
            *signal.get("columns", {}).values(),
            *signal.get("latest", []),
        ]
        wanted |= {(schema, table, column) for column in columns if column}
    for table, read in document["signals"]["housekeeping"]["tables"].items():
        columns = [
            read["oldest"],
            *read.get("terminal", {}),
            *(label["column"] for label in read.get("labels", {}).values()),
        ]
        wanted |= {("tenant_acme", table, column) for column in columns}
    rows = await platform.fetch(
        "SELECT table_schema, table_name, column_name FROM information_schema.columns"
        " WHERE table_schema IN ('public', 'tenant_acme')"
    )
    held = {(row["table_schema"], row["table_name"], row["column_name"]) for row in rows}
    # tenants: 2 columns; dlq, preservation: 3 each; audit_chain: 6; housekeeping: resolved_at, processed_at.
    assert len(wanted) == 16
    assert wanted - held == set()
