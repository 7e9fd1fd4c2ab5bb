"""OrpycamcpDeadLetterPurgeStopped and OrpycamcpDedupPurgeStopped over 8 days of a
real PostgreSQL purged as the platform purges (ADR-021 MVP-3: terminal dead
letters 90 days after their resolved_at, per origin_group; MVP-1: notification
dedup rows 7 days after their processed_at; both once a day), measured every
hour by the exporter's own housekeeping signal.

Purged on days 0 to 4: no page at any hour, although the oldest row left grows
to a day past the horizon before each purge. The purge stopped after day 4: a
page 2 days and 2 hours after the last purge ran (the oldest row passes the
horizon plus two intervals, then `for: 1h` at an hourly evaluation) for every
flow dense enough to leave a row at the horizon; a dead letter a week leaves
none there, and pages only once its own row is two days overdue (after the
8 days replayed here). A pending dead letter 200 days old is never purged and
never counted."""

from __future__ import annotations

import time
from datetime import UTC, datetime
from pathlib import Path

import asyncpg
import pytest

from exporter.signals import housekeeping
from registry import BUILTIN
from tests.platform import Platform
from tests.scrapes import make_exporter

from .replay import Check, Recording, Rules, alert_labels, promtool_test

pytestmark = pytest.mark.anyio

HOUR_S = 3600
DAY_S = 86_400
DAYS = 8
LAST_PURGE_DAY = 4
DEAD_LETTER_HORIZON_S = 90 * DAY_S
DEDUP_HORIZON_S = 7 * DAY_S
THRESHOLD_S = {"dead_letter": DEAD_LETTER_HORIZON_S + 2 * DAY_S, "dedup": DEDUP_HORIZON_S + 2 * DAY_S}
DEAD_LETTER_ALERT = "OrpycamcpDeadLetterPurgeStopped"
DEDUP_ALERT = "OrpycamcpDedupPurgeStopped"
RULES = Rules(("orpycamcp:housekeeping_",), "orpycamcp.housekeeping.alerts")
# Seconds between two rows of each flow: dead letters resolved per origin_group
# (knowledge-service: none, its series absent), dedup rows processed.
DEAD_LETTER_SPACING_S = {
    "signature-service": DAY_S // 10,
    "workflow-service": DAY_S // 200,
    "notification-service": 7 * DAY_S,
}
DEDUP_SPACING_S = DAY_S // 1000
# The replay's first day, in days since the epoch modulo 7 (the epoch was a Thursday: 3 is a
# Sunday): the weekly flow's row left by the last purge then pages 12 days after the start.
START_WEEKDAY = 3
TENANT = '"tenant_acme"'


async def add_rows(platform: asyncpg.Connection, after_s: int, until_s: int) -> None:
    """Each flow's rows whose time falls in (after_s, until_s], on a grid from the epoch."""
    for group, spacing in DEAD_LETTER_SPACING_S.items():
        await platform.execute(
            f"INSERT INTO {TENANT}.evento_dead_letter (event_id, tenant_slug, origin_group, status, created_at,"
            " resolved_at) SELECT $1 || g, 'acme', $1, 'resolved', to_timestamp(g * $2 - 60), to_timestamp(g * $2)"
            " FROM generate_series($3::bigint / $2 + 1, $4::bigint / $2) AS g",
            group,
            spacing,
            after_s,
            until_s,
        )
    await platform.execute(
        f"INSERT INTO {TENANT}.notification_processed_events (event_id, processed_at)"
        " SELECT 'n' || g, to_timestamp(g * $1) FROM generate_series($2::bigint / $1 + 1, $3::bigint / $1) AS g",
        DEDUP_SPACING_S,
        after_s,
        until_s,
    )


async def purge(platform: asyncpg.Connection, now_s: int) -> None:
    """The platform's daily purges (ADR-021), at `now_s`: per origin_group, then the dedup table."""
    for group in DEAD_LETTER_SPACING_S:
        await platform.execute(
            f"DELETE FROM {TENANT}.evento_dead_letter WHERE status IN ('resolved', 'discarded')"
            " AND tenant_slug = 'acme' AND origin_group = $1"
            " AND resolved_at < to_timestamp($2) - make_interval(days => 90)",
            group,
            now_s,
        )
    await platform.execute(
        f"DELETE FROM {TENANT}.notification_processed_events"
        " WHERE processed_at < to_timestamp($1) - make_interval(days => 7)",
        now_s,
    )


def first_firing(oldest_s: int, start_s: int, threshold_s: int) -> int:
    """The promtool time the alert fires for a row at `oldest_s` left by the last purge:
    the first hourly evaluation past the threshold, then one hour pending."""
    crossing = oldest_s + threshold_s - start_s  # promtool time the age reaches the threshold
    return (crossing // HOUR_S + 1) * HOUR_S + HOUR_S


async def test_a_daily_purge_never_pages_and_a_stopped_one_pages_two_days_and_two_hours_after_its_last_run(
    platform: Platform, tmp_path: Path
) -> None:
    await platform.add_tenant("acme")
    admin = await asyncpg.connect(platform.admin_url)  # one session for the platform's writes
    # A midnight, every time of the replay in the past, and always the same day of the epoch's
    # week: the rows fall on a grid from the epoch, so the weekly flow's oldest row left by the
    # last purge, and the hour it pages, would move with the day the test runs (on two days of
    # seven it paged within the 8 days). START_WEEKDAY puts that row farthest from the horizon.
    start_day = int(time.time()) // DAY_S - DAYS - 1
    start_s = (start_day - (start_day - START_WEEKDAY) % 7) * DAY_S
    # The history the purges found on day 0: 100 days of dead letters, 10 of dedup rows.
    await add_rows(admin, start_s - 100 * DAY_S, start_s)
    await admin.execute(
        f"DELETE FROM {TENANT}.notification_processed_events WHERE processed_at < to_timestamp($1)",
        start_s - 10 * DAY_S,
    )
    await platform.add_dead_letter(
        "acme", "stuck", "signature-service", "pending", datetime.fromtimestamp(start_s - 200 * DAY_S, UTC)
    )
    exporter = make_exporter(platform.exporter_url, signals=housekeeping.NAME)
    recording = Recording(step_s=HOUR_S)
    try:
        for hour in range(DAYS * 24 + 1):
            now_s = start_s + hour * HOUR_S
            if hour:
                await add_rows(admin, now_s - HOUR_S, now_s)
            if hour % 24 == 0 and hour // 24 <= LAST_PURGE_DAY:
                await purge(admin, now_s)
            await recording.measure_signal(housekeeping.SIGNAL, exporter.sources, BUILTIN, now_s)
    finally:
        await exporter.close()
        await admin.close()

    last_purge_s = start_s + LAST_PURGE_DAY * DAY_S
    firing_from: dict[tuple[str, str], int] = {}
    for group, spacing in DEAD_LETTER_SPACING_S.items():
        oldest = -(-(last_purge_s - DEAD_LETTER_HORIZON_S) // spacing) * spacing
        firing_from[(DEAD_LETTER_ALERT, group)] = first_firing(oldest, start_s, THRESHOLD_S["dead_letter"])
    oldest = -(-(last_purge_s - DEDUP_HORIZON_S) // DEDUP_SPACING_S) * DEDUP_SPACING_S
    firing_from[(DEDUP_ALERT, "")] = first_firing(oldest, start_s, THRESHOLD_S["dedup"])
    # The dense flows page 2 days and 2 hours after the last purge; the weekly one not in these 8 days.
    stated = (LAST_PURGE_DAY + 2) * DAY_S + 2 * HOUR_S
    assert {key: at for key, at in firing_from.items() if at <= DAYS * DAY_S} == {
        (DEAD_LETTER_ALERT, "signature-service"): stated,
        (DEAD_LETTER_ALERT, "workflow-service"): stated,
        (DEDUP_ALERT, ""): stated,
    }

    checks = []
    for at in range(0, DAYS * DAY_S + 1, HOUR_S):
        for alert in (DEAD_LETTER_ALERT, DEDUP_ALERT):
            firing = tuple(
                alert_labels(alert, "housekeeping", **({"origin_group": group} if group else {}))
                for (name, group), since in sorted(firing_from.items())
                if name == alert and at >= since
            )
            checks.append(Check(at, alert, firing))
    promtool_test(recording, checks, tmp_path, evaluation_s=HOUR_S, wanted=RULES)
