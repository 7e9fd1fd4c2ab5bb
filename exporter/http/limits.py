"""uvicorn's httptools protocol with the limits it lacks: a request head must
arrive within a time limit and fit in a size limit, and every connection is
accounted in a ConnectionBook, which sheds at the cap the longest idle one of the
new connection's client, else of all.

uvicorn's keep-alive timeout only runs between requests, and httptools takes
request lines and headers of any size; without these limits a client that
sends half a request (or nothing) holds a connection forever, and enough of
them starve the scraper.

The size limit holds as bytes arrive: httptools keeps a header it has not seen
the end of in a buffer it copies on every read, so a header value that never
ends would be buffered (and copied) until the head timeout; here the bytes of
a head are counted in data_received, before the parser sees them, and the
connection is answered 400 and closed once they pass the limit, whatever the
header they belong to (plain and TLS alike: TLS hands over the decrypted bytes).

An idle keep-alive connection closes at its timeout whatever trickles in:
uvicorn cancels the timer on any byte received, so a CRLF every few seconds
(which the parser skips between requests), or the body bytes of a GET already
answered, kept it open for ever; here only the start of a new request does.

What is not body in the rest of a request (chunk extensions, trailers: a
trailer is a header that comes after the body, buffered by httptools the same
way) is counted too, from the end of the head to the end of the request, and
the connection closed once it passes the same limit.

An `Upgrade:` request (or a CONNECT: no WebSocket, HTTP/2 or tunnel is served)
is refused with 400 and the connection closed after the answer, since nothing
after it can be parsed as HTTP; without uvicorn's two WARNING lines advising a
WebSocket library. Malformed requests are logged at most once a minute per
client address, with the count of those not logged.
"""

from __future__ import annotations

import asyncio
import ipaddress
import logging
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Any

import httptools
from starlette.types import Receive, Scope, Send
from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

from exporter.http.connections import ConnectionBook

MAX_HEAD_BYTES = 16 * 1024
# What a head holds beyond what the limit counts (the URL, and each header's name and
# value plus 4): the method, the version, the line ends, spaces around values.
HEAD_SLACK_BYTES = 256
# Between two logged malformed requests of one client address; the addresses remembered.
WARNING_INTERVAL_SECONDS = 60.0
WARNED_PEERS = 1024
INVALID_REQUEST = "Invalid HTTP request received."
UPGRADE_REFUSED = b"Upgrade and CONNECT are not served: this exporter speaks HTTP/1.1 only.\n"
log = logging.getLogger("orpycamcp.http")


class RequestHeadTooLarge(httptools.HttpParserError):
    """Raised from a parser callback; uvicorn answers 400 and closes."""


class PeerWarnings:
    """Malformed-request warnings, at most one per client address per interval; the
    ones not logged are counted into the next. Bounded: the oldest address is forgotten."""

    def __init__(self, interval: float = WARNING_INTERVAL_SECONDS, peers: int = WARNED_PEERS) -> None:
        self.interval = interval
        self.peers = peers
        self._last: OrderedDict[str, tuple[float, int]] = OrderedDict()

    def warn(self, logger: logging.Logger, peer: str, message: str) -> None:
        now = time.monotonic()
        last, unlogged = self._last.get(peer, (None, 0))
        if last is not None and now - last < self.interval:
            self._last[peer] = (last, unlogged + 1)
            return
        self._last.pop(peer, None)
        self._last[peer] = (now, 0)
        while len(self._last) > self.peers:
            self._last.popitem(last=False)
        more = f", {unlogged} more suppressed since the last" if unlogged else ""
        logger.warning("%s (from %s; logged once a minute per client%s)", message, peer, more)


async def refuse_upgrade(scope: Scope, receive: Receive, send: Send) -> None:
    """The answer to an Upgrade or CONNECT request, in place of the app's."""
    headers = [
        (b"content-type", b"text/plain; charset=utf-8"),
        (b"content-length", str(len(UPGRADE_REFUSED)).encode()),
        (b"connection", b"close"),
    ]
    await send({"type": "http.response.start", "status": 400, "headers": headers})
    await send({"type": "http.response.body", "body": UPGRADE_REFUSED})


class BoundedHttpToolsProtocol(HttpToolsProtocol):
    request_head_timeout: float  # set by bounded_protocol, from --web.request-head-timeout
    max_head_bytes = MAX_HEAD_BYTES
    book: ConnectionBook | None = None
    warnings: PeerWarnings  # one per server, set by bounded_protocol
    # The web configuration's current client_allowed_sans (None: any certificate the CA signed).
    allowed_sans: Callable[[], frozenset[str] | None] | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._head_bytes = 0
        self._in_head = True  # the bytes received are (or start) a request head
        self._arrived = 0  # the bytes of the head in progress received so far
        self._framing = 0  # the bytes after the head that are not body (chunk framing, trailers)
        self._body = 0  # the body bytes of the request in progress
        self._upgraded = False
        self._head_timer: asyncio.TimerHandle | None = None
        if self.book is not None and not self.book.opened(self, self.client[0] if self.client else None):
            transport.close()  # at the cap and every connection busy
            return
        # Read from the class: a function stored on it is not a method of the connection.
        allowed = type(self).allowed_sans
        sans = allowed() if allowed is not None else None
        if sans is not None and not has_allowed_san(transport.get_extra_info("peercert"), sans):
            # client_allowed_sans: the handshake is done, no request is read.
            log.debug("a client certificate without an allowed SAN was disconnected")
            transport.close()
            return
        self._arm_head_timer()

    def shed(self) -> None:
        """Closed by the book to make room under the cap."""
        self._disarm_head_timer()
        if not self.transport.is_closing():
            self.transport.close()

    def _arm_head_timer(self) -> None:
        self._disarm_head_timer()
        self._head_timer = self.loop.call_later(self.request_head_timeout, self._head_timed_out)

    def _disarm_head_timer(self) -> None:
        if self._head_timer is not None:
            self._head_timer.cancel()
            self._head_timer = None

    def _head_timed_out(self) -> None:
        self._head_timer = None
        if not self.transport.is_closing():
            self.transport.close()

    def data_received(self, data: bytes) -> None:
        """uvicorn's, with the head counted before the parser sees it, what follows the head
        counted but for its body, and the keep-alive timer left running (only a request's
        start stops it: on_message_begin)."""
        if self._upgraded or self.transport.is_closing():
            return  # nothing after an Upgrade request is HTTP: the connection closes after its answer
        if not self._in_head:
            body = self._body
            self._feed(data)
            if not self._in_head:  # still the same request: all of it but its body is framing
                self._framing += len(data) - (self._body - body)
                if self._framing > self.max_head_bytes + HEAD_SLACK_BYTES and not self.transport.is_closing():
                    self._refuse(f"request framing and trailers over {self.max_head_bytes} bytes")
            return
        allowance = self.max_head_bytes + HEAD_SLACK_BYTES - self._arrived
        if len(data) > allowance:
            self._feed(data[:allowance])
            if self._in_head and not self.transport.is_closing():
                self._refuse(f"request head over {self.max_head_bytes} bytes")
            elif not self.transport.is_closing():
                self.data_received(data[allowance:])
            return
        self._arrived += len(data)
        self._feed(data)

    def _feed(self, data: bytes) -> None:
        try:
            self.parser.feed_data(data)
        except httptools.HttpParserUpgrade:
            self._upgraded = True  # refused (on_headers_complete), then closed
        except RequestHeadTooLarge as exc:
            self._refuse(str(exc))
        except httptools.HttpParserError:
            self._refuse(INVALID_REQUEST)

    def _refuse(self, why: str) -> None:
        """Answered 400 and closed; closed only once the head is past (its answer may be on its way)."""
        peer = self.client[0] if self.client else "an unknown address"
        self.warnings.warn(self.logger, peer, why)
        if self._in_head:
            self.send_400_response(INVALID_REQUEST)
        else:
            self.transport.close()

    def _count(self, size: int) -> None:
        self._head_bytes += size
        if self._head_bytes > self.max_head_bytes:
            raise RequestHeadTooLarge(f"request head over {self.max_head_bytes} bytes")

    def on_message_begin(self) -> None:
        super().on_message_begin()
        self._unset_keepalive_if_required()  # a request starts: not idle any more
        self._head_bytes = 0
        self._in_head = True
        self._arm_head_timer()

    def on_url(self, url: bytes) -> None:
        self._count(len(url))
        super().on_url(url)

    def on_header(self, name: bytes, value: bytes) -> None:
        self._count(len(name) + len(value) + 4)
        super().on_header(name, value)

    def on_headers_complete(self) -> None:
        self._disarm_head_timer()
        self._framing = self._body = 0
        if self.book is not None:
            self.book.busy(self)
        if not self.parser.should_upgrade():
            super().on_headers_complete()  # raises on a URL it cannot parse: refused as a head
        else:
            # Upgrade or CONNECT: refused in place of the app's answer, queued as any pipelined
            # request. The refusal reads no path (a CONNECT's is host:port, which uvicorn refuses).
            app, self.app, self.url = self.app, refuse_upgrade, b"/"
            try:
                super().on_headers_complete()
            finally:
                self.app = app
        self._in_head = False

    def on_body(self, body: bytes) -> None:
        self._body += len(body)
        super().on_body(body)

    def on_message_complete(self) -> None:
        super().on_message_complete()
        # What follows is the next request's head (CRLFs the parser skips included).
        self._in_head = True
        self._arrived = 0

    def on_response_complete(self) -> None:
        super().on_response_complete()
        if self.book is not None and not self.transport.is_closing():
            self.book.idle(self)

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_timer()
        if self.book is not None:
            self.book.closed(self)
        super().connection_lost(exc)


def has_allowed_san(peercert: Any, allowed: frozenset[str]) -> bool:
    """Whether a verified client certificate (ssl's decoded form) carries one of the
    allowed SANs, exactly: DNS names, IP addresses (compared as addresses), e-mail
    addresses and URIs, as the exporter-toolkit matches them."""
    entries = (peercert or {}).get("subjectAltName", ()) if isinstance(peercert, dict) else ()
    addresses = {_address(name) for name in allowed} - {None}
    for kind, value in entries:
        if kind == "IP Address":
            if _address(str(value).strip()) in addresses:
                return True
        elif value in allowed:
            return True
    return False


def _address(text: str) -> ipaddress.IPv4Address | ipaddress.IPv6Address | None:
    try:
        return ipaddress.ip_address(text)
    except ValueError:
        return None


def bounded_protocol(
    book: ConnectionBook | None,
    request_head_timeout: float,
    allowed_sans: Callable[[], frozenset[str] | None] | None = None,
) -> type[BoundedHttpToolsProtocol]:
    """The protocol class for one server: its book (None: connections not counted), its head
    time limit, and the client certificate SANs it admits."""

    class Protocol(BoundedHttpToolsProtocol):
        pass

    Protocol.book = book
    Protocol.request_head_timeout = request_head_timeout
    Protocol.warnings = PeerWarnings()
    Protocol.allowed_sans = allowed_sans
    return Protocol
