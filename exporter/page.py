"""The rendered /metrics page, kept until an outcome changes: rendered (and
gzipped) once per distinct set of outcomes, never per request.

A short tail (the HTTP server's own families, which change with every
connection) may follow the page. Its gzip form costs no recompression: the
page is deflated once up to a byte boundary (a sync flush), and each response
appends the tail as a final stored block and the gzip trailer, whose CRC-32
continues the page's. One valid gzip member, whatever decoder reads it.
"""

from __future__ import annotations

import asyncio
import struct
import zlib
from collections.abc import Callable, Hashable, Iterable

from exporter.pacing import Pacer

# gzip header: magic, deflate, no flags, mtime 0, no extra flags, unknown OS.
_GZIP_HEADER = b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff"
_STORED_MAX = 0xFFFF


def _stored_blocks(data: bytes) -> bytes:
    """`data` as deflate stored blocks, the last one final (starts on a byte boundary)."""
    chunks = [data[i : i + _STORED_MAX] for i in range(0, len(data), _STORED_MAX)] or [b""]
    out = bytearray()
    for index, chunk in enumerate(chunks):
        final = index == len(chunks) - 1
        out += bytes((1 if final else 0,)) + struct.pack("<HH", len(chunk), len(chunk) ^ 0xFFFF) + chunk
    return bytes(out)


class Page:
    """A rendered page; its open gzip form is made once, on first demand."""

    def __init__(self, raw: bytes) -> None:
        self.raw = raw
        self._open_gzip: bytes | None = None
        self._crc = zlib.crc32(raw)
        # The last tail and its forms: while the connections do not change, neither do they.
        self._tail: bytes | None = None
        self._joined = raw
        self._joined_gzip: bytes | None = None

    def _deflated(self) -> bytes:
        if self._open_gzip is None:
            compressor = zlib.compressobj(6, zlib.DEFLATED, -zlib.MAX_WBITS)
            self._open_gzip = _GZIP_HEADER + compressor.compress(self.raw) + compressor.flush(zlib.Z_SYNC_FLUSH)
        return self._open_gzip

    def _remember(self, tail: bytes) -> None:
        if tail != self._tail:
            self._tail = tail
            self._joined = self.raw + tail
            self._joined_gzip = None

    def body(self, tail: bytes = b"") -> bytes:
        """The page followed by `tail`."""
        self._remember(tail)
        return self._joined

    def gzipped(self, tail: bytes = b"") -> bytes:
        """The page followed by `tail`, as one gzip member."""
        self._remember(tail)
        if self._joined_gzip is None:
            trailer = struct.pack("<II", zlib.crc32(tail, self._crc), (len(self.raw) + len(tail)) & 0xFFFFFFFF)
            self._joined_gzip = self._deflated() + _stored_blocks(tail) + trailer
        return self._joined_gzip


class PageCache:
    """The last page rendered, and the key of the outcomes it was rendered from."""

    def __init__(self) -> None:
        self._key: Hashable | None = None
        self._page = Page(b"")

    def get(self, key: Hashable) -> Page | None:
        return self._page if key == self._key else None

    async def get_or_render_aside(self, key: Hashable, chunks: Callable[[], Iterable[bytes]]) -> Page:
        """The page of `key`, rendered from `chunks` unless it is the last one kept,
        without holding up the health checks and cached scrapes the event loop
        serves meanwhile (a page of a hundred thousand series takes a second to
        render): the page is rendered on the loop a chunk at a time,
        handing it back between chunks (exporter/pacing.py), then joined,
        checksummed and compressed in a worker thread, where zlib lets go of the
        interpreter. Rendering in the thread would not do: its string work holds
        the interpreter lock, which the loop's thread then waits for at every
        turn. `chunks` must be pure."""
        if key != self._key:
            pacer = Pacer()
            parts: list[bytes] = []
            for chunk in chunks():
                parts.append(chunk)
                if pacer.due():
                    await pacer.hand_back()
            page = await asyncio.to_thread(_made, parts)
            if key != self._key:
                self._page = page
                self._key = key
        return self._page


def _made(parts: list[bytes]) -> Page:
    page = Page(b"".join(parts))
    page.gzipped()  # compressed here rather than by the first request, on the loop
    return page
