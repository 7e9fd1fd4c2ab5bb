"""Whether the pooler (if any) between the exporter and PostgreSQL keeps a
connection's server session from one of its transactions to the next: decided
before the first reading of a connection in session pool mode, and by `diagnose`;
and what a reader does once it found a session not kept.

One connection alone cannot tell: an idle transaction pooler may well lend it
the same server session every time. So a second connection makes the pooler
show itself. While the second holds a transaction open, the first runs one (a
pooler must lend it another server session, or make it wait); then the second
runs another (a pooler that reuses server sessions first-in first-out lends it
the first's). Directly, or through a session pooler, each connection sees its own
server process throughout, never the other's.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass

import asyncpg

from exporter.sources.postgres.errors import SessionNotKept
from exporter.sources.postgres.transaction import COMMIT_SQL
from exporter.timeouts import Timeouts

log = logging.getLogger("orpycamcp.postgres")

BACKEND_PID_SQL = "SELECT pg_backend_pid()"


class PoolerUndecided(Exception):
    """The probe could not decide: a connection got no server session, or no
    answer, in time. A slow server is no evidence of a pooler: nothing is
    recorded, and the next connection probes again. `first_in_doubt`: the
    first connection's transaction was abandoned mid-way, so it is not used."""

    def __init__(self, evidence: str, first_in_doubt: bool = False) -> None:
        self.evidence = evidence
        self.first_in_doubt = first_in_doubt
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


async def probe_pooler(
    first: asyncpg.Connection, second: asyncpg.Connection, opening: str, timeouts: Timeouts
) -> SessionProbe:
    """Whether `first` keeps its server session, `second` being another connection
    to the same server; `opening` starts each transaction. Both connections are
    left in an unknown state when the session is not kept. PoolerUndecided when
    the second connection gets no server session within the lock timeout, or the
    first no answer even once the second's transaction ended: time alone never
    decides."""
    pid = await _pid(first, opening, timeouts)
    try:
        other = await asyncio.wait_for(_pid(second, opening, timeouts, commit=False), timeouts.lock)
    except TimeoutError:
        # A session pooler with no server session to spare keeps the second
        # connection waiting; so would a transaction pooler busy with others.
        raise PoolerUndecided("a second connection got no server session in time (a pool with none to spare)") from None
    if other == pid:
        return SessionProbe(False, f"server process {pid} served two connections in turn")
    # A pooler with no other server session to lend makes the first connection
    # wait for the second's transaction; so does a slow server. Which one it was
    # shows once the second's transaction ends: the first then gets the second's
    # server process from a pooler, and its own from a slow server.
    again_task = asyncio.ensure_future(_pid(first, opening, timeouts))
    try:
        done, _ = await asyncio.wait({again_task}, timeout=timeouts.lock)
        await second.execute(COMMIT_SQL, timeout=timeouts.client)
        again = await asyncio.wait_for(again_task, timeouts.client)
    except TimeoutError:
        raise PoolerUndecided(
            "a connection's transaction got no answer in time, even once the other connection's ended",
            first_in_doubt=True,
        ) from None
    finally:
        again_task.cancel()
    if not done and again == other:
        return SessionProbe(
            False,
            f"a connection waited for another connection's transaction to end, then got its server process {other}",
        )
    if again != pid:
        return SessionProbe(False, f"server process {pid} became {again} between two transactions")
    other_again = await _pid(second, opening, timeouts)
    if other_again != other:
        return SessionProbe(False, f"server process {other} became {other_again} between two transactions")
    return SessionProbe(True, f"server process {pid} kept between transactions")


class SessionWatch:
    """What the readers of one set of lanes learned about the pooler: set once a
    connection's server session did not last in session pool mode. It will not
    start lasting, so the signals stay unmeasured (with the setting to change)
    instead of flapping between measured and not."""

    def __init__(self) -> None:
        self.session_not_kept: SessionNotKept | None = None

    def not_kept(self, evidence: str) -> SessionNotKept:
        """The error to raise; logged the first time only."""
        error = SessionNotKept(evidence)
        if self.session_not_kept is None:
            self.session_not_kept = error
            log.error("%s", error, extra={"reason": str(error.reason)})
        return error

    def refuse_if_lost(self) -> None:
        """Raises SessionNotKept once a session was found not kept: nothing is read any more."""
        lost = self.session_not_kept
        if lost is not None:
            raise SessionNotKept(lost.evidence)

    async def require_kept(
        self,
        connection: asyncpg.Connection,
        open_other: Callable[[], Awaitable[asyncpg.Connection]],
        opening: str,
        timeouts: Timeouts,
    ) -> None:
        """Raises SessionNotKept (and drops `connection`) unless it keeps its server
        session, probed with a second connection from `open_other`."""
        try:
            other = await open_other()
            try:
                probe = await probe_pooler(connection, other, opening, timeouts)
            finally:
                other.terminate()
        except PoolerUndecided as undecided:
            if undecided.first_in_doubt:
                connection.terminate()
                raise TimeoutError(f"the pooler check: {undecided.evidence}") from None
            # As before the probe: every pass still checks the server process and
            # every statement name, so a changed session is found, never read.
            log.warning(
                "whether the connection path keeps sessions was not checked: %s; checked on every pass instead",
                undecided,
            )
            return
        except BaseException:
            connection.terminate()
            raise
        if not probe.kept:
            connection.terminate()
            raise self.not_kept(probe.evidence)
