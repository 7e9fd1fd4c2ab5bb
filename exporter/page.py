"""The rendered /metrics page, kept until an outcome changes: rendered (and
gzipped) once per distinct set of outcomes, never per request."""

from __future__ import annotations

import gzip
from collections.abc import Callable, Hashable


class Page:
    """A rendered page; its gzip form is made once, on first demand."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._gzipped: bytes | None = None

    @property
    def gzipped(self) -> bytes:
        if self._gzipped is None:
            self._gzipped = gzip.compress(self.raw, compresslevel=6, mtime=0)
        return self._gzipped


class PageCache:
    """The last page rendered, and the key of the outcomes it was rendered from."""

    def __init__(self) -> None:
        self._key: Hashable | None = None
        self._page = Page(b"")

    def get(self, key: Hashable) -> Page | None:
        return self._page if key == self._key else None

    def get_or_render(self, key: Hashable, render: Callable[[], bytes]) -> Page:
        if key != self._key:
            self._page = Page(render())
            self._key = key
        return self._page
