"""The contract's column types and time zones against the real PostgreSQL: a
column of another type is a contract violation naming the column and both
types (from the statement's own description, in both pool modes), values
Python cannot hold are named, and a naive timestamp is read as UTC whatever
the process's TZ, across tenants and batches of different column types."""

from __future__ import annotations

import os
import time
from collections.abc import Iterator

import pytest

from exporter.errors import ColumnTypeMismatch, ContractViolation
from registry.families import AUDIT_BREAKS, AUDIT_LAST_VERIFICATION, AUDIT_VERIFICATION_OK, DLQ_OLDEST
from tests.contract_columns import BREAKS, CREATED_AT, FINISHED_AT, VERIFICATION_OK, Column, measured, retype, value_of
from tests.platform import Platform, at
from tests.scrapes import scrape_once

pytestmark = pytest.mark.anyio


@pytest.fixture
async def acme(platform: Platform) -> Platform:
    """One tenant with one pending event, and one complete audit run."""
    await platform.add_tenant("acme")
    await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))
    await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=1, declared_breaks=1)
    return platform


@pytest.fixture
def tokyo() -> Iterator[None]:
    """The process in Asia/Tokyo (UTC+9), restored afterwards."""
    before = os.environ.get("TZ")
    os.environ["TZ"] = "Asia/Tokyo"
    time.tzset()
    try:
        assert time.timezone == -9 * 3600
        yield
    finally:
        if before is None:
            del os.environ["TZ"]
        else:
            os.environ["TZ"] = before
        time.tzset()


@pytest.mark.parametrize("pool_mode", ["session", "transaction"])
async def test_a_text_false_verification_is_a_contract_violation_never_1(acme: Platform, pool_mode: str) -> None:
    await retype(acme, VERIFICATION_OK, "text", "'false'")
    raised = await measured(acme, "audit_chain", database_pool_mode=pool_mode)
    assert isinstance(raised, ColumnTypeMismatch), raised
    assert (raised.signal, raised.column, raised.found, raised.expected) == (
        "audit_chain",
        "audit_chain_runs.verification_ok",
        "text",
        ("bool",),
    )
    assert str(raised) == (
        "signal audit_chain: audit_chain_runs.verification_ok: column of type text, where the contract states bool"
    )
    page = await scrape_once(acme.exporter_url, signals="audit_chain", database_pool_mode=pool_mode)
    assert page.measured("audit_chain") == 0
    assert page.failure_reasons("audit_chain") == {"contract_violation"}
    assert page.family(AUDIT_VERIFICATION_OK.name) == {}


@pytest.mark.parametrize(
    ("column", "sql_type", "literal"),
    [
        (BREAKS, "numeric", "'NaN'"),
        (BREAKS, "numeric", "1"),
        (BREAKS, "double precision", "'Infinity'"),
        (BREAKS, "text", "'1'"),
        (VERIFICATION_OK, "integer", "1"),
        (CREATED_AT, "text", "'2026-11-01 10:00:00'"),
        (CREATED_AT, "bigint", "1793527200"),
        (FINISHED_AT, "text", "'2026-11-02'"),
        (FINISHED_AT, "time", "'10:00'"),
    ],
)
async def test_a_column_of_another_type_names_the_column_and_both_types(
    acme: Platform, column: Column, sql_type: str, literal: str
) -> None:
    await retype(acme, column, sql_type, literal)
    raised = await measured(acme, column.signal)
    assert isinstance(raised, ColumnTypeMismatch), raised
    assert raised.column == column.where
    found = {"double precision": "float8", "integer": "int4", "time": "time without time zone"}
    assert raised.found == found.get(sql_type, sql_type)
    assert raised.found in str(raised)
    assert " or ".join(raised.expected).split(" or ")[-1] in str(raised)


@pytest.mark.parametrize(("sql_type", "read"), [("smallint", 1), ("bigint", 2**40)])
async def test_every_integer_type_is_a_count(acme: Platform, sql_type: str, read: int) -> None:
    await retype(acme, BREAKS, sql_type, str(read))
    assert value_of(await measured(acme, "audit_chain"), AUDIT_BREAKS.name) == read


@pytest.mark.parametrize("column", [CREATED_AT, FINISHED_AT])
@pytest.mark.parametrize("sql_type", ["timestamptz", "timestamp", "date"])
@pytest.mark.parametrize(
    ("literal", "problem"),
    [
        ("'infinity'", "infinite timestamp"),
        ("'-infinity'", "infinite timestamp"),
        ("'10000-01-01'", "is past the year 9999"),
        ("'294276-12-31'", "is past the year 9999"),
        ("'4713-01-01 BC'", "is before the year 1 (BC)"),
        ("'0001-01-01 BC'", "is before the year 1 (BC)"),
    ],
)
async def test_a_time_python_cannot_hold_is_named_never_an_internal_error(
    acme: Platform, column: Column, sql_type: str, literal: str, problem: str
) -> None:
    await retype(acme, column, sql_type, literal)
    raised = await measured(acme, column.signal)
    assert isinstance(raised, ContractViolation), raised
    assert raised.where == column.where
    assert problem in raised.problem


@pytest.mark.parametrize("column", [CREATED_AT, FINISHED_AT])
async def test_a_naive_timestamp_is_read_as_utc_whatever_the_process_zone(
    acme: Platform, tokyo: None, column: Column
) -> None:
    await retype(acme, column, "timestamp", "'2026-11-01 10:00:00'")
    family = DLQ_OLDEST.name if column is CREATED_AT else AUDIT_LAST_VERIFICATION.name
    assert value_of(await measured(acme, column.signal), family) == at("2026-11-01 10:00:00").timestamp()


@pytest.mark.parametrize("column", [CREATED_AT, FINISHED_AT])
async def test_a_date_is_midnight_utc_whatever_the_process_zone(acme: Platform, tokyo: None, column: Column) -> None:
    await retype(acme, column, "date", "'2026-11-01'")
    family = DLQ_OLDEST.name if column is CREATED_AT else AUDIT_LAST_VERIFICATION.name
    assert value_of(await measured(acme, column.signal), family) == at("2026-11-01 00:00:00").timestamp()


@pytest.mark.parametrize("batch_size", ["1", "10"])  # each tenant a batch of its own; all in one
@pytest.mark.parametrize("oldest_in", ["naive", "aware"])
async def test_tenants_whose_column_types_differ_give_the_exact_oldest(
    acme: Platform, tokyo: None, batch_size: str, oldest_in: str
) -> None:
    created = {"naive": "2026-10-01 08:00:00", "aware": "2026-10-02 08:00:00"}
    if oldest_in == "aware":
        created = {"naive": created["aware"], "aware": created["naive"]}
    await acme.add_tenant("globex")
    await acme.add_dead_letter("globex", "e1", "signature-service", "pending", at(created["aware"]))
    await acme.execute(
        'ALTER TABLE "tenant_acme".evento_dead_letter ALTER created_at TYPE timestamp USING created_at AT TIME ZONE'
        f" 'UTC'; UPDATE \"tenant_acme\".evento_dead_letter SET created_at = '{created['naive']}'"
    )
    page = await scrape_once(acme.exporter_url, signals="dlq", database_batch_size=batch_size)
    assert page.measured("dlq") == 1
    assert page.get("orpycamcp_dlq_pending_events", origin_group="signature-service") == 2
    assert page.get(DLQ_OLDEST.name, origin_group="signature-service") == at("2026-10-01 08:00:00").timestamp()
