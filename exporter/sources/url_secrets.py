"""Credentials in PostgreSQL and Redis URLs: never shown, wherever they sit (the
userinfo, or a query parameter such as `?password=`), and URLs that cannot be
read one way refused, for both sources. A URL in a message is rebuilt from the
parts that parsed (mask_url); an error text from a library is shown only when
it quotes nothing that may be a secret (quotes, secret_texts). A server's error
text is shown with every echo of a credential the exporter was given masked
(server_secrets, masked; server_mask for a source, PostgreSQL's and Redis's
alike): the user name included when the URL gives no password beside it, for
then it may be a password put in the user's place.

A password left unencoded can swallow what follows it, or be swallowed by it:
`?password=ab#cd` loses `#cd` as a fragment, `?password=ab&cd=ef` reads `cd`
as another parameter. Such URLs are refused (ambiguity), and no message shows
a query, a fragment, a user or a password: only what parsed one way.
"""

from __future__ import annotations

import functools
import re
import urllib.parse
from collections.abc import Callable, Collection, Iterable, Mapping

MASK = "***"
UNSHOWN = "(rest not shown: it does not parse one way)"
QUOTED_PIECE = 4
# The shortest run of a credential a server's echo of it is recognised by (or the whole credential).
ECHOED = 8
SHOWN_SCHEMES = frozenset(
    {
        "postgresql",
        "postgres",
        "redis",
        "rediss",
        "unix",
        "redis+sentinel",
        "rediss+sentinel",
        "redis+cluster",
        "rediss+cluster",
    }
)
# What a message copies from a URL: plain host names, IP addresses and ports; a
# plain path (the database, or Sentinel's /service/db). Anything else is not shown.
_HOST = r"(?:[A-Za-z0-9_.-]+|\[[0-9A-Fa-f:.]+\])(?::[0-9]{1,5})?"
_SHOWN_HOSTS = re.compile(rf"(?:{_HOST}(?:,{_HOST})*)?")
_SHOWN_PATH = re.compile(r"(?:/[A-Za-z0-9_.-]{1,63}){0,8}/?")
# Query parameters that carry a secret, for either source.
CREDENTIAL_PARAMETERS = frozenset({"password", "sslpassword", "sentinel_password"})
_BRACKETED = re.compile(r"\[[^\]]*\]")
_HOSTS = re.compile(r"[^:,]*(:[0-9]+)?(,[^:,]*(:[0-9]+)?)*")
ENCODE = "percent-encode @ : / ? # & % in the user and password (%40 %3A %2F %3F %23 %26 %25)"
UNPARSED = (
    "it holds an unmatched '[' or ']', or a character that Unicode normalizes into one of / ? # @ :"
    f" (such as a fullwidth ＠); {ENCODE} and every non-ASCII character"
)


def is_credential(key: str) -> bool:
    name = urllib.parse.unquote_plus(key).lower()
    return name in CREDENTIAL_PARAMETERS or name.endswith("password")


def ambiguous_authority(url: str) -> bool:
    """True when the user or password holds a reserved character left unencoded, so
    that parsers disagree on where the password ends (asyncpg splits at the first
    '@', urllib at the last; '/', '?' or '#' end the authority early).

    An '@' after the authority is harmless only inside a query value
    (`?application_name=a@b`) of a URL whose authority parses: in the path or
    the fragment it can only come from a password cut short.
    """
    _, sep, rest = url.partition("://")
    if not sep or "@" not in rest:
        return False
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return True
    if parts.netloc.count("@") > 1 or "@" in parts.path or "@" in parts.fragment:
        return True
    if any("@" in field.partition("=")[0] for field in parts.query.split("&")):
        return True
    # No user at all, yet an '@' further on: the hosts must read as hosts
    # (u:pa?x=y@h ends the authority at "u:pa", whose "port" is a password piece).
    return "@" not in parts.netloc and _HOSTS.fullmatch(_BRACKETED.sub("", parts.netloc)) is None


def mask_url(url: str) -> str:
    """The URL for messages and logs, rebuilt from the parts that parsed one way:
    the scheme (a known one), `***@` where credentials were given, the hosts
    and ports, and the path (the database, or Sentinel's service). Nothing is
    copied from the user, the password, the query or the fragment, so no
    encoding mistake can carry a piece of a password into the text; a URL that
    does not parse one way shows its scheme alone."""
    scheme, sep, _rest = url.partition("://")
    scheme = scheme.lower()
    if not sep or scheme not in SHOWN_SCHEMES:
        return "(a URL of no known scheme, not shown)"
    if ambiguous_authority(url):
        return f"{scheme}://{UNSHOWN}"
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return f"{scheme}://{UNSHOWN}"
    _userinfo, at, hosts = parts.netloc.rpartition("@")
    shown_hosts = hosts if _SHOWN_HOSTS.fullmatch(hosts) else "(hosts not shown)"
    shown_path = parts.path if _SHOWN_PATH.fullmatch(parts.path) else "/(path not shown)"
    return f"{scheme}://{MASK + '@' if at else ''}{shown_hosts}{shown_path}"


def quotes(message: str, texts: Iterable[str]) -> bool:
    """True when `message` holds a piece (4 characters, or a whole shorter text of 2
    or 3) of any of `texts`: a message from a library that may quote a URL's
    secret parts is shown only when this is False."""
    for text in texts:
        width = min(QUOTED_PIECE, len(text))
        if width < 2:
            continue
        if any(text[start : start + width] in message for start in range(len(text) - width + 1)):
            return True
    return False


def secret_texts(url: str) -> tuple[str, ...]:
    """Everything of `url` that may hold a password, raw and decoded: whatever is not
    the scheme, the hosts or the path (all of it when the URL does not parse one way)."""
    rest = url.partition("://")[2]
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return (rest,)
    if ambiguous_authority(url):
        return (rest, urllib.parse.unquote(rest))
    userinfo = parts.netloc.rpartition("@")[0]
    texts = [userinfo, parts.fragment]
    after_credential = False
    for pair in parts.query.split("&"):
        key, _eq, value = pair.partition("=")
        credential = is_credential(key)
        # After a credential, a "key" may be the rest of a password cut at a '&';
        # before it, in a query that reads one way, a value is only a value.
        if after_credential:
            texts.append(pair)
        elif credential:
            texts.append(value)
        after_credential = after_credential or credential
    return tuple(text for raw in texts if raw for text in {raw, urllib.parse.unquote_plus(raw)})


def ambiguity(url: str, parameters: Collection[str]) -> str | None:
    """Why the URL cannot be read one way, in words that quote nothing after the
    point where it stopped being readable; None when it can. `parameters` are the
    query parameters the source knows: only those may follow a credential. (An
    authority that does not parse one way is each source's own check: see
    ambiguous_authority.)"""
    if "#" in url:
        return f"a '#' starts a fragment, which a connection URL never has: {ENCODE}"
    _head, _qmark, query = url.partition("?")
    if not query:
        return None
    seen: set[str] = set()
    after_credential = False
    for pair in query.split("&"):
        key, eq, _value = pair.partition("=")
        name = urllib.parse.unquote_plus(key)
        if after_credential and not parameters:
            return f"the query goes on after a password, which may go on there: put it last in the query, or {ENCODE}"
        if after_credential and (not eq or name not in parameters):
            return (
                "the query holds text after a password that is not a known parameter, so the password may"
                f" go on there: {ENCODE}"
            )
        if name in seen:
            which = "a parameter after a password" if after_credential else f"parameter {name!r}"
            return f"{which} is given twice, and only one can be used: give it once"
        seen.add(name)
        after_credential = after_credential or (bool(eq) and is_credential(key))
    return None


def _user_alone(url: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """The user name, from the userinfo, `?user=` or PGUSER, when the URL gives no password
    beside it (no `user:password@`, no `?password=`): then it may be a password."""
    try:
        parts = urllib.parse.urlsplit(url)
    except ValueError:
        return ()
    userinfo = parts.netloc.rpartition("@")[0]
    pairs = [pair.partition("=") for pair in parts.query.split("&") if pair]
    if ":" in userinfo or any(is_credential(key) for key, _eq, _value in pairs):
        return ()
    users = [userinfo] + [value for key, _eq, value in pairs if urllib.parse.unquote_plus(key) == "user"]
    if not any(users):
        users.append(env.get("PGUSER", ""))
    return tuple(text for raw in users if raw for text in {raw, urllib.parse.unquote_plus(raw)})


def server_secrets(url: str, env: Mapping[str, str]) -> tuple[str, ...]:
    """What a server's error text must not show of what the exporter was given: every
    part of `url` that may hold a password (secret_texts, but of `user:password@` the
    password alone: the URL was read one way at load), and the user name when it is the
    only credential the URL gives (_user_alone)."""
    texts = secret_texts(url)
    if ambiguous_authority(url):
        return texts
    try:
        userinfo = urllib.parse.urlsplit(url).netloc.rpartition("@")[0]
    except ValueError:  # secret_texts holds all of it
        return texts
    _user, colon, password = userinfo.partition(":")
    if colon:
        whole = {userinfo, urllib.parse.unquote_plus(userinfo)}
        passwords = {password, urllib.parse.unquote(password), urllib.parse.unquote_plus(password)} - {""}
        texts = tuple(text for text in texts if text not in whole) + tuple(sorted(passwords))
    return texts + _user_alone(url, env)


def masked(message: str, texts: Iterable[str]) -> str:
    """`message` with every echo of any of `texts` replaced by one MASK: each run of the
    message that is a piece of a text, at least ECHOED characters long (or the whole
    text, when shorter). A server echoes what it was given whole (a user name, cut at
    63 bytes at most), so a short run a word of its own happens to share with a password
    ("assw" of "password") is left as it is."""
    hidden = [False] * len(message)
    for text in texts:
        need = min(ECHOED, len(text))
        if need < 2:
            continue
        for start in range(len(text) - need + 1):
            at = message.find(text[start : start + need])
            while at != -1:
                length = need
                while (
                    at + length < len(message)
                    and start + length < len(text)
                    and message[at + length] == text[start + length]
                ):
                    length += 1
                hidden[at : at + length] = [True] * length
                at = message.find(text[start : start + need], at + 1)
    if not any(hidden):
        return message
    shown: list[str] = []
    for index, char in enumerate(message):
        if not hidden[index]:
            shown.append(char)
        elif index == 0 or not hidden[index - 1]:
            shown.append(MASK)
    return "".join(shown)


Mask = Callable[[str], str]  # a text with the pieces it must not show hidden


def unmasked(text: str) -> str:
    return text


def server_mask(url: str, env: Mapping[str, str]) -> Mask:
    """What a source given `url` passes a server's words through: every echo of a
    credential of the URL (server_secrets) hidden."""
    return functools.partial(masked, texts=server_secrets(url, env))
