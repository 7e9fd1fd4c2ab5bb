"""A value read from a file, as container platforms hand out secrets (a mounted
Kubernetes or Docker secret)."""

from __future__ import annotations

import os
import stat

from exporter.options import Refused

MAX_BYTES = 1 << 16  # a URL is a few hundred bytes


def read_secret(path: str) -> str:
    """A one-line value from a file, as container platforms hand out secrets:
    whitespace around it (a final newline) ignored. Refusals name the file, never its content."""
    if "\x00" in path:
        raise Refused("the path holds a NUL character")
    try:
        # Not opened before it is known to be a file: a FIFO would block the open,
        # and a device (/dev/zero) never ends.
        regular = stat.S_ISREG(os.stat(path).st_mode)
        if regular:
            with open(path, "rb") as handle:
                data = handle.read(MAX_BYTES + 1)
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
    if not regular:
        raise Refused(f"{path} is not a regular file")
    if len(data) > MAX_BYTES:
        raise Refused(f"{path} is larger than {MAX_BYTES} bytes: one URL is expected")
    try:
        content = data.decode("utf-8")
    except UnicodeDecodeError:
        raise Refused(f"{path} is not UTF-8 text") from None
    value = content.strip()
    if not value:
        raise Refused(f"{path} is empty")
    if "\n" in value:
        raise Refused(f"{path} holds more than one line")
    if any(char.isspace() for char in value):
        raise Refused(f"{path}: the URL holds whitespace (spaces inside a URL are written %20)")
    return value
