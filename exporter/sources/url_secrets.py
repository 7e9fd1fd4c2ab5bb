"""Credentials in PostgreSQL and Redis URLs: masked wherever they sit (the
userinfo, or a query parameter such as `?password=`), and URLs that cannot be
read one way refused, for both sources.

A password left unencoded can swallow what follows it, or be swallowed by it:
`?password=ab#cd` loses `#cd` as a fragment, `?password=ab&cd=ef` reads `cd`
as another parameter. So what a message shows stops where the URL stops being
readable one way: at a `#`, and at whatever follows a credential in the query.
"""

from __future__ import annotations

import re
import urllib.parse
from collections.abc import Collection

MASK = "***"
# Query parameters that carry a secret, for either source.
CREDENTIAL_PARAMETERS = frozenset({"password", "sslpassword", "sentinel_password"})
_BRACKETED = re.compile(r"\[[^\]]*\]")
_HOSTS = re.compile(r"[^:,]*(:[0-9]+)?(,[^:,]*(:[0-9]+)?)*")
ENCODE = "percent-encode @ : / ? # & % in the user and password (%40 %3A %2F %3F %23 %26 %25)"


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


def _masked_query(query: str) -> str:
    """The query with credential values masked; nothing after the first credential
    is shown, since it may be the rest of that credential."""
    shown = []
    pairs = query.split("&")
    for index, pair in enumerate(pairs):
        key, eq, _value = pair.partition("=")
        if eq and is_credential(key):
            shown.append(f"{key}={MASK}")
            if index + 1 < len(pairs):
                shown.append(MASK)
            break
        shown.append(pair)
    return "&".join(shown)


def mask_url(url: str) -> str:
    """The URL for messages and logs: every credential replaced by ***.

    An unambiguous authority loses just its password; one that does not parse
    one way is masked from the scheme to its last '@', user included (the text
    before a ':' may itself be a piece of a password). A fragment is never
    shown, nor anything in the query after a credential.
    """
    scheme, sep, rest = url.partition("://")
    if not sep:
        return url if "@" not in url and "#" not in url else MASK
    if ambiguous_authority(url):
        rest = MASK + rest[rest.rfind("@") :]
    else:
        try:
            netloc = urllib.parse.urlsplit(url).netloc
        except ValueError:
            netloc = ""
        if "@" in netloc:
            userinfo, _at, hosts = netloc.partition("@")
            user, colon, _password = userinfo.partition(":")
            rest = f"{user}:{MASK}@" if colon else f"{user}@"
            rest += hosts + url.partition("://")[2][len(netloc) :]
    rest, hash_mark, _fragment = rest.partition("#")
    head, qmark, query = rest.partition("?")
    if qmark:
        rest = f"{head}?{_masked_query(query)}"
    return f"{scheme}://{rest}{'#' + MASK if hash_mark else ''}"


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
