"""Credentials in PostgreSQL and Redis URLs: masked wherever they sit, and a URL
that cannot be read one way refused, quoting nothing from after the point where
it stopped being readable."""

from __future__ import annotations

import re

import pytest

from exporter.errors import ConfigError
from exporter.settings import load
from exporter.sources.url_secrets import ENCODE, ambiguity, ambiguous_authority, is_credential, mask_url

# A password holding every character that ends a part of a URL, left unencoded.
TAIL = "w?m n!Xv"
PASSWORD = f"s3cr#{TAIL}"
PIECES = ("s3cr", "w?m", "n!Xv", "Xv")


def assert_hidden(text: str) -> None:
    shown = [piece for piece in PIECES if piece in text]
    assert not shown, f"{shown} shown in {text!r}"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        (f"postgresql://u@h:5/db?password={PASSWORD}", "postgresql://u@h:5/db?password=***#***"),
        ("postgresql://u@h/db?password=s3cr&w=m n!Xv", "postgresql://u@h/db?password=***&***"),
        ("postgresql://u@h/db?password=s3cr&wmn!Xv", "postgresql://u@h/db?password=***&***"),
        (
            "postgresql://u@h/db?sslmode=require&sslpassword=s3cr&Xv",
            "postgresql://u@h/db?sslmode=require&sslpassword=***&***",
        ),
        (f"redis://h:6379/0?password={PASSWORD}", "redis://h:6379/0?password=***#***"),
        ("redis+sentinel://h/svc?sentinel_password=s3cr&w=Xv", "redis+sentinel://h/svc?sentinel_password=***&***"),
        ("redis://:s3cr@h:6379/0", "redis://:***@h:6379/0"),
        ("postgresql://u:s3cr@h/db#Xv", "postgresql://u:***@h/db#***"),
        ("postgresql://u:s3cr@h/db?application_name=a@b", "postgresql://u:***@h/db?application_name=a@b"),
        ("not a url #s3cr", "***"),
    ],
)
def test_every_credential_is_masked_and_nothing_after_it(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert_hidden(mask_url(url))


@pytest.mark.parametrize(
    ("url", "problem"),
    [
        (f"postgresql://u@h/db?password={PASSWORD}", "a '#' starts a fragment"),
        ("postgresql://u@h/db?password=s3cr&w=m n!Xv", "text after a password that is not a known parameter"),
        ("postgresql://u@h/db?password=s3cr&wmn!Xv", "text after a password that is not a known parameter"),
        ("postgresql://u@h/db?sslmode=require&sslmode=disable", "parameter 'sslmode' is given twice"),
        ("postgresql://u@h/db?password=s3cr&password=Xv", "a parameter after a password is given twice"),
    ],
)
def test_a_database_url_read_two_ways_is_refused_without_its_tail(url: str, problem: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"database_url": url}, {})
    message = str(raised.value)
    assert problem in message
    assert "percent-encode" in message or "give it once" in message
    assert_hidden(message)


@pytest.mark.parametrize(
    "url", [f"redis://h:6379/0?password={PASSWORD}", "redis://h:6379/0?password=s3cr&w=Xv", "redis://h/0?db=1&db=2"]
)
def test_a_redis_url_read_two_ways_is_refused_without_its_tail(url: str) -> None:
    with pytest.raises(ConfigError) as raised:
        load({"redis_url": url}, {})
    assert_hidden(str(raised.value))
    assert re.search(r"fragment|after a password|given twice", str(raised.value))


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@h/db?password=s3cr&sslmode=require&application_name=x",
        "postgresql://u@h/db?options=-c%20search_path%3Dx&password=p%23q%26r",
        "postgresql://u:p%23q@h/db?sslmode=require",
    ],
)
def test_an_url_read_one_way_is_accepted(url: str) -> None:
    assert ambiguity(url, {"sslmode", "application_name", "password"}) is None
    assert load({"database_url": url}, {}).database_url == url


@pytest.mark.parametrize(
    ("key", "credential"),
    [
        ("password", True),
        ("Password", True),
        ("sslpassword", True),
        ("sentinel_password", True),
        ("db_password", True),  # any name ending in password: a secret until shown otherwise
        ("%70assword", True),  # percent-encoded, as the URL may hold it
        ("passwordless", False),
        ("sslmode", False),
    ],
)
def test_a_credential_is_any_parameter_named_for_a_password(key: str, credential: bool) -> None:
    assert is_credential(key) is credential


@pytest.mark.parametrize(
    ("url", "ambiguous"),
    [
        ("postgresql://u:p%40ss@h/db", False),
        ("postgresql://h:abc/db", False),  # no '@': nothing to tell apart, whatever the port
        ("postgresql://u:p@ss@h/db", True),  # two '@' in the authority
        ("postgresql://u:p@ss@h/db?x=a://b", True),  # a second '://' further on changes nothing
        ("postgresql://u:5/x@h/db", True),  # '/' ended the authority early: '@' in the path
        ("postgresql://u:5#x@h/db", True),  # '#' did: '@' in the fragment
        ("postgresql://u:5?a@h/db", True),  # '?' did: '@' in a query key
        ("postgresql://u:5?x=1&a@h/db", True),  # ... in a later query key
        ("postgresql://u:pa?x=y@h", True),  # no user, and the "port" is not one
        ("postgresql://h:5432/db?application_name=a@b", False),  # '@' in a query value
        ("postgresql://[::1]:5432/db?application_name=a@b", False),  # ... with an IPv6 host
        ("postgresql://u:p@[::1/db", True),  # does not parse at all
        ("u:p@h", False),  # no scheme: not an authority
    ],
)
def test_an_authority_read_two_ways_is_told(url: str, ambiguous: bool) -> None:
    assert ambiguous_authority(url) is ambiguous


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("localhost", "localhost"),
        ("u:s3cr@h", "***"),
        ("postgresql://u:p@ss@h/db", "postgresql://***@h/db"),
        ("postgresql://u:s3cr@h/db?target_session_attrs=a://b", "postgresql://u:***@h/db?target_session_attrs=a://b"),
        ("postgresql://u@h/db?password=a=b", "postgresql://u@h/db?password=***"),
        ("postgresql://u@h/db?password=s3cr?Xv", "postgresql://u@h/db?password=***"),
        ("postgresql://[::1/db", "postgresql://[::1/db"),
    ],
)
def test_the_mask_keeps_what_is_safe_and_nothing_else(url: str, shown: str) -> None:
    assert mask_url(url) == shown


@pytest.mark.parametrize(
    "url",
    [
        "postgresql://u@h/db?password=a?b&sslmode=x&c",  # the query starts at the first '?'
        "postgresql://u@h/db?password=a=b&c",  # the key ends at the first '='
    ],
)
def test_text_after_a_password_is_named_for_what_it_is(url: str) -> None:
    assert ambiguity(url, {"sslmode", "password"}) == (
        "the query holds text after a password that is not a known parameter, so the password may go on there: "
        + ENCODE
    )
