"""Credentials in PostgreSQL and Redis URLs: masked wherever they sit, and a URL
that cannot be read one way refused, quoting nothing from after the point where
it stopped being readable."""

from __future__ import annotations

import re

import pytest

from exporter.errors import ConfigError
from exporter.settings import load
from exporter.sources.url_secrets import ambiguity, mask_url

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
