"""The rendered page: gzipped once, on demand; rendered once per distinct set of outcomes."""

from __future__ import annotations

import gzip

from hypothesis import given
from hypothesis import strategies as st

from exporter.page import Page, PageCache


@given(st.binary(max_size=4096))
def test_the_gzip_form_decompresses_to_the_page(raw: bytes) -> None:
    page = Page(raw)
    assert page.raw == raw
    assert gzip.decompress(page.gzipped) == raw


def test_the_gzip_form_is_made_once() -> None:
    page = Page(b"orpycamcp_signal_measured 1\n" * 100)
    first = page.gzipped
    assert page.gzipped is first
    assert len(first) < len(page.raw)


def test_the_gzip_form_is_the_same_bytes_for_the_same_page() -> None:
    """No timestamp in the gzip header (mtime 0): replicas and restarts serve identical bytes."""
    raw = b"orpycamcp_exporter_build_info 1\n"
    assert Page(raw).gzipped == Page(raw).gzipped
    assert Page(raw).gzipped[4:8] == b"\x00\x00\x00\x00"


class Renderer:
    """Counts the renders, each producing a page that names its call."""

    def __init__(self) -> None:
        self.calls = 0

    def __call__(self) -> bytes:
        self.calls += 1
        return f"render {self.calls}\n".encode()


def test_nothing_is_cached_before_the_first_render() -> None:
    assert PageCache().get(((0, True),)) is None


def test_a_page_is_rendered_once_per_key() -> None:
    cache, render = PageCache(), Renderer()
    key = ((1, True), (1, True))
    page = cache.get_or_render(key, render)
    assert page.raw == b"render 1\n"
    assert cache.get_or_render(key, render) is page
    assert cache.get(key) is page
    assert render.calls == 1


def test_a_new_key_renders_a_new_page_and_drops_the_old() -> None:
    cache, render = PageCache(), Renderer()
    old_key, new_key = ((1, True),), ((2, True),)
    old = cache.get_or_render(old_key, render)
    new = cache.get_or_render(new_key, render)
    assert new is not old
    assert new.raw == b"render 2\n"
    assert cache.get(new_key) is new
    assert cache.get(old_key) is None  # only the last page is kept
    assert render.calls == 2


def test_a_signal_reported_unmeasured_is_another_key() -> None:
    """The same outcomes, one of them not ready for this scrape: another page."""
    cache, render = PageCache(), Renderer()
    complete = cache.get_or_render(((3, True), (5, True)), render)
    hurried = cache.get_or_render(((3, True), (5, False)), render)
    assert hurried is not complete
    assert cache.get(((3, True), (5, True))) is None
