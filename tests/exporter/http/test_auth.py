"""Basic auth at the unit that decides it (BasicAuth over an ASGI app), each
test on a fresh middleware: nothing a previous test remembered helps it."""

from __future__ import annotations

import base64

import bcrypt
import httpx
import pytest
from starlette.responses import PlainTextResponse
from starlette.types import Receive, Scope, Send

from exporter.http.auth import PLACEHOLDER_PASSWORD, BasicAuth
from exporter.http.reload import StaticWebConfig
from exporter.http.webconfig import WebConfig

pytestmark = pytest.mark.anyio

USER, PASSWORD = "prometheus", "scrape-pass"
OTHER, OTHER_PASSWORD = "grafana", "other-pass"
USERS = {
    USER: bcrypt.hashpw(PASSWORD.encode(), bcrypt.gensalt(rounds=4)),
    OTHER: bcrypt.hashpw(OTHER_PASSWORD.encode(), bcrypt.gensalt(rounds=4)),
}


async def inner(scope: Scope, receive: Receive, send: Send) -> None:
    await PlainTextResponse("in\n")(scope, receive, send)


def client() -> httpx.AsyncClient:
    auth = BasicAuth(inner, StaticWebConfig(WebConfig(basic_auth_users=USERS)))
    return httpx.AsyncClient(transport=httpx.ASGITransport(app=auth), base_url="http://exporter")


async def status(http: httpx.AsyncClient, user: str, password: str) -> int:
    token = base64.b64encode(f"{user}:{password}".encode()).decode()
    response = await http.get("/metrics", headers={"Authorization": f"Basic {token}"})
    return response.status_code


async def test_an_unknown_user_with_the_placeholder_password_is_refused() -> None:
    async with client() as http:
        assert await status(http, "nobody", PLACEHOLDER_PASSWORD) == 401
        assert await status(http, "", PLACEHOLDER_PASSWORD) == 401
        assert await status(http, USER, PASSWORD) == 200  # the middleware does let a known user in


async def test_a_good_login_does_not_admit_another_password_of_the_same_user() -> None:
    async with client() as http:
        assert await status(http, USER, PASSWORD) == 200
        assert await status(http, USER, "wrong") == 401
        assert await status(http, USER, PASSWORD + "x") == 401
        assert await status(http, USER, PASSWORD) == 200


async def test_a_refused_login_does_not_refuse_the_right_password_afterwards() -> None:
    async with client() as http:
        assert await status(http, USER, "wrong") == 401
        assert await status(http, USER, PASSWORD) == 200


async def test_a_good_login_does_not_admit_another_user_with_that_password() -> None:
    async with client() as http:
        assert await status(http, USER, PASSWORD) == 200
        assert await status(http, OTHER, PASSWORD) == 401
        assert await status(http, "nobody", PASSWORD) == 401
        assert await status(http, OTHER, OTHER_PASSWORD) == 200


async def test_no_credentials_or_another_scheme_is_refused() -> None:
    async with client() as http:
        assert (await http.get("/metrics")).status_code == 401
        assert (await http.get("/metrics", headers={"Authorization": "Bearer x"})).status_code == 401


@pytest.mark.parametrize("length", [72, 73, 80, 4096])
async def test_a_password_of_any_length_is_answered_401(length: int) -> None:
    async with client() as http:
        assert await status(http, USER, "p" * length) == 401
        assert await status(http, "nobody", "p" * length) == 401


async def test_a_password_past_the_72_bytes_bcrypt_reads_never_matches() -> None:
    """bcrypt would ignore the tail: a longer password that begins with the right 72
    bytes is refused, not admitted for its first 72 bytes."""
    password = "x" * 72
    users = {USER: bcrypt.hashpw(password.encode(), bcrypt.gensalt(rounds=4))}
    auth = BasicAuth(inner, StaticWebConfig(WebConfig(basic_auth_users=users)))
    async with httpx.AsyncClient(transport=httpx.ASGITransport(app=auth), base_url="http://exporter") as http:
        assert await status(http, USER, password) == 200
        assert await status(http, USER, password + "tail") == 401


async def test_a_password_with_a_nul_byte_is_answered_401() -> None:
    async with client() as http:
        assert await status(http, USER, PASSWORD + "\x00") == 401
