"""Identifier quoting for tenant schemas: always quoted, never truncated."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.errors import InvalidTenantSlug
from exporter.reasons import Reason
from exporter.sources.postgres.identifiers import MAX_IDENTIFIER_BYTES, SCHEMA_PREFIX, quote_identifier, tenant_schema

names = st.text(st.characters(blacklist_characters="\x00", codec="utf-8"), max_size=80)


def unquote(quoted: str) -> str:
    """PostgreSQL's reading of a quoted identifier: the outer quotes go, a doubled quote is one."""
    assert len(quoted) >= 2
    assert quoted[0] == quoted[-1] == '"'
    return quoted[1:-1].replace('""', '"')


@pytest.mark.parametrize(
    ("name", "quoted"),
    [
        ("acme", '"acme"'),
        ("Acme", '"Acme"'),  # quoted, so case is kept
        ('a"b', '"a""b"'),
        ('"', '""""'),
        ("; DROP SCHEMA public; --", '"; DROP SCHEMA public; --"'),
        ("ünïcødé", '"ünïcødé"'),
        ("", '""'),
    ],
)
def test_quote_identifier(name: str, quoted: str) -> None:
    assert quote_identifier(name) == quoted


@given(names)
def test_quoting_reads_back_as_the_same_name(name: str) -> None:
    quoted = quote_identifier(name)
    assert unquote(quoted) == name
    # Every quote inside is doubled: the identifier cannot end early.
    assert quoted[1:-1].replace('""', "").count('"') == 0


def test_nul_cannot_be_quoted() -> None:
    with pytest.raises(ValueError, match="NUL"):
        quote_identifier("a\x00b")


def test_tenant_schema_is_the_prefixed_slug_quoted() -> None:
    assert tenant_schema("dlq", "acme") == '"tenant_acme"'
    assert tenant_schema("dlq", 'o"brien') == '"tenant_o""brien"'


@pytest.mark.parametrize(
    ("slug", "fits"),
    [
        ("a" * (MAX_IDENTIFIER_BYTES - len(SCHEMA_PREFIX)), True),  # 63 bytes: the longest identifier
        ("a" * (MAX_IDENTIFIER_BYTES - len(SCHEMA_PREFIX) + 1), False),  # 64: PostgreSQL would truncate it
        ("é" * 28, True),  # 7 + 56 bytes
        ("é" * 29, False),  # 29 characters, 65 bytes: bytes count, not characters
    ],
)
def test_the_limit_is_63_bytes_of_schema_name(slug: str, fits: bool) -> None:
    if fits:
        assert unquote(tenant_schema("preservation", slug)) == SCHEMA_PREFIX + slug
    else:
        with pytest.raises(InvalidTenantSlug) as caught:
            tenant_schema("preservation", slug)
        assert caught.value.signal == "preservation"
        assert caught.value.reason is Reason.INVALID_TENANT
        assert f"exceeds {MAX_IDENTIFIER_BYTES}" in str(caught.value)
        assert slug not in str(caught.value)  # the slug is not repeated into logs


def test_a_slug_with_nul_is_an_invalid_tenant() -> None:
    with pytest.raises(InvalidTenantSlug) as caught:
        tenant_schema("dlq", "a\x00b")
    assert caught.value.signal == "dlq"


@given(names)
def test_any_slug_is_quoted_whole_or_refused(slug: str) -> None:
    size = len((SCHEMA_PREFIX + slug).encode("utf-8"))
    if size > MAX_IDENTIFIER_BYTES:
        with pytest.raises(InvalidTenantSlug):
            tenant_schema("dlq", slug)
    else:
        assert unquote(tenant_schema("dlq", slug)) == SCHEMA_PREFIX + slug
