"""`diagnose`'s look at a PostgreSQL address that gives no session in time: does
it accept connections at all? A pooler (PgBouncer) whose server is down accepts
them, authenticates the client itself, then holds the session back while it
retries the server."""

from __future__ import annotations

import asyncio
import contextlib

from exporter.sources.postgres.dsn import parse

NO_SESSION_HINT = (
    "the address accepts connections but gives no session: the PostgreSQL server behind a pooler (PgBouncer)"
    " is down or out of its reach (or a proxy on the way stalls). Start the server behind the pooler, or fix"
    " the pooler's [databases] entry; the pooler's log says why it cannot connect (\"connect failed\")"
)


async def accepting_host(url: str, timeout: float) -> str | None:  # noqa: ASYNC109 -- one bound for all hosts
    """The first host of `url` that accepts a connection within `timeout`; None when none does."""
    for host in parse(url).hosts:
        with contextlib.suppress(OSError, TimeoutError):
            async with asyncio.timeout(timeout):
                if host.is_socket:
                    _reader, writer = await asyncio.open_unix_connection(host.address)
                else:
                    _reader, writer = await asyncio.open_connection(host.address, host.port)
            writer.close()
            return str(host)
    return None
