"""How old the data on the page is (orpycamcp_signal_data_timestamp_seconds),
which the rules merge a database's copies by: on a primary, when the
measurement began; on a hot standby, that less its replay lag, read on the
standby itself; absent while a signal is unmeasured.

The exporter's wall clock is the tests' own and stands still (tests/clock.py):
a primary's data time is exactly it, a standby's exactly it less the lag the
standby reports, whatever the machine's speed."""

from __future__ import annotations

import pytest

from exporter.tools.demo import EXPORTER_ROLE
from tests.clock import FakeClock
from tests.exporter.sources.postgres.test_standby import LAG, Pair, cut_from_primary, pair  # noqa: F401 (the module's servers)
from tests.scrapes import Page, make_exporter, scrape
from tests.waits import wait_until

pytestmark = pytest.mark.anyio

DATA_TIME = "orpycamcp_signal_data_timestamp_seconds"
SIGNALS = ("dlq", "preservation", "audit_chain")


async def page_of(url: str, clock: FakeClock, **options: str) -> Page:
    exporter = make_exporter(url, None, clock.clock, signals=",".join(SIGNALS), **options)
    try:
        return await scrape(exporter)
    finally:
        await exporter.close()


def data_times(page: Page) -> dict[str, float]:
    return {dict(labels)["signal"]: value for labels, value in page.family(DATA_TIME).items()}


async def test_on_the_primary_and_a_caught_up_standby_the_data_is_of_the_measurement(pair: Pair) -> None:  # noqa: F811
    clock = FakeClock()
    await pair.replicated()
    for server in (pair.primary, pair.standby):
        page = await page_of(pair.url(server, EXPORTER_ROLE), clock)
        assert data_times(page) == dict.fromkeys(SIGNALS, clock.wall()), server
    print(f"\nprimary and caught-up standby: data time = measurement time ({clock.wall():.0f})")


async def test_on_a_lagging_standby_the_data_is_as_old_as_its_replay_lag(pair: Pair) -> None:  # noqa: F811
    clock = FakeClock()
    async with cut_from_primary(pair) as age:

        async def older_than_two_seconds() -> bool:
            return await age() > 2.0

        assert await wait_until(older_than_two_seconds, 10)
        before = await age()
        page = await page_of(pair.url(pair.standby, EXPORTER_ROLE), clock, database_replica_max_staleness="3600")
        after = await age()
        times = data_times(page)
        assert set(times) == set(SIGNALS)
        for signal, value in times.items():
            assert before <= clock.wall() - value <= after, signal
        lag = page.get(LAG)
        assert lag is not None
        assert before <= lag <= after
        # Past the bound: unmeasured, and no data time beside no values.
        past = await page_of(pair.url(pair.standby, EXPORTER_ROLE), clock, database_replica_max_staleness="1")
        assert [past.measured(signal) for signal in SIGNALS] == [0, 0, 0]
        assert data_times(past) == {}
    print(f"\nstandby cut from its primary: data {before:.1f}-{after:.1f} s older than the measurement")
