"""Generated request heads and credentials, at the app serve runs (proxy barrier,
basic auth, extra headers, /metrics): every answer is 200, 401, 404 or 405, with
a head HTTP allows; never a 500, never an exception. The password of a good
login is the only one let in.

And on a real socket, plain or TLS, the bounded protocol serve runs: generated
clients that stream a header or a trailer that never ends, trickle line ends
or body bytes after an answer, pipeline behind an Upgrade or a CONNECT, or send
any bytes, in chunks of any size: each is answered 200 or refused 400, and
closed within its time limits."""

from __future__ import annotations

import asyncio
import base64
import contextlib
import string
import urllib.parse
from typing import NamedTuple

import bcrypt
import h11
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import ASGIApp, Message

from exporter.http.app import create_app
from exporter.http.limits import MAX_HEAD_BYTES
from exporter.http.webconfig import WebConfig
from exporter.loading import load
from exporter.service import build_exporter
from tests.exporter.http.test_limits import WITHIN, App, Client, client_tls, server_tls, serving
from tests.hypotheses import examples

USER, PASSWORD = "prometheus", "scrape-pass"
WEB = WebConfig(
    basic_auth_users={USER: bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4))},
    headers={"X-Frame-Options": "deny"},
)
# Sources nobody listens on: a scrape is refused at once and the page says so.
SETTINGS = load({"database_url": "postgresql://u:p@127.0.0.1:1/db", "signals": "audit_chain"}, {})
ANSWERS = {200, 401, 404, 405}

TOKEN = string.ascii_letters + string.digits + "!#$%&'*+-.^_`|~"
HEADER_VALUES = st.text(alphabet=st.characters(min_codepoint=0x20, max_codepoint=0xFF, exclude_characters="\x7f"))
PASSWORDS = st.one_of(st.text(max_size=300), st.just(PASSWORD), st.text(alphabet="p", min_size=70, max_size=80))
USERS = st.one_of(st.just(USER), st.text(max_size=20))


@st.composite
def authorizations(draw: st.DrawFn) -> bytes | None:
    kind = draw(st.sampled_from(["none", "basic", "basic bytes", "junk", "scheme"]))
    if kind == "none":
        return None
    if kind == "basic":
        pair = f"{draw(USERS)}:{draw(PASSWORDS)}".encode("utf-8", "surrogatepass")
        return b"Basic " + base64.b64encode(pair)
    if kind == "basic bytes":
        return b"Basic " + base64.b64encode(draw(st.binary(max_size=200)))
    if kind == "junk":
        return b"Basic " + draw(HEADER_VALUES).encode("latin-1")
    scheme = draw(st.text(alphabet=TOKEN, min_size=1, max_size=10))
    return f"{scheme} {draw(HEADER_VALUES)}".encode("latin-1")


HEADERS = st.dictionaries(
    st.one_of(
        st.sampled_from(["Accept", "Accept-Encoding", "X-Prometheus-Scrape-Timeout-Seconds", "X-Forwarded-For"]),
        st.text(alphabet=TOKEN, min_size=1, max_size=20),
    ),
    HEADER_VALUES,
    max_size=5,
)
PATHS = st.one_of(
    st.sampled_from(["/metrics", "/", "/-/healthy", "/-/ready", "/metrics/", "//metrics"]),
    st.text(max_size=30).map(lambda text: "/" + text),
)
METHODS = st.one_of(st.sampled_from(["GET", "HEAD", "POST", "PUT", "DELETE", "OPTIONS"]), st.text(TOKEN, min_size=1))


class Answer(NamedTuple):
    status: int
    headers: list[tuple[bytes, bytes]]


def allowed_head(answer: Answer) -> None:
    assert answer.status in ANSWERS, answer
    h11.Response(status_code=answer.status, headers=answer.headers)
    names = [name.lower() for name, _value in answer.headers]
    assert len(names) == len(set(names)), names


async def call(app: ASGIApp, method: str, path: str, headers: list[tuple[bytes, bytes]]) -> Answer:
    """The request as a server hands it to the app (header names lower-cased), the answer's head."""
    scope = {
        "type": "http",
        "asgi": {"version": "3.0"},
        "http_version": "1.1",
        "method": method,
        "scheme": "http",
        "path": urllib.parse.unquote(path, errors="surrogateescape"),
        "raw_path": path.encode("utf-8", "surrogateescape"),
        "query_string": b"",
        "root_path": "",
        "headers": [(name.lower(), value) for name, value in headers],
        "client": ("127.0.0.1", 40000),
        "server": ("127.0.0.1", 9874),
    }
    started: list[Message] = []

    async def receive() -> Message:
        return {"type": "http.request", "body": b"", "more_body": False}

    async def send(message: Message) -> None:
        if message["type"] == "http.response.start":
            started.append(message)

    await app(scope, receive, send)
    assert len(started) == 1, started
    return Answer(started[0]["status"], list(started[0].get("headers", [])))


async def answer(method: str, path: str, headers: dict[str, str], authorization: bytes | None) -> Answer:
    exporter = build_exporter(SETTINGS)
    app = create_app(exporter, WEB)
    raw = [(name.encode("latin-1"), value.encode("latin-1")) for name, value in headers.items()]
    if authorization is not None:
        raw.append((b"Authorization", authorization))
    try:
        return await call(app, method, path, raw)
    finally:
        await exporter.close()


GOOD = b"Basic " + base64.b64encode(f"{USER}:{PASSWORD}".encode())


@settings(max_examples=examples(fast=150, ci=2500), deadline=None)
@given(method=METHODS, path=PATHS, headers=HEADERS, authorization=authorizations())
def test_every_request_is_answered_without_a_server_error(
    method: str, path: str, headers: dict[str, str], authorization: bytes | None
) -> None:
    answered = asyncio.run(answer(method, path, headers, authorization))
    allowed_head(answered)
    if answered.status == 200 and path == "/metrics":
        assert authorization is not None
        assert authorization.split() == GOOD.split()


# --- On a real socket: streaming and trickling clients -------------------------------------------------------------

HEAD_TIMEOUT = 0.3  # a head must arrive within this; an idle kept connection closes after KEEP_ALIVE
KEEP_ALIVE = 0.3
GET_HEAD = b"GET /metrics HTTP/1.1\r\nHost: x\r\n"


UPGRADES = [
    b"Connection: Upgrade\r\nUpgrade: websocket\r\n",
    b"Connection: Upgrade, HTTP2-Settings\r\nUpgrade: h2c\r\nHTTP2-Settings: AAMAAABkAAQCAAAAAAIAAAAA\r\n",
]


class Sent(bytes):
    """What a client sends, shown by its length and ends (a falsifying example of 48 KiB
    would be printed whole, and hypothesis warns, as an error here, past 30 KB)."""

    def __repr__(self) -> str:
        return f"Sent({len(self)} bytes: {bytes(self[:100])!r} ... {bytes(self[-20:])!r})"


@st.composite
def client_bytes(draw: st.DrawFn) -> Sent:
    return Sent(draw(client_sends()))


@st.composite
def client_sends(draw: st.DrawFn) -> bytes:
    """What a client sends on one connection: requests whole or cut, a header or trailer
    that never ends, line ends trickled after an answer, body bytes of a GET, an Upgrade
    or a CONNECT with a request behind, any bytes."""
    kind = draw(st.sampled_from(["whole", "endless header", "endless trailer", "line ends", "body", "upgrade", "any"]))
    if kind == "whole":
        return GET_HEAD + b"\r\n"
    if kind == "endless header":
        return GET_HEAD + b"X-Fill: " + b"a" * draw(st.integers(min_value=0, max_value=3 * MAX_HEAD_BYTES))
    if kind == "endless trailer":
        chunks = b"".join(b"%x\r\n%s\r\n" % (len(c), c) for c in draw(st.lists(st.binary(min_size=1), max_size=3)))
        fill = b"a" * draw(st.integers(min_value=0, max_value=3 * MAX_HEAD_BYTES))
        return GET_HEAD + b"Transfer-Encoding: chunked\r\n\r\n" + chunks + b"0\r\nX-Fill: " + fill
    if kind == "line ends":
        return GET_HEAD + b"\r\n" + b"\r\n" * draw(st.integers(min_value=1, max_value=2000))
    if kind == "body":
        length = draw(st.integers(min_value=1, max_value=100_000))
        return GET_HEAD + f"Content-Length: {length}\r\n\r\n".encode() + b"b" * draw(st.integers(0, length - 1))
    if kind == "upgrade":
        connect = b"CONNECT 127.0.0.1:1 HTTP/1.1\r\nHost: 127.0.0.1:1\r\n\r\n"
        upgrade = draw(st.sampled_from([GET_HEAD + header + b"\r\n" for header in UPGRADES] + [connect]))
        return upgrade + GET_HEAD + b"\r\n"
    return draw(st.binary(max_size=2 * MAX_HEAD_BYTES))


async def conversation(data: bytes, chunk: int, tls: bool) -> tuple[list[int], bool]:
    """The statuses answered to `data` written in chunks of `chunk` bytes, and whether
    the server closed the connection (within WITHIN: a head timeout or a keep-alive later)."""
    server = server_tls() if tls else None
    async with serving(App(), request_head_timeout=HEAD_TIMEOUT, keep_alive=KEEP_ALIVE, tls=server) as port:
        client = await Client.connect(port, client_tls() if tls else None)
        with contextlib.suppress(OSError):  # closed by the server before the client is done
            for start in range(0, len(data), chunk):
                client.writer.write(data[start : start + chunk])
                await client.writer.drain()
        received = b""
        closed = False
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(WITHIN):
                with contextlib.suppress(OSError):  # reset: closed with bytes unread
                    while chunk_read := await client.reader.read(65536):
                        received += chunk_read
                closed = True
        await client.close()
    statuses = [int(line.split(b" ")[1]) for line in received.split(b"\r\n") if line.startswith(b"HTTP/1.1 ")]
    return statuses, closed


@settings(max_examples=examples(fast=25, ci=120), deadline=None)
@given(data=client_bytes(), chunk=st.integers(min_value=1, max_value=20_000), tls=st.booleans())
def test_every_connection_is_answered_or_refused_and_closed_in_bounded_time(data: bytes, chunk: int, tls: bool) -> None:
    """Whatever a client streams or trickles, the server answers 200 or refuses with 400,
    and closes the connection within its head timeout or keep-alive timeout (the wait
    is far above both: a connection still open then is held for ever)."""
    statuses, closed = asyncio.run(conversation(data, max(chunk, len(data) // 500), tls))
    assert closed, statuses
    assert set(statuses) <= {200, 400}, statuses
