"""The HTTP connections the server holds: counted, capped, and shed the
longest idle first when the cap is reached: the new connection's own client's
longest idle one if it has one, else the longest idle of all.

An idle connection (one that is not being answered: no request yet, a request
head still arriving, or a keep-alive connection between requests) costs a file
descriptor and a little memory; it must never keep a scraper out. So a new
connection over the cap is never refused while an idle one can make room. And
a client that floods makes room from its own connections first: a scraper's
new connection is idle from its accept until its head is read, and on a loaded
machine the event loop can accept a cap's worth of a flood's reconnections
before it reads that head; shed by age alone, the scraper's would then be the
longest idle.
"""

from __future__ import annotations

import logging
import math
import time
from collections import OrderedDict
from collections.abc import Callable
from typing import Protocol

from exporter.exposition.assemble import assemble_connections
from exporter.exposition.text import render

log = logging.getLogger("orpycamcp.http")

# At most one shedding report per this many seconds, however hard the flood.
SHED_LOG_INTERVAL = 60.0


class Sheddable(Protocol):
    def shed(self) -> None: ...


class ConnectionBook:
    """Every open connection, the idle ones in the order they became idle, of all
    clients and of each client (by address)."""

    def __init__(self, cap: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self.shed_total = 0
        self._clock = clock
        self._open: dict[Sheddable, str | None] = {}  # each connection's client address
        self._idle: OrderedDict[Sheddable, None] = OrderedDict()
        self._idle_of: dict[str | None, OrderedDict[Sheddable, None]] = {}
        self._unreported = 0
        self._refused_unreported = 0
        self._reported_at = -math.inf
        self._tail_key: tuple[int, int] | None = None
        self._tail = b""

    @property
    def open_now(self) -> int:
        return len(self._open)

    def opened(self, connection: Sheddable, client: str | None = None) -> bool:
        """Admit a new connection from `client` (its address), shedding at the cap that
        client's longest idle connection, else the longest idle of all.
        False when every connection is busy: the new one is to be closed."""
        if len(self._open) >= self.cap:
            own = self._idle_of.get(client)
            oldest = next(iter(own)) if own else next(iter(self._idle), None)
            if oldest is not None:
                self.closed(oldest)
                oldest.shed()
                self._count_shed(refused=False)
            else:
                self._count_shed(refused=True)
                return False
        self._open[connection] = client
        self.idle(connection)
        return True

    def busy(self, connection: Sheddable) -> None:
        """A request head is complete: the connection is being answered."""
        self._idle.pop(connection, None)
        client = self._open.get(connection)
        own = self._idle_of.get(client)
        if own is not None:
            own.pop(connection, None)
            if not own:
                del self._idle_of[client]

    def idle(self, connection: Sheddable) -> None:
        """The response is sent: the connection, open still, waits for the next request.
        (busy() took it out, so it goes in last: the most recently idle.)"""
        if connection not in self._open:
            return
        self._idle[connection] = None
        self._idle_of.setdefault(self._open[connection], OrderedDict())[connection] = None

    def closed(self, connection: Sheddable) -> None:
        self.busy(connection)
        self._open.pop(connection, None)

    def _count_shed(self, refused: bool) -> None:
        self.shed_total += 1
        self._unreported += 1
        self._refused_unreported += refused
        now = self._clock()
        if now - self._reported_at >= SHED_LOG_INTERVAL:
            log.warning(
                "connection cap %d reached: closed %d connections (the longest idle first; %d new ones"
                " refused as every open connection was busy); %d open; reported at most once a minute",
                self.cap,
                self._unreported,
                self._refused_unreported,
                self.open_now,
            )
            self._reported_at = now
            self._unreported = self._refused_unreported = 0

    def tail(self) -> bytes:
        """The connection families, rendered; again only when a figure changed."""
        key = (self.open_now, self.shed_total)
        if key != self._tail_key:
            self._tail = render(assemble_connections(*key))
            self._tail_key = key
        return self._tail
