"""Generated request heads and credentials, at the app serve runs (proxy barrier,
basic auth, extra headers, /metrics): every answer is 200, 401, 404 or 405, with
a head HTTP allows; never a 500, never an exception. The password of a good
login is the only one let in."""

from __future__ import annotations

import asyncio
import base64
import string
import urllib.parse
from typing import NamedTuple

import bcrypt
import h11
from hypothesis import given, settings
from hypothesis import strategies as st
from starlette.types import ASGIApp, Message

from exporter.http.app import create_app
from exporter.http.webconfig import WebConfig
from exporter.loading import load
from exporter.service import build_exporter
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
