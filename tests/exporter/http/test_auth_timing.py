"""Basic auth costs the same for an unknown user as for a known user with a wrong
password: both run bcrypt at the configured cost."""

from __future__ import annotations

import bcrypt
import pytest

from exporter.http.auth import BasicAuth
from exporter.http.reload import StaticWebConfig
from exporter.http.webconfig import WebConfig

pytestmark = pytest.mark.anyio


async def app(scope: object, receive: object, send: object) -> None:  # never reached here
    raise AssertionError("an unauthenticated request reached the application")


def cost(hashed: bytes) -> int:
    return int(hashed[4:6])


def spied_auth(monkeypatch: pytest.MonkeyPatch, rounds: int) -> tuple[BasicAuth, dict[str, bytes], list[bytes]]:
    """Basic auth of one user, "prometheus" with the password "right" hashed at `rounds`,
    and the hashes bcrypt is asked to check, in order."""
    users = {"prometheus": bcrypt.hashpw(b"right", bcrypt.gensalt(rounds=rounds))}
    checked: list[bytes] = []
    real = bcrypt.checkpw

    def spy(password: bytes, hashed: bytes) -> bool:
        checked.append(hashed)
        return real(password, hashed)

    monkeypatch.setattr(bcrypt, "checkpw", spy)
    return BasicAuth(app, StaticWebConfig(WebConfig(basic_auth_users=users))), users, checked


@pytest.mark.parametrize("rounds", [5, 7])
async def test_an_unknown_user_costs_what_a_wrong_password_costs(monkeypatch: pytest.MonkeyPatch, rounds: int) -> None:
    basic, users, checked = spied_auth(monkeypatch, rounds)
    assert not await basic._check(users, "prometheus", "wrong")
    assert not await basic._check(users, "intruder", "wrong")
    # The placeholder's own password, presented by an unknown user, still fails.
    assert not await basic._check(users, "intruder", "orpycamcp-exporter")
    assert [cost(h) for h in checked] == [rounds, rounds, rounds]
    assert await basic._check(users, "prometheus", "right")


async def test_a_password_longer_than_bcrypt_reads_costs_what_a_wrong_one_costs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    basic, users, checked = spied_auth(monkeypatch, 6)
    assert not await basic._check(users, "prometheus", "p" * 80)
    assert not await basic._check(users, "intruder", "p" * 80)
    assert [cost(h) for h in checked] == [6, 6]
