"""A value read from a file, as container platforms hand out secrets (a mounted
Kubernetes or Docker secret)."""

from __future__ import annotations

from exporter.options import Refused


def read_secret(path: str) -> str:
    """A one-line value from a file, as container platforms hand out secrets:
    whitespace around it (a final newline) ignored. Refusals name the file, never its content."""
    try:
        with open(path, encoding="utf-8") as handle:
            content = handle.read()
    except OSError as exc:
        raise Refused(f"cannot read {path}: {exc.strerror}") from None
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
