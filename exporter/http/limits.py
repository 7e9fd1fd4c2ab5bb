"""uvicorn's httptools protocol with the limits it lacks: a request head must
arrive within a time limit and fit in a size limit, and every connection is
accounted in a ConnectionBook, which sheds the longest idle one at the cap.

uvicorn's keep-alive timeout only runs between requests, and httptools takes
request lines and headers of any size; without these limits a client that
sends half a request (or nothing) holds a connection forever, and enough of
them starve the scraper.
"""

from __future__ import annotations

import asyncio

import httptools
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from exporter.http.connections import ConnectionBook

MAX_HEAD_BYTES = 16 * 1024


class RequestHeadTooLarge(httptools.HttpParserError):
    """Raised from a parser callback; uvicorn answers 400 and closes."""


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    head_timeout: float  # set by bounded_protocol, from --web.request-head-timeout
    max_head_bytes = MAX_HEAD_BYTES
    book: ConnectionBook | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._head_timer: asyncio.TimerHandle | None = None
        if self.book is not None and not self.book.opened(self):
            transport.close()  # at the cap and every connection busy
            return
        self._arm_head_timer()

    def shed(self) -> None:
        """Closed by the book to make room under the cap."""
        self._disarm_head_timer()
        if not self.transport.is_closing():
            self.transport.close()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.head_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.max_head_bytes:
            raise RequestHeadTooLarge(f"request head over {self.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._head_bytes = 0
        self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._disarm_head_timer()
        if self.book is not None:
            self.book.busy(self)
        super().on_headers_complete()

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.book is not None and not self.transport.is_closing():
            self.book.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        if self.book is not None:
            self.book.closed(self)
        super().connection_lost(exc)


def bounded_protocol(book: ConnectionBook | None, head_timeout: float) -> type[BoundedHttpToolsProtocol]:
    """The protocol class for one server: its book (None: connections not counted) and its head time limit."""

    class Protocol(BoundedHttpToolsProtocol):
        pass

    Protocol.book = book
    Protocol.head_timeout = head_timeout
    return Protocol
