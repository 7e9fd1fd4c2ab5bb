"""Host names as the resolver takes them, checked before anything resolves them.

Python's resolver encodes a host name with IDNA first and raises
`UnicodeError` (not `socket.gaierror`) for a name it cannot encode: an empty
label (`a..b`, `.a`), a label over 63 characters, a character IDNA refuses.
Unchecked, such a name is a traceback wherever it is resolved (binding the
listen address, connecting to PostgreSQL or Redis on every scrape); checked
here, it is one refusal at load.
"""

from __future__ import annotations

MAX_NAME = 253  # a DNS name's length, dots included (RFC 1035)
_IDNA = "a label (the text between two dots) is empty or longer than 63 characters, or holds a character IDNA refuses"


def host_problem(host: str) -> str | None:
    """Why `host` (a name or an IP address, unbracketed) cannot be resolved as a host
    name; None when it can. The words never quote the host: a password left
    unencoded in a URL can reach the host's place."""
    if "\x00" in host:
        return "a host name holds a NUL character"
    try:
        encoded = host.encode("idna")
    except UnicodeError:
        return f"not a host name: {_IDNA}"
    if len(encoded.rstrip(b".")) > MAX_NAME:
        return f"not a host name: longer than {MAX_NAME} characters"
    return None
