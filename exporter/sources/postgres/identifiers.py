"""Identifier quoting for tenant schemas: never string pasting of raw slugs."""

from __future__ import annotations

from exporter.errors import InvalidTenantSlug

SCHEMA_PREFIX = "tenant_"
# PostgreSQL silently truncates longer identifiers (NAMEDATALEN - 1 bytes), which
# could make one tenant's schema name point at another's: refuse instead.
MAX_IDENTIFIER_BYTES = 63


def quote_identifier(name: str) -> str:
    """Quote an identifier the way PostgreSQL's quote_ident does, always."""
    if "\x00" in name:
        raise ValueError("an identifier cannot contain NUL")
    return '"' + name.replace('"', '""') + '"'


def tenant_schema(signal: str, slug: str) -> str:
    """The quoted schema name of a tenant, checked to fit an identifier."""
    name = SCHEMA_PREFIX + slug
    size = len(name.encode("utf-8"))
    if size > MAX_IDENTIFIER_BYTES:
        raise InvalidTenantSlug(signal, f"schema name of {size} bytes exceeds {MAX_IDENTIFIER_BYTES}")
    if "\x00" in slug:
        raise InvalidTenantSlug(signal, "slug contains NUL")
    return quote_identifier(name)
