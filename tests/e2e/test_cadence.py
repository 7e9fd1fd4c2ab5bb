"""End to end: a declared backlog on a cadence of its own (ttl 6 s) beside the
built-in signals (1 s), the real exporter over a real PostgreSQL counting its
statements (pg_stat_statements), scraped every second by a real Prometheus
with the shipped rules rendered for seconds (dataMaxAge 3 s: the backlog's
data is older than that between its refreshes). The backlog is measured once
per its own TTL, by the database's own counts; its TTL is on the page and in
the rules; no alert says it is unmeasured, stale or its total unknown."""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterator
from pathlib import Path

import asyncpg
import pytest
import yaml

from devkit.mixin import evaluate
from devkit.process import RunningProcess, exporter_process, http_get
from devkit.servers import LocalPostgres
from exporter.tools.demo import EXPORTER_ROLE
from tests.alerts.shorten import write_shortened_rules
from tests.e2e.stack import prometheus, query, wait_for
from tests.platform import Platform, create_platform
from tests.scrapes import DATABASE_SIGNALS

BACKLOG_TTL = 6
BUILTIN_TTL = 1
# The rules for a Prometheus scraping every second: a copy's data counts until
# its signal's TTL plus 3 s, a signal unmeasured for 4 s alerts.
CONFIG = {"scrapeInterval": "1s", "dataMaxAge": "3s", "signalUnmeasuredFor": "4s", "signalStaleAge": "5s"}
WATCHED = "OrpycamcpPlatformTotalUnknown|OrpycamcpSignalUnmeasured|OrpycamcpSignalStale"
# The backlog's deadline is far above what its one-row read needs even on a loaded machine:
# the test is about its cadence, and a refresh cut by its deadline would be a true unmeasured.
DECLARATIONS = f"""
backlogs:
  outbox:
    help: Outbox events not yet sent.
    scope: global
    table: public.outbox
    pending:
      status: pending
    ttl: {BACKLOG_TTL}
    deadline: 5
"""


def statement_calls(admin_url: str, marker: str) -> int:
    """How many times the exporter's role ran the statements naming `marker` (pg_stat_statements)."""

    async def read() -> int:
        connection = await asyncpg.connect(admin_url)
        try:
            calls = await connection.fetchval(
                "SELECT coalesce(sum(s.calls), 0) FROM pg_stat_statements s JOIN pg_roles r ON r.oid = s.userid"
                " WHERE r.rolname = $1 AND s.query LIKE '%' || $2 || '%'",
                EXPORTER_ROLE,
                marker,
            )
            return int(calls)
        finally:
            await connection.close()

    return asyncio.run(read())


@pytest.fixture
def stack(statements_pg: LocalPostgres, tmp_path: Path) -> Iterator[tuple[Platform, RunningProcess, RunningProcess]]:
    platform = asyncio.run(create_platform(statements_pg))
    asyncio.run(platform.add_tenant("acme"))
    asyncio.run(
        platform.execute(
            "CREATE EXTENSION IF NOT EXISTS pg_stat_statements;"
            " CREATE TABLE public.outbox (id int PRIMARY KEY, status text NOT NULL);"
            " INSERT INTO public.outbox VALUES (1, 'pending'), (2, 'pending'), (3, 'sent');"
            f" GRANT SELECT ON public.outbox TO {EXPORTER_ROLE}"
        )
    )
    rendering = evaluate(CONFIG)
    rendered = tmp_path / "rendered.yml"
    rendered.write_text(yaml.safe_dump({"groups": rendering.rules["groups"] + rendering.alerts["groups"]}))
    rules = write_shortened_rules(tmp_path / "rules.yml", for_duration="4s", source=rendered)
    declarations = tmp_path / "declarations.yml"
    declarations.write_text(DECLARATIONS)
    args = [
        "--database.url",
        platform.exporter_url,
        "--backlogs.config-file",
        str(declarations),
        "--ttl",
        str(BUILTIN_TTL),
        "--deadline",
        "0.8",
    ]
    with exporter_process(args, tmp_path) as exporter, prometheus(exporter.port, None, rules, tmp_path) as prom:
        yield platform, exporter, prom


def test_a_backlog_on_its_own_cadence_beside_the_builtins(
    stack: tuple[Platform, RunningProcess, RunningProcess],
) -> None:
    platform, _, prom = stack
    admin = platform.admin_url
    # Prometheus answers queries once its storage is open.
    wait_for(lambda: http_get(prom.url + "/-/ready", timeout=5).status_code == 200, 60, prom.log)
    # Each signal's TTL, as Prometheus reads it and as the rules record it.
    wait_for(lambda: query(prom, "orpycamcp:signal_ttl_seconds:max"), 60, prom.log)
    ttls = {
        series["metric"]["signal"]: float(series["value"][1]) for series in query(prom, "orpycamcp_signal_ttl_seconds")
    }
    assert ttls == {**dict.fromkeys(DATABASE_SIGNALS, 1.0), "outbox": 6.0}
    # The backlog's total, whose data is up to 6 s old, beyond dataMaxAge (3 s).
    wait_for(lambda: query(prom, 'orpycamcp:backlog_pending_items:total{backlog="outbox"}'), 60, prom.log)

    started = time.monotonic()
    outbox_before = statement_calls(admin, "outbox")
    dlq_before = statement_calls(admin, "evento_dead_letter")
    # Four refreshes of the backlog, counted by the database.
    wait_for(lambda: statement_calls(admin, "outbox") >= outbox_before + 4, 120, prom.log)
    elapsed = time.monotonic() - started
    outbox = statement_calls(admin, "outbox") - outbox_before
    dlq = statement_calls(admin, "evento_dead_letter") - dlq_before
    print(  # the figures for the closing note
        f"over {elapsed:.1f} s: outbox measured {outbox} times ({60 * outbox / elapsed:.1f}/min),"
        f" dlq {dlq} times ({60 * dlq / elapsed:.1f}/min)"
    )
    # Never more often than once per its own TTL (plus the one in flight at the start).
    assert outbox <= elapsed / BACKLOG_TTL + 2
    # The built-in signal beside it, scraped every second, refreshed more often than the backlog.
    assert dlq > outbox

    # Over the whole run: the backlog's total never unknown, nothing unmeasured or stale.
    window = f"{int(time.monotonic() - started) + 60}s"
    fired = query(prom, f'count_over_time(ALERTS{{alertname=~"{WATCHED}"}}[{window}])')
    assert fired == [], fired
    [measured] = query(prom, f'min_over_time(orpycamcp_signal_measured{{signal="outbox"}}[{window}])')
    assert measured["value"][1] == "1"
