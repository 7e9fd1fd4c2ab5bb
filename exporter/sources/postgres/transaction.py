"""How every PostgreSQL transaction of the exporter opens and ends: the
guarantees travel with each transaction, so they hold on every path to the
server (directly, or through a session or a transaction pooler): read only,
the statement and lock timeouts, no parallel workers, no JIT, TimeZone UTC,
generic plans, and no row-level security filtering (every row or an error)."""

from __future__ import annotations

from exporter.timeouts import Timeouts

COMMIT_SQL = "COMMIT"
ROLLBACK_SQL = "ROLLBACK"


def milliseconds(seconds: float) -> str:
    return str(max(1, int(seconds * 1000)))


def transaction_opening(timeouts: Timeouts) -> str:
    """The statements opening every transaction, sent as one simple-query message.

    Measured against the alternatives (`SELECT set_config(..., true)` after the
    BEGIN, or each SET on its own), this is the cheapest: the settings cost no
    round trip of their own.
    """
    return (
        "BEGIN TRANSACTION READ ONLY;"
        f" SET LOCAL statement_timeout = {milliseconds(timeouts.statement)};"
        f" SET LOCAL lock_timeout = {milliseconds(timeouts.lock)};"
        # Parallel workers each open every tenant table cold: these many-table
        # statements run several times faster without them.
        " SET LOCAL max_parallel_workers_per_gather = 0;"
        # A timestamp without time zone compared with now() (declared arrivals) is read as UTC.
        " SET LOCAL TimeZone = 'UTC';"
        # A large batch can cross jit_above_cost; compiling it costs more than running it.
        " SET LOCAL jit = off;"
        # A statement binding values (a declared backlog's pending values) would
        # otherwise be planned anew for its first 5 runs on every connection;
        # the plans do not depend on those values.
        " SET LOCAL plan_cache_mode = force_generic_plan;"
        # Row-level security would hide rows silently, and a count of the rows
        # left is a false number: with row_security off, PostgreSQL refuses
        # instead (42501) any statement a policy would filter; a role with
        # BYPASSRLS, or the tables' owner (unless the table FORCEs it), reads every row.
        " SET LOCAL row_security = off"
    )
