"""Credentials in PostgreSQL and Redis URLs: masked wherever they sit, and a URL
that cannot be read one way refused, quoting nothing from after the point where
it stopped being readable."""

from __future__ import annotations

import re

import pytest

from exporter.errors import ConfigError
from exporter.loading import load
from exporter.sources.url_secrets import (
    ENCODE,
    ambiguity,
    ambiguous_authority,
    is_credential,
    mask_url,
    masked,
    quotes,
    secret_texts,
    server_secrets,
)

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
        (f"postgresql://u@h:5/db?password={PASSWORD}", "postgresql://***@h:5/db"),
        ("postgresql://u@h/db?password=s3cr&w=m n!Xv", "postgresql://***@h/db"),
        ("postgresql://u@h/db?sslmode=require&sslpassword=s3cr&Xv", "postgresql://***@h/db"),
        (f"redis://h:6379/0?password={PASSWORD}", "redis://h:6379/0"),
        ("redis+sentinel://h/svc?sentinel_password=s3cr&w=Xv", "redis+sentinel://h/svc"),
        ("redis://:s3cr@h:6379/0", "redis://***@h:6379/0"),
        ("postgresql://u:s3cr@h/db#Xv", "postgresql://***@h/db"),
        ("postgresql://u:s3cr@h/db?application_name=a@b", "postgresql://***@h/db"),
        ("postgresql://u:s3cr@h1:1,[::1]:2/db", "postgresql://***@h1:1,[::1]:2/db"),
        ("unix:///var/run/redis/redis.sock?db=1", "unix:///var/run/redis/redis.sock"),
        # The password as the user name: the user is never shown.
        ("postgresql://s3crXv@h/db", "postgresql://***@h/db"),
        # Parsed two ways, or not at all: the scheme alone.
        ("postgresql://u@h/db?password=ab&cd@s3crXv", "postgresql://(rest not shown: it does not parse one way)"),
        ("postgresql://u:p\uff20s3crXv@h/db", "postgresql://(rest not shown: it does not parse one way)"),
        ("postgresql://u:s3cr/Xv@h/db", "postgresql://(rest not shown: it does not parse one way)"),
        ("not a url #s3cr", "(a URL of no known scheme, not shown)"),
        ("s3crXv://u@h/db", "(a URL of no known scheme, not shown)"),
        # The scheme ends at the first '://': one further on is the query's.
        ("postgresql://h/db?application_name=x://y", "postgresql://h/db"),
        # Hosts or a path that are not plain names: not shown.
        ("postgresql://u:p@h%20s3crXv/db", "postgresql://***@(hosts not shown)/db"),
        ("postgresql://u:p@h/s3cr%20Xv", "postgresql://***@h/(path not shown)"),
    ],
)
def test_a_url_is_shown_rebuilt_from_the_parts_that_parsed(url: str, shown: str) -> None:
    assert mask_url(url) == shown
    assert_hidden(mask_url(url))


def test_a_library_message_is_shown_only_when_it_quotes_no_secret_part() -> None:
    url = "postgresql://u:s3crXv@h/db?sslmode=require&password=abcd&gsslib=zz"
    assert quotes("gsslib parameter must be either 'gssapi' or 'sspi', got 'zz'", secret_texts(url))
    assert quotes("got 'crXv'", secret_texts(url))
    assert not quotes("could not determine user name to connect with", secret_texts(url))


@pytest.mark.parametrize(
    ("message", "texts", "quoted"),
    [
        ("got 'ab'", ("ab",), True),  # a whole text of 2 characters
        ("got 'abc'", ("abc",), True),  # ... of 3
        ("got 'a'", ("a",), False),  # 1 character is in every message: never taken for a quote
        ("got 'abcd'", ("a", "abcd"), True),  # a text too short to count does not end the search
        ("got 'wxyz'", ("abcdwxyz",), True),  # the last 4 characters of a longer text
        ("got 'xyz'", ("abcdwxyz",), False),  # 3 characters of a longer text: not a quote of it
        ("got 'cdwx'", ("abcdwxyz",), True),  # any 4 in a row
    ],
)
def test_a_quote_is_4_characters_in_a_row_or_a_whole_short_text(
    message: str, texts: tuple[str, ...], quoted: bool
) -> None:
    assert quotes(message, texts) is quoted


@pytest.mark.parametrize(
    ("url", "secret", "plain"),
    [
        # The userinfo and every credential's value, raw and decoded.
        ("postgresql://u:s3cr%40Xv@h/db", "u:s3cr@Xv", "h/db"),
        ("postgresql://h/db?sslmode=require&password=s3cr", "s3cr", "require"),
        ("postgresql://h/db?password=s3cr=Xv", "s3cr=Xv", "h/db"),  # a key ends at the first '='
        ("postgresql://h/db?password=s3cr&Xv=1", "Xv=1", "h/db"),  # after a password, whole pairs
        ("postgresql://u@h/db#s3crXv", "s3crXv", "h/db"),  # the fragment
        # Read two ways: everything after the scheme, raw and decoded.
        ("postgresql://u:s3cr/Xv@h/db", "u:s3cr/Xv@h/db", "postgresql"),
        ("postgresql://u:s3%2Fcr/Xv@h/db", "u:s3/cr/Xv@h/db", "postgresql"),
        ("postgresql://u:s3cr://Xv@h/db", "u:s3cr://Xv@h/db", "postgresql"),  # from the first '://'
        # Not read at all: everything after the scheme.
        ("postgresql://u:s3crXv@[::1/db", "u:s3crXv@[::1/db", "postgresql"),
    ],
)
def test_what_may_hold_a_password_is_every_part_but_the_scheme_hosts_and_path(
    url: str, secret: str, plain: str
) -> None:
    texts = secret_texts(url)
    assert secret in texts
    assert quotes(f"got '{secret}'", texts)
    assert not quotes(f"got '{plain}'", texts)


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


WORDS = '28P01: password authentication failed for user "{user}"'


@pytest.mark.parametrize(
    ("url", "env", "user", "shown"),
    [
        # The user alone (the userinfo, ?user=, PGUSER): it may be a password, masked.
        ("postgresql://Zq8kXw7v@h/db", {}, "Zq8kXw7v", 'for user "***"'),
        ("postgresql://Zq8k%58w7v@h/db", {}, "Zq8kXw7v", 'for user "***"'),
        ("postgresql://h/db?user=Zq8kXw7v", {}, "Zq8kXw7v", 'for user "***"'),
        ("postgresql://h/db", {"PGUSER": "Zq8kXw7v"}, "Zq8kXw7v", 'for user "***"'),
        # A password beside it: the user is a user, shown; the password is masked.
        ("postgresql://exporter:Zq8kXw7v@h/db", {}, "exporter", 'for user "exporter"'),
        ("postgresql://h/db?user=exporter&password=Zq8kXw7v", {}, "exporter", 'for user "exporter"'),
        ("postgresql://exporter:Zq8kXw7v@h/db", {}, "exporter Zq8kXw7v", 'for user "exporter ***"'),
    ],
)
def test_a_server_error_shows_no_credential_of_the_url(url: str, env: dict[str, str], user: str, shown: str) -> None:
    words = masked(WORDS.format(user=user), server_secrets(url, env))
    assert words.endswith(shown)
    assert "Zq8k" not in words


def test_masking_hides_every_echo_and_keeps_the_server_words() -> None:
    secret = "Secr3tPassw0rd"
    # Whole, cut (PostgreSQL keeps 63 bytes of a name), or in the middle of other text.
    assert masked(f'user "{secret}"', [secret]) == 'user "***"'
    assert masked(f'user "{secret[:9]}"', [secret]) == 'user "***"'
    assert masked(f"x{secret[3:]}y", [secret]) == "x***y"
    # A short text is masked whole; a run shorter than 8 of a longer one is the server's own.
    assert masked('role "bob7" does not exist', ["bob7"]) == 'role "***" does not exist'
    assert masked("password authentication failed", [secret]) == "password authentication failed"
    assert masked("a b", ["b"]) == "a b"  # a one-character text is nobody's echo
