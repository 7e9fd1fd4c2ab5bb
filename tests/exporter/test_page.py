"""The rendered page: gzipped once, on demand; rendered once per distinct set of
outcomes. Its gzip form with a per-response tail is one valid gzip member for
every decoder, equal to the page followed by the tail."""

from __future__ import annotations

import gzip
import zlib

import httpx
import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.page import Page, PageCache


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


@given(st.binary(max_size=4096))
def test_the_gzip_form_decompresses_to_the_page(raw: bytes) -> None:
    page = Page(raw)
    assert page.raw == raw
    assert gzip.decompress(page.gzipped()) == raw


def test_the_gzip_form_is_made_once() -> None:
    page = Page(b"orpycamcp_signal_measured 1\n" * 100)
    first = page.gzipped()
    assert page.gzipped() is first
    assert len(first) < len(page.raw)


def test_the_gzip_form_is_the_same_bytes_for_the_same_page() -> None:
    """No timestamp in the gzip header (mtime 0): replicas and restarts serve identical bytes."""
    raw = b"orpycamcp_exporter_build_info 1\n"
    assert Page(raw).gzipped() == Page(raw).gzipped()
    assert Page(raw).gzipped()[4:8] == b"\x00\x00\x00\x00"


class Renderer:
    """Counts the renders, each producing a page that names its call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return f"render {self.calls}\n".encode()

    def chunks(self) -> tuple[bytes, ...]:
        return (self(),)


def test_nothing_is_cached_before_the_first_render() -> None:
    assert PageCache().get(((0, True),)) is None


@pytest.mark.anyio
async def test_a_page_is_rendered_once_per_key() -> None:
    cache, render = PageCache(), Renderer()
    key = ((1, True), (1, True))
    page = await cache.get_or_render_aside(key, render.chunks)
    assert page.raw == b"render 1\n"
    assert await cache.get_or_render_aside(key, render.chunks) is page
    assert cache.get(key) is page
    assert render.calls == 1


@pytest.mark.anyio
async def test_a_new_key_renders_a_new_page_and_drops_the_old() -> None:
    cache, render = PageCache(), Renderer()
    old_key, new_key = ((1, True),), ((2, True),)
    old = await cache.get_or_render_aside(old_key, render.chunks)
    new = await cache.get_or_render_aside(new_key, render.chunks)
    assert new is not old
    assert new.raw == b"render 2\n"
    assert cache.get(new_key) is new
    assert cache.get(old_key) is None  # only the last page is kept
    assert render.calls == 2


@pytest.mark.anyio
async def test_a_signal_reported_unmeasured_is_another_key() -> None:
    """The same outcomes, one of them not ready for this scrape: another page."""
    cache, render = PageCache(), Renderer()
    complete = await cache.get_or_render_aside(((3, True), (5, True)), render.chunks)
    hurried = await cache.get_or_render_aside(((3, True), (5, False)), render.chunks)
    assert hurried is not complete
    assert cache.get(((3, True), (5, True))) is None
