"""Text for a human's terminal or a text log: control characters escaped.

Tenant slugs, SQL identifiers and server error texts can carry newlines or
terminal escape sequences; written raw they would forge log lines or repaint
a terminal. JSON logs escape them already."""

from __future__ import annotations

import re

# C0 and C1 control characters and DEL; a tab is kept only as "\t" too.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_NAMED = {"\n": "\\n", "\r": "\\r", "\t": "\\t"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    return _NAMED.get(char) or f"\\x{ord(char):02x}"


def printable(text: str) -> str:
    """`text` on one line, every control character written as an escape."""
    return _CONTROL.sub(_escape, text)


def has_control(text: str) -> bool:
    return _CONTROL.search(text) is not None


# A data value quoted in a log line or on a terminal: enough to recognise it.
SHOWN_CHARACTERS = 80


def shortened(text: str, limit: int = SHOWN_CHARACTERS) -> str:
    """`text` on one line, cut to `limit` characters with its length stated when longer."""
    if len(text) <= limit:
        return printable(text)
    return f"{printable(text[:limit])}... ({len(text):,} characters)"


def quoted(value: object, limit: int = SHOWN_CHARACTERS) -> str:
    """A data value (a label value, a Redis reply) as a message quotes it: its repr, shortened."""
    return shortened(repr(value), limit)
