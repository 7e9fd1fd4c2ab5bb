"""Whether the road to PostgreSQL keeps a connection's server session from one of
its transactions to the next: decided before the first reading of a connection
in session pool mode, and by `diagnose`.

One connection alone cannot tell: an idle transaction pooler may well lend it
the same server session every time. So a second connection makes the pooler
show itself. While the second holds a transaction open, the first runs one (a
pooler must lend it another server session, or make it wait); then the second
runs another (a pooler that reuses server sessions first-in first-out lends it
the first's). On a road that keeps sessions, each connection sees its own
server process throughout, never the other's.
"""

from __future__ import annotations

import asyncio
from dataclasses import dataclass

import asyncpg

from exporter.timeouts import Timeouts

BACKEND_PID_SQL = "SELECT pg_backend_pid()"
COMMIT_SQL = "COMMIT"


class RoadUndecided(Exception):
    """The probe could not run: the second connection got no server session in time."""

    def __init__(self, evidence: str) -> None:
        self.evidence = evidence
        super().__init__(evidence)


@dataclass(frozen=True)
class SessionProbe:
    """Whether a connection keeps its server session from one transaction to the next."""

    kept: bool
    evidence: str


async def _pid(connection: asyncpg.Connection, opening: str, timeouts: Timeouts, commit: bool = True) -> int:
    """The server process of one transaction of `connection` (left open unless `commit`)."""
    await connection.execute(opening, timeout=timeouts.client)
    pid: int = await connection.fetchval(BACKEND_PID_SQL, timeout=timeouts.client)
    if commit:
        await connection.execute(COMMIT_SQL, timeout=timeouts.client)
    return pid


async def probe_road(
    first: asyncpg.Connection, second: asyncpg.Connection, opening: str, timeouts: Timeouts
) -> SessionProbe:
    """Whether `first` keeps its server session, `second` being another connection
    over the same road; `opening` starts each transaction. Both connections are
    left in an unknown state when the session is not kept. RoadUndecided when
    the second connection gets no server session within the lock timeout."""
    pid = await _pid(first, opening, timeouts)
    try:
        other = await asyncio.wait_for(_pid(second, opening, timeouts, commit=False), timeouts.lock)
    except TimeoutError:
        # A session pooler with no server session to spare keeps the second
        # connection waiting; so would a transaction pooler busy with others.
        raise RoadUndecided("a second connection got no server session in time (a pool with none to spare)") from None
    if other == pid:
        return SessionProbe(False, f"server process {pid} served two connections in turn")
    try:
        # Bounded like a lock wait: a pooler with one server session makes the
        # first connection wait for the second's transaction.
        again = await asyncio.wait_for(_pid(first, opening, timeouts), timeouts.lock)
    except TimeoutError:
        return SessionProbe(False, "a connection waited for another connection's transaction to end")
    if again != pid:
        return SessionProbe(False, f"server process {pid} became {again} between two transactions")
    await second.execute(COMMIT_SQL, timeout=timeouts.client)
    other_again = await _pid(second, opening, timeouts)
    if other_again != other:
        return SessionProbe(False, f"server process {other} became {other_again} between two transactions")
    return SessionProbe(True, f"server process {pid} kept between transactions")
