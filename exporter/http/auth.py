"""HTTP basic auth against the bcrypt hashes of the web configuration."""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
from collections.abc import Mapping

import anyio.to_thread
import bcrypt
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from exporter.http.reload import WebConfigSource
from exporter.http.webconfig import bcrypt_cost

# The password behind the placeholder hash: public on purpose, refused for every user.
PLACEHOLDER_PASSWORD = "orpycamcp-exporter"  # noqa: S105
_CACHE_LIMIT = 128
# bcrypt reads 72 bytes of a password at most; bcrypt 5 raises past them.
BCRYPT_MAX_PASSWORD = 72


@functools.cache
def _placeholder_hash(rounds: int) -> bytes:
    """Checked against when the user is unknown, at the cost of the configured
    hashes, so the time of an answer does not tell which users exist."""
    return bcrypt.hashpw(PLACEHOLDER_PASSWORD.encode(), bcrypt.gensalt(rounds=rounds))


def _cost(users: Mapping[str, bytes]) -> int:
    # Every user's hash has the same cost (webconfig refuses others).
    return max((bcrypt_cost(hashed.decode("ascii")) or 10 for hashed in users.values()), default=10)


def _checked(password: bytes, hashed: bytes | None, rounds: int) -> bool:
    """bcrypt's verdict, at the cost of the configured hashes whatever is presented:
    an unknown user, or a password longer than bcrypt reads (never a match: no hash
    of it exists), is checked against the placeholder and refused."""
    if hashed is None or len(password) > BCRYPT_MAX_PASSWORD:
        bcrypt.checkpw(PLACEHOLDER_PASSWORD.encode(), _placeholder_hash(rounds))
        return False
    return bcrypt.checkpw(password, hashed)


def credentials(headers: list[tuple[bytes, bytes]]) -> tuple[str, str] | None:
    for name, value in headers:
        if name.lower() == b"authorization":
            scheme, _, encoded = value.partition(b" ")
            if scheme.lower() != b"basic":
                return None
            try:
                user, sep, password = base64.b64decode(encoded.strip(), validate=True).decode("utf-8").partition(":")
            except (binascii.Error, UnicodeDecodeError):
                return None
            return (user, password) if sep else None
    return None


class BasicAuth:
    """401 unless the request carries a configured user and its password.

    bcrypt is slow on purpose; a verified (user, password) pair is remembered
    by its SHA-256, so a scraper's every request does not pay for it again; the
    memory is forgotten whenever the users are reloaded. No user configured: no
    authentication.
    """

    def __init__(self, app: ASGIApp, source: WebConfigSource) -> None:
        self.app = app
        self.source = source
        self._verified: dict[bytes, bool] = {}
        self._of: object = None

    async def _check(self, users: Mapping[str, bytes], user: str, password: str) -> bool:
        if users is not self._of:
            self._verified = {}
            self._of = users
        key = hashlib.sha256(f"{user}\x00{password}".encode()).digest()
        known = self._verified.get(key)
        if known is not None:
            return known
        ok = await anyio.to_thread.run_sync(_checked, password.encode("utf-8"), users.get(user), _cost(users))
        if users is not self._of:  # reloaded while bcrypt ran: answered, not remembered
            return ok
        if len(self._verified) >= _CACHE_LIMIT:
            self._verified.clear()
        self._verified[key] = ok
        return ok

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        users = self.source.current().basic_auth_users
        if scope["type"] != "http" or not users:
            await self.app(scope, receive, send)
            return
        given = credentials(scope["headers"])
        if given is None or not await self._check(users, *given):
            response = PlainTextResponse(
                "Unauthorized\n", status_code=401, headers={"WWW-Authenticate": 'Basic realm="orpycamcp-exporter"'}
            )
            await response(scope, receive, send)
            return
        await self.app(scope, receive, send)
