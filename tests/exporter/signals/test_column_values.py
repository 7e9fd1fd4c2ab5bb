"""A property over each typed contract column's value space, against the real
PostgreSQL: whatever type the column has and whatever value PostgreSQL holds
in it, the signal is measured with exactly that value or raises a contract
violation that names the column, never anything else (never internal_error)."""

from __future__ import annotations

import asyncio
from collections.abc import Coroutine, Iterator
from datetime import UTC, datetime
from typing import TypeVar

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from devkit.servers import PostgresServer
from exporter.errors import ColumnTypeMismatch, ContractViolation
from registry.families import AUDIT_BREAKS, AUDIT_LAST_VERIFICATION, AUDIT_VERIFICATION_OK, DLQ_OLDEST
from tests.contract_columns import BREAKS, CREATED_AT, FINISHED_AT, VERIFICATION_OK, Column, measured_varied, value_of
from tests.hypotheses import examples
from tests.platform import Platform, at, create_platform

# Types that hold times, and types that do not: each of them is refused by name.
TIME_TYPES = ("timestamptz", "timestamp", "date")
NOT_TIME_TYPES = ("text", "bigint", "interval")
# What PostgreSQL holds and Python's datetime cannot, and one time far in the future.
BEYOND_PYTHON = ("'infinity'", "'-infinity'", "'10000-01-01'", "'294276-12-31'", "'4713-01-01 BC'", "'0001-12-31 BC'")
FAR_FUTURE = "'5000-01-01'"
# Ordinary times end before the test runs: none lies in the future tolerance's reach.
ORDINARY = st.datetimes(min_value=datetime(1, 1, 2), max_value=datetime(2025, 12, 31))

T = TypeVar("T")
PROPERTY = settings(max_examples=examples(15, 100), deadline=None)


def run(coroutine: Coroutine[object, object, T]) -> T:
    return asyncio.run(coroutine)


@pytest.fixture(scope="module")
def acme(pg_server: PostgresServer) -> Iterator[Platform]:
    """One tenant with one pending event, one complete audit run: each example rewrites one column."""

    async def build() -> Platform:
        platform = await create_platform(pg_server)
        await platform.add_tenant("acme")
        await platform.add_dead_letter("acme", "e1", "signature-service", "pending", at("2026-11-01 10:00:00"))
        await platform.add_audit_run("complete", at("2026-11-02 00:00:00"), breaks=1, declared_breaks=1)
        return platform

    platform = asyncio.run(build())
    yield platform
    asyncio.run(platform.drop())


def time_literal(value: datetime, sql_type: str) -> tuple[str, float]:
    """`value` as a literal of `sql_type` (a wall-clock time in UTC), and the instant it stands for."""
    if sql_type == "date":
        day = value.date()
        return f"'{day.isoformat()}'", datetime.combine(day, datetime.min.time(), UTC).timestamp()
    if sql_type in NOT_TIME_TYPES:
        literal = {"text": f"'{value.isoformat()}'", "bigint": "1", "interval": "'1 day'"}[sql_type]
        return literal, 0.0
    return f"'{value.isoformat(sep=' ')}{'+00' if sql_type == 'timestamptz' else ''}'", value.replace(
        tzinfo=UTC
    ).timestamp()


@pytest.mark.parametrize("column", [CREATED_AT, FINISHED_AT], ids=["created_at", "finished_at"])
@PROPERTY
@given(
    sql_type=st.sampled_from(TIME_TYPES + NOT_TIME_TYPES),
    value=st.one_of(ORDINARY, st.sampled_from((*BEYOND_PYTHON, FAR_FUTURE))),
)
def test_a_time_column_is_its_exact_instant_or_a_named_violation(
    acme: Platform, column: Column, sql_type: str, value: datetime | str
) -> None:
    if isinstance(value, str):
        literal, instant = value, None
    else:
        literal, instant = time_literal(value, sql_type)
    if sql_type in NOT_TIME_TYPES and isinstance(value, str):
        literal = time_literal(datetime(2026, 1, 1), sql_type)[0]
    outcome = run(measured_varied(acme, column, sql_type, literal))
    if sql_type in NOT_TIME_TYPES:
        assert isinstance(outcome, ColumnTypeMismatch), outcome
        assert (outcome.column, outcome.found) == (column.where, sql_type)
    elif instant is None:
        assert isinstance(outcome, ContractViolation), outcome
        assert not isinstance(outcome, ColumnTypeMismatch), outcome
        assert outcome.where == column.where
    else:
        assert isinstance(outcome, list), outcome
        family = DLQ_OLDEST.name if column is CREATED_AT else AUDIT_LAST_VERIFICATION.name
        # PostgreSQL divides its microseconds in double precision as Python does.
        assert value_of(outcome, family) == pytest.approx(instant, abs=1e-5)


COUNT_TYPES = ("smallint", "integer", "bigint", "numeric", "double precision", "real", "text")


@PROPERTY
@given(
    sql_type=st.sampled_from(COUNT_TYPES),
    value=st.one_of(st.integers(min_value=-32768, max_value=32767), st.sampled_from(("'NaN'", "'Infinity'"))),
)
def test_a_count_is_its_exact_integer_or_a_named_violation(acme: Platform, sql_type: str, value: int | str) -> None:
    literal = f"'{value}'" if isinstance(value, int) else value
    if sql_type in ("smallint", "integer", "bigint") and isinstance(value, str):
        literal = "0"  # no NaN in an integer type
    outcome = run(measured_varied(acme, BREAKS, sql_type, literal))
    if sql_type not in ("smallint", "integer", "bigint"):
        assert isinstance(outcome, ColumnTypeMismatch), outcome
        assert outcome.column == BREAKS.where
    elif isinstance(value, int) and value < 0:
        assert isinstance(outcome, ContractViolation), outcome
        assert (outcome.where, outcome.problem) == (BREAKS.where, f"negative value {value}")
    else:
        assert value_of(outcome, AUDIT_BREAKS.name) == (value if isinstance(value, int) else 0)


@PROPERTY
@given(
    sql_type=st.sampled_from(("boolean", "text", "integer", "char(5)")),
    value=st.sampled_from(("true", "false", "t", "f", "1", "0", "yes", "no")),
)
def test_a_verification_is_a_boolean_or_a_named_violation(acme: Platform, sql_type: str, value: str) -> None:
    literal = f"'{value}'::boolean" if sql_type == "boolean" else f"'{value}'::boolean::int::text::{sql_type}"
    if sql_type == "integer":
        literal = f"'{value}'::boolean::int"
    outcome = run(measured_varied(acme, VERIFICATION_OK, sql_type, literal))
    if sql_type != "boolean":
        assert isinstance(outcome, ColumnTypeMismatch), outcome
        assert (outcome.column, outcome.expected) == (VERIFICATION_OK.where, ("bool",))
    else:
        truth = value in ("true", "t", "1", "yes")
        assert value_of(outcome, AUDIT_VERIFICATION_OK.name) == (1 if truth else 0)


def test_the_oracle_reads_a_date_as_midnight_utc() -> None:
    # The property's own arithmetic, checked once against a known instant.
    assert time_literal(datetime(2026, 11, 1, 10), "date") == ("'2026-11-01'", at("2026-11-01 00:00:00").timestamp())
    assert time_literal(datetime(2026, 11, 1, 10), "timestamp") == (
        "'2026-11-01 10:00:00'",
        at("2026-11-01 10:00:00").timestamp(),
    )
