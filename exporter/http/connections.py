"""The HTTP connections the server holds: counted, capped, and shed the
longest idle first when the cap is reached.

An idle connection (one that is not being answered: no request yet, a request
head still arriving, or a keep-alive connection between requests) costs a file
descriptor and a little memory; it must never keep a scraper out. So a new
connection over the cap is never refused while an idle one can make room.
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
    """Every open connection, the idle ones in the order they became idle."""

    def __init__(self, cap: int, clock: Callable[[], float] = time.monotonic) -> None:
        self.cap = cap
        self.shed_total = 0
        self._clock = clock
        self._open: set[Sheddable] = set()
        self._idle: OrderedDict[Sheddable, None] = OrderedDict()
        self._unreported = 0
        self._refused_unreported = 0
        self._reported_at = -math.inf
        self._tail_key: tuple[int, int] | None = None
        self._tail = b""

    @property
    def open_now(self) -> int:
        return len(self._open)

    def opened(self, connection: Sheddable) -> bool:
        """Admit a new connection, shedding the longest idle one if the cap is reached.
        False when every connection is busy: the new one is to be closed."""
        if len(self._open) >= self.cap:
            if self._idle:
                oldest, _ = self._idle.popitem(last=False)
                self._open.discard(oldest)
                oldest.shed()
                self._count_shed(refused=False)
            else:
                self._count_shed(refused=True)
                return False
        self._open.add(connection)
        self._idle[connection] = None
        return True

    def busy(self, connection: Sheddable) -> None:
        """A request head is complete: the connection is being answered."""
        self._idle.pop(connection, None)

    def idle(self, connection: Sheddable) -> None:
        """The response is sent: the connection, open still, waits for the next request.
        (busy() took it out, so it goes in last: the most recently idle.)"""
        self._idle[connection] = None

    def closed(self, connection: Sheddable) -> None:
        self._open.discard(connection)
        self._idle.pop(connection, None)

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
