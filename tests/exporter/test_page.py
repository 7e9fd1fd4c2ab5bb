"""The cached page and its gzip form with a per-response tail: one valid gzip
member for every decoder, equal to the page followed by the tail."""

from __future__ import annotations

import gzip
import zlib

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.page import Page


def decoded_by_zlib(data: bytes) -> bytes:
    """A single-member decoder, as strict as the one httpx uses: nothing may follow the member."""
    decoder = zlib.decompressobj(zlib.MAX_WBITS | 16)
    out = decoder.decompress(data)
    assert decoder.eof, "the gzip member is not closed"
    assert decoder.unused_data == b"", "bytes follow the gzip member"
    return out


@given(page=st.binary(max_size=5000), tail=st.binary(max_size=70_000))
def test_gzip_with_a_tail_is_the_page_and_the_tail(page: bytes, tail: bytes) -> None:
    cached = Page(page)
    compressed = cached.gzipped(tail)
    assert gzip.decompress(compressed) == page + tail
    assert decoded_by_zlib(compressed) == page + tail
    assert cached.body(tail) == page + tail


@pytest.mark.parametrize("tail", [b"", b"# TYPE x gauge\nx 1\n"])
def test_httpx_reads_the_gzip_form(tail: bytes) -> None:
    page = Page(b"# TYPE a gauge\na 1\n" * 200)
    response = httpx.Response(200, headers={"content-encoding": "gzip"}, content=page.gzipped(tail))
    assert response.read() == page.raw + tail


def test_the_page_is_deflated_once_for_every_tail() -> None:
    page = Page(b"a 1\n" * 10_000)
    first = page.gzipped(b"x 1\n")
    second = page.gzipped(b"x 2\n")
    # Same deflated prefix: only the stored tail and the trailer differ.
    common = len(first) - len(b"x 1\n") - 5 - 8
    assert first[:common] == second[:common]
    assert len(first) < len(page.raw) // 10
