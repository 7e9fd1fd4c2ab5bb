"""The limits on HTTP connections, in process: the bounded protocol served on a
real socket by this test's event loop, the way uvicorn serves it, to a client
writing raw bytes. (The exporter process itself, with these limits: tests/faults/.)"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import ssl
from collections.abc import AsyncIterator

import pytest
import trustme
import uvicorn
from starlette.types import Receive, Scope, Send
from uvicorn.server import ServerState

from exporter.http.connections import ConnectionBook
from exporter.http.limits import (
    HEAD_SLACK_BYTES,
    INVALID_REQUEST,
    MAX_HEAD_BYTES,
    UPGRADE_REFUSED,
    PeerWarnings,
    bounded_protocol,
)

pytestmark = pytest.mark.anyio

# Generous bounds for what must happen (a close, an answer); never a measure of speed.
WITHIN = 10.0
# Short enough for a test to wait for it, long enough for a head written at once.
HEAD_TIMEOUT = 0.3


class App:
    """Answers "ok", after `hold` is set if given (a request being answered)."""

    def __init__(self, hold: asyncio.Event | None = None, delay: float = 0.0) -> None:
        self.hold = hold
        self.delay = delay
        self.requests = 0

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        assert scope["type"] == "http"
        self.requests += 1
        if self.hold is not None:
            await self.hold.wait()
        await asyncio.sleep(self.delay)
        await send({"type": "http.response.start", "status": 200, "headers": [(b"content-length", b"2")]})
        await send({"type": "http.response.body", "body": b"ok"})


CA = trustme.CA()
SERVER_CERT = CA.issue_cert("127.0.0.1")


def server_tls() -> ssl.SSLContext:
    context = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    SERVER_CERT.configure_cert(context)
    return context


def client_tls() -> ssl.SSLContext:
    context = ssl.create_default_context()
    CA.configure_trust(context)
    return context


@contextlib.asynccontextmanager
async def serving(
    app: App,
    book: ConnectionBook | None = None,
    request_head_timeout: float = WITHIN,
    keep_alive: float = 60,
    tls: ssl.SSLContext | None = None,
) -> AsyncIterator[int]:
    """The port of a server of `app` with the bounded protocol, as uvicorn builds it
    (the keep-alive timeout longer than any test unless given; over TLS if given)."""
    config = uvicorn.Config(
        app,
        http=bounded_protocol(book, request_head_timeout),
        ws="none",  # as the exporter's server (exporter/http/server.py)
        lifespan="off",
        log_config=None,
        access_log=False,
    )
    # uvicorn times keep-alive with call_later, which takes a fraction of a second too
    # (its annotation says int): the tests' short timeouts keep them cheap.
    config.timeout_keep_alive = keep_alive  # type: ignore[assignment]
    config.load()
    state = ServerState()
    protocol = config.http_protocol_class
    loop = asyncio.get_running_loop()
    server = await loop.create_server(
        lambda: protocol(config=config, server_state=state, app_state={}, _loop=loop),  # type: ignore[call-arg]
        "127.0.0.1",
        0,
        ssl=tls,
    )
    try:
        yield server.sockets[0].getsockname()[1]
    finally:
        server.close()
        for connection in list(state.connections):
            connection.shutdown()
        await server.wait_closed()


class Client:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader = reader
        self.writer = writer

    @classmethod
    async def connect(cls, port: int, tls: ssl.SSLContext | None = None, source: str = "127.0.0.1") -> Client:
        """A connection from `source` (another loopback address: another client)."""
        reader, writer = await asyncio.open_connection("127.0.0.1", port, ssl=tls, local_addr=(source, 0))
        return cls(reader, writer)

    async def response(self) -> tuple[int, bytes]:
        """The status and body of the next response."""
        head = await asyncio.wait_for(self.reader.readuntil(b"\r\n\r\n"), WITHIN)
        status = int(head.split(b" ", 2)[1])
        length = next(
            int(line.split(b":", 1)[1]) for line in head.split(b"\r\n") if line.lower().startswith(b"content-length:")
        )
        return status, await asyncio.wait_for(self.reader.readexactly(length), WITHIN)

    async def request(self, head: bytes) -> tuple[int, bytes]:
        self.writer.write(head)
        return await self.response()

    async def closed_by_server(self) -> bool:
        """True once the server closed the connection (whatever it sent before)."""
        try:
            while await asyncio.wait_for(self.reader.read(65536), WITHIN):
                pass
        except ConnectionResetError:
            pass
        await self.close()
        return True

    async def close(self) -> None:
        self.writer.close()
        with contextlib.suppress(OSError):
            await self.writer.wait_closed()


def head_of(counted: int, in_url: bool) -> bytes:
    """A GET whose head counts `counted` bytes as the limit counts them (the URL, and
    each header's name and value plus 4), filled in its URL or in one header."""
    fixed = len(b"Host") + len(b"x") + 4 + len(b"X-Fill") + 4
    if in_url:
        url = b"/metrics?" + b"a" * (counted - fixed - len(b"/metrics?") - 1)
        fill = b"b"
    else:
        url = b"/metrics"
        fill = b"b" * (counted - fixed - len(url))
    head = b"GET " + url + b" HTTP/1.1\r\nHost: x\r\nX-Fill: " + fill + b"\r\n\r\n"
    assert len(url) + fixed + len(fill) == counted
    return head


@pytest.mark.parametrize("in_url", [True, False], ids=["url", "header"])
async def test_a_head_of_the_limit_is_answered_one_byte_more_is_refused(in_url: bool) -> None:
    app = App()
    async with serving(app) as port:
        at_limit = await Client.connect(port)
        assert await at_limit.request(head_of(MAX_HEAD_BYTES, in_url)) == (200, b"ok")
        await at_limit.close()
        over = await Client.connect(port)
        status, _ = await over.request(head_of(MAX_HEAD_BYTES + 1, in_url))
        assert status == 400
        assert await over.closed_by_server()
    assert app.requests == 1


async def test_each_request_of_a_connection_has_the_whole_head_limit() -> None:
    async with serving(App()) as port:
        client = await Client.connect(port)
        for in_url in (True, False, True):
            assert await client.request(head_of(MAX_HEAD_BYTES, in_url)) == (200, b"ok")
        await client.close()


@pytest.mark.parametrize("sent", [b"", b"GET /metrics HTTP/1.1\r\nHost: x\r\n"], ids=["nothing", "half a head"])
async def test_a_head_that_does_not_arrive_in_time_closes_the_connection(sent: bytes) -> None:
    app = App()
    async with serving(app, request_head_timeout=HEAD_TIMEOUT) as port:
        client = await Client.connect(port)
        client.writer.write(sent)
        assert await client.closed_by_server()
    assert app.requests == 0


async def test_the_next_head_on_a_kept_connection_is_timed_too() -> None:
    app = App()
    async with serving(app, request_head_timeout=HEAD_TIMEOUT) as port:
        client = await Client.connect(port)
        assert await client.request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        client.writer.write(b"GET /metrics HTTP/1.1\r\nHost: x\r\n")
        assert await client.closed_by_server()
    assert app.requests == 1


async def test_an_answer_slower_than_the_head_timeout_is_not_cut() -> None:
    async with serving(App(delay=4 * HEAD_TIMEOUT), request_head_timeout=HEAD_TIMEOUT) as port:
        client = await Client.connect(port)
        assert await client.request(b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        await client.close()


async def book_holds(book: ConnectionBook, count: int) -> bool:
    for _ in range(int(WITHIN / 0.01)):
        if book.open_now == count:
            return True
        await asyncio.sleep(0.01)
    return False


async def test_at_the_cap_the_connection_idle_the_longest_is_closed() -> None:
    book = ConnectionBook(cap=2)
    async with serving(App(), book) as port:
        first, second = await Client.connect(port), await Client.connect(port)
        assert await book_holds(book, 2)
        # Each answered once, the first first: idle since its answer, the longest.
        assert await first.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        assert await second.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        third = await Client.connect(port)
        assert await first.closed_by_server()
        assert await second.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        assert await third.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        assert (book.open_now, book.shed_total) == (2, 1)
        for client in (second, third):
            await client.close()
        assert await book_holds(book, 0)


async def test_at_the_cap_a_client_makes_room_from_its_own_connections_first() -> None:
    """A flood's reconnection sheds the flood's own longest idle connection, not the
    scraper's older one; a client with none idle sheds the longest idle of all."""
    book = ConnectionBook(cap=3)
    get = b"GET / HTTP/1.1\r\nHost: x\r\n\r\n"
    async with serving(App(), book) as port:
        scraper = await Client.connect(port, source="127.0.0.2")
        assert await scraper.request(get) == (200, b"ok")  # idle since: the longest of all
        flood = [await Client.connect(port), await Client.connect(port)]
        assert await book_holds(book, 3)
        flood.append(await Client.connect(port))
        assert await flood[0].closed_by_server()
        assert await scraper.request(get) == (200, b"ok")
        assert (book.open_now, book.shed_total) == (3, 1)
        # A third client has no connection of its own: the longest idle of all goes (the
        # flood's second, idle since its accept; the scraper was answered since).
        other = await Client.connect(port, source="127.0.0.3")
        assert await flood[1].closed_by_server()
        assert await scraper.request(get) == (200, b"ok")
        assert await other.request(get) == (200, b"ok")
        assert (book.open_now, book.shed_total) == (3, 2)
        for client in (scraper, flood[2], other):
            await client.close()
        assert await book_holds(book, 0)


async def test_at_the_cap_with_every_connection_answering_a_new_one_is_closed() -> None:
    book = ConnectionBook(cap=2)
    hold = asyncio.Event()
    app = App(hold)
    async with serving(app, book) as port:
        answering = [await Client.connect(port) for _ in range(2)]
        for client in answering:
            client.writer.write(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        for _ in range(int(WITHIN / 0.01)):
            if app.requests == 2:
                break
            await asyncio.sleep(0.01)
        refused = await Client.connect(port)
        assert await refused.closed_by_server()
        assert (book.open_now, book.shed_total) == (2, 1)
        hold.set()
        for client in answering:
            assert await client.response() == (200, b"ok")
            await client.close()
        assert await book_holds(book, 0)
    assert app.requests == 2


async def test_a_connection_closed_by_its_client_leaves_the_book() -> None:
    book = ConnectionBook(cap=4)
    async with serving(App(), book) as port:
        silent = await Client.connect(port)
        answered = await Client.connect(port)
        assert await answered.request(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n") == (200, b"ok")
        assert await book_holds(book, 2)
        await silent.close()
        assert await book_holds(book, 1)
        await answered.close()
        assert await book_holds(book, 0)
    assert book.shed_total == 0


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.parametrize("chunk", [7, 4096])
async def test_a_header_that_never_ends_is_refused_as_its_bytes_pass_the_limit(tls: bool, chunk: int) -> None:
    """The header's end never comes, so the parser never hands it over: the bytes are
    counted as they arrive. (Before: buffered until the head timeout, 57 MB and more.)"""
    app = App()
    async with serving(app, tls=server_tls() if tls else None) as port:
        client = await Client.connect(port, client_tls() if tls else None)
        head = b"GET /metrics HTTP/1.1\r\nHost: x\r\nX-Fill: "
        head += b"a" * (MAX_HEAD_BYTES + HEAD_SLACK_BYTES + 1 - len(head))
        for start in range(0, len(head), chunk):
            client.writer.write(head[start : start + chunk])
            await client.writer.drain()
        status, body = await client.response()
        assert (status, body) == (400, INVALID_REQUEST.encode())
        assert await client.closed_by_server()
    assert app.requests == 0


async def trickled_until_closed(client: Client, data: bytes) -> bool:
    """`data` written again and again, a pause between, until the server closes the connection."""
    async with asyncio.timeout(WITHIN):
        while True:
            try:
                client.writer.write(data)
                await client.writer.drain()
                if await asyncio.wait_for(client.reader.read(65536), KEEP_ALIVE / 4) == b"":
                    return True
            except TimeoutError:  # nothing came back yet: write again
                continue
            except (ConnectionResetError, BrokenPipeError):
                return True


KEEP_ALIVE = 0.3  # seconds
GET = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n"


@pytest.mark.parametrize(
    ("request_head", "trickle"),
    [
        (GET, b"\r\n"),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nContent-Length: 100000\r\n\r\n", b"a"),
        (b"GET /metrics HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n", b"1\r\na\r\n"),
    ],
    ids=["line ends", "body bytes", "body chunks"],
)
async def test_an_idle_kept_connection_closes_at_its_timeout_whatever_trickles_in(
    request_head: bytes, trickle: bytes
) -> None:
    app = App()
    async with serving(app, keep_alive=KEEP_ALIVE) as port:
        client = await Client.connect(port)
        assert await client.request(request_head) == (200, b"ok")
        assert await trickled_until_closed(client, trickle)
        await client.close()
    assert app.requests == 1


@pytest.mark.parametrize(
    "refused",
    [
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n",
        b"GET /metrics HTTP/1.1\r\nHost: x\r\nConnection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\n\r\n",
        b"CONNECT 127.0.0.1:9874 HTTP/1.1\r\nHost: 127.0.0.1:9874\r\n\r\n",
    ],
    ids=["websocket", "h2c", "connect"],
)
async def test_an_upgrade_request_is_refused_then_the_connection_closes(
    refused: bytes, caplog: pytest.LogCaptureFixture
) -> None:
    """What follows an Upgrade request is not HTTP: the pipelined request is not left
    waiting for ever, the client learns by the refusal and the close to send it again."""
    app = App()
    with caplog.at_level(logging.DEBUG):
        async with serving(app) as port:
            client = await Client.connect(port)
            assert await client.request(refused + GET) == (400, UPGRADE_REFUSED)
            assert await client.closed_by_server()
    assert app.requests == 0
    assert [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING] == []


async def test_a_request_pipelined_before_an_upgrade_is_answered_first() -> None:
    app = App()
    upgrade = b"GET / HTTP/1.1\r\nHost: x\r\nConnection: Upgrade\r\nUpgrade: websocket\r\n\r\n"
    async with serving(app) as port:
        client = await Client.connect(port)
        assert await client.request(GET + upgrade) == (200, b"ok")
        assert await client.response() == (400, UPGRADE_REFUSED)
        assert await client.closed_by_server()
    assert app.requests == 1


@pytest.mark.parametrize("tls", [False, True], ids=["plain", "tls"])
@pytest.mark.parametrize(
    "after_head",
    [b"0\r\nX-Fill: ", b"1\r\na\r\n0\r\nA: b\r\nX-Fill: ", b"1;x="],
    ids=["trailer", "second trailer", "chunk extension"],
)
async def test_a_trailer_that_never_ends_closes_the_connection_as_its_bytes_pass_the_limit(
    tls: bool, after_head: bytes
) -> None:
    """A trailer is a header after the body, buffered by httptools as one in the head:
    what is not body after the head is counted as it arrives, and the connection closed
    once it passes the head limit (its answer sent already, or on its way)."""
    app = App()
    async with serving(app, tls=server_tls() if tls else None) as port:
        client = await Client.connect(port, client_tls() if tls else None)
        assert await client.request(b"GET / HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n") == (
            200,
            b"ok",
        )
        # Past the limit by the bytes of after_head that are not body (all but the second trailer's "a").
        fill = after_head + b"a" * (MAX_HEAD_BYTES + HEAD_SLACK_BYTES)
        with contextlib.suppress(ConnectionError):
            for start in range(0, len(fill), 4096):
                client.writer.write(fill[start : start + 4096])
                await client.writer.drain()
        assert await client.closed_by_server()
    assert app.requests == 1


async def test_malformed_requests_of_one_client_are_logged_once_a_minute(caplog: pytest.LogCaptureFixture) -> None:
    async with serving(App()) as port:
        for _ in range(5):
            client = await Client.connect(port)
            assert (await client.request(b"NOT HTTP\r\n\r\n"))[0] == 400
            assert await client.closed_by_server()
    warnings = [record.getMessage() for record in caplog.records if record.levelno >= logging.WARNING]
    assert warnings == [f"{INVALID_REQUEST} (from 127.0.0.1; logged once a minute per client)"]


def test_the_warnings_not_logged_are_counted_into_the_next(caplog: pytest.LogCaptureFixture) -> None:
    logger = logging.getLogger("tests.limits")
    every = PeerWarnings(interval=0.0)
    quiet = PeerWarnings(interval=3600.0, peers=1)
    with caplog.at_level(logging.WARNING, logger="tests.limits"):
        quiet.warn(logger, "10.0.0.1", "bad")
        quiet.warn(logger, "10.0.0.1", "bad")  # within the interval: counted
        quiet.warn(logger, "10.0.0.2", "bad")  # another client: logged, and the first forgotten (one kept)
        quiet.warn(logger, "10.0.0.1", "bad")  # forgotten: logged again
        every.warn(logger, "10.0.0.3", "bad")
        every.warn(logger, "10.0.0.3", "bad")
    once = "logged once a minute per client"
    assert [record.getMessage() for record in caplog.records] == [
        f"bad (from 10.0.0.1; {once})",
        f"bad (from 10.0.0.2; {once})",
        f"bad (from 10.0.0.1; {once})",
        f"bad (from 10.0.0.3; {once})",
        f"bad (from 10.0.0.3; {once})",
    ]
