"""Where a PostgreSQL URL points when it names a unix-socket directory, for
messages: the OS error alone ("No such file or directory") names no path."""

from __future__ import annotations

import urllib.parse

DEFAULT_PORT = 5432


def postgres_socket(url: str) -> str:
    """The socket file libpq and asyncpg would open for `url` (host given as a directory)."""
    try:
        parts = urllib.parse.urlsplit(url)
        query = urllib.parse.parse_qs(parts.query)
        host = query.get("host", [urllib.parse.unquote(parts.hostname or "")])[0]
        port = int(query.get("port", [str(parts.port or DEFAULT_PORT)])[0])
    except ValueError:
        return "the unix socket of --database-url"
    if not host.startswith("/"):
        return f"{host}:{port}"
    return f"{host.rstrip('/')}/.s.PGSQL.{port}"
