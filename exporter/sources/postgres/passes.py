"""One pass: a signal's batch statements over every active tenant, cut into
contiguous shares, one per lane, the lanes side by side and each running one
statement at a time. The first failure speaks for the pass: the other lanes
stop between two statements, never in the middle of one."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Sequence

import asyncpg

from exporter.sources.postgres.batches import BatchProgress, lane_shares
from exporter.sources.postgres.lanes import Lane

# One statement on a lane, in a transaction of its own; True for a lane's first of the pass.
RunStatement = Callable[[Lane, str, bool], Awaitable[list[asyncpg.Record]]]


async def run_pass(
    signal: str, statements: Sequence[str], lanes: Sequence[Lane], statement: RunStatement
) -> list[asyncpg.Record]:
    """The rows of every statement, run over `lanes` (one contiguous share each) by `statement`."""
    rows: list[asyncpg.Record] = []
    progress = BatchProgress(asyncio.get_running_loop().time)
    failures: list[Exception] = []

    async def run(lane: Lane, sqls: Sequence[str]) -> None:
        used: set[str] = set()
        for index, sql in enumerate(sqls):
            if failures:
                # The pass is unmeasured already: the other lanes stop
                # between two statements, never in the middle of one, so
                # their connections and prepared statements stay.
                return
            try:
                rows.extend(await statement(lane, sql, index == 0))
            except Exception as exc:
                failures.append(exc)
                return
            used.add(sql)
            progress.done(signal, len(statements))
        # Statements of this signal no longer needed (the tenants changed)
        # are released, and closed on the server with the next prepare.
        for stale in lane.by_signal.get(signal, set()) - used:
            lane.prepared.pop(stale, None)
        lane.by_signal[signal] = used

    async with asyncio.TaskGroup() as group:
        for lane, share in zip(lanes, lane_shares(statements, len(lanes)), strict=True):
            group.create_task(run(lane, share))
    if failures:
        raise failures[0]  # the first failure speaks for the pass
    return rows
