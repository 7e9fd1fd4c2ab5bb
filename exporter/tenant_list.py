"""Which tenants are measured: the contract's tenant list (the `tenants:` key
of the declarations file), a table, its slug column and the conditions a
tenant's row must meet, turned into one statement whose values are bound.

The shipped default is the platform's public.tenants, every tenant whose
provisioning_status is 'active'. A NULL in a condition's column is read too:
that tenant may be measured or not, so no sum over the others is complete
(the tenant list is then a contract violation)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple

from exporter.conditions import Condition, Value, predicate_of
from exporter.sources.postgres.identifiers import quote_identifier


class TenantQuery(NamedTuple):
    sql: str
    args: tuple[Value, ...]


@dataclass(frozen=True)
class TenantList:
    table: tuple[str, str] = ("public", "tenants")  # (schema, table)
    slug: str = "slug"
    measured: tuple[Condition, ...] = (Condition("provisioning_status", ("active",)),)

    @property
    def name(self) -> str:
        """The table and the columns of its conditions, as an operator writes them."""
        return ".".join(self.table)

    @property
    def condition_columns(self) -> tuple[str, ...]:
        return tuple(dict.fromkeys(condition.column for condition in self.measured))

    def describe(self) -> str:
        """The list as check-config says it: `public.tenants (slug) where provisioning_status = 'active'`."""
        conditions = " and ".join(
            f"{c.column} {'not ' if c.negated else ''}in {list(c.values)!r}"
            if len(c.values) > 1
            else f"{c.column} {'<>' if c.negated else '='} {c.values[0]!r}"
            for c in self.measured
        )
        return f"{self.name} ({self.slug}) where {conditions}"

    def query(self) -> TenantQuery:
        """The slugs of the tenants measured, and whether any row has a NULL where a condition looks."""
        where, args = predicate_of(self.measured)
        nulls = " OR ".join(f"{quote_identifier(column)} IS NULL" for column in self.condition_columns)
        table = ".".join(quote_identifier(part) for part in self.table)
        return TenantQuery(
            f"SELECT {quote_identifier(self.slug)} AS slug, ({nulls}) AS unstated FROM {table}"
            f" WHERE ({where}) OR {nulls} ORDER BY 1",
            args,
        )


DEFAULT_TENANTS = TenantList()
