"""The contract's typed columns as the tests vary them: a column given another
type (its values dropped), then one value written to every row, and the
signal measured alone on it: its samples, or the contract violation it raises."""

from __future__ import annotations

from dataclasses import dataclass

from exporter.errors import ContractViolation
from exporter.samples import Sample
from exporter.signals import BY_NAME
from tests.platform import Platform
from tests.scrapes import make_exporter


@dataclass(frozen=True)
class Column:
    signal: str
    table: str  # as the SQL names it
    name: str
    sql_type: str  # the contract's
    literal: str  # a value the contract allows

    @property
    def where(self) -> str:
        """The column as a contract violation names it (table.column, no schema)."""
        return f"{self.table.split('.')[-1].strip(chr(34))}.{self.name}"


CREATED_AT = Column("dlq", '"tenant_acme".evento_dead_letter', "created_at", "timestamptz", "'2026-11-01 10:00Z'")
FINISHED_AT = Column("audit_chain", "public.audit_chain_runs", "finished_at", "timestamptz", "'2026-11-02 00:00Z'")
BREAKS = Column("audit_chain", "public.audit_chain_runs", "breaks", "integer", "1")
VERIFICATION_OK = Column("audit_chain", "public.audit_chain_runs", "verification_ok", "boolean", "true")


async def retype(platform: Platform, column: Column, sql_type: str, literal: str) -> None:
    """`column` made of `sql_type`, every row of its table holding `literal` (an SQL expression)."""
    await platform.execute(
        f"ALTER TABLE {column.table} ALTER {column.name} DROP NOT NULL;"
        f" ALTER TABLE {column.table} ALTER {column.name} TYPE {sql_type} USING NULL;"
        f" UPDATE {column.table} SET {column.name} = {literal}"
    )


async def measured_varied(
    platform: Platform, column: Column, sql_type: str, literal: str
) -> list[Sample] | ContractViolation:
    """`column`'s signal measured with the column of `sql_type` holding `literal`;
    the column as the contract has it afterwards."""
    await retype(platform, column, sql_type, literal)
    try:
        return await measured(platform, column.signal)
    finally:
        await retype(platform, column, column.sql_type, column.literal)


async def measured(platform: Platform, signal: str, **options: str) -> list[Sample] | ContractViolation:
    """The samples of `signal` measured alone on the platform, or the contract violation it raises
    (any other exception goes through)."""
    exporter = make_exporter(platform.exporter_url, signals=signal, **options)
    try:
        return list(await BY_NAME[signal].measure(exporter.sources))
    except ContractViolation as exc:
        return exc
    finally:
        await exporter.close()


def value_of(samples: list[Sample] | ContractViolation, family: str) -> float:
    assert isinstance(samples, list), samples
    [value] = [sample.value for sample in samples if sample.family == family]
    return value
