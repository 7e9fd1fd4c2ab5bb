"""The replay lag does not blink: a page shows the reading its scrape got, even
when the TTL ends between the reading and the page, and the last reading while
the next one runs past the scrape's wait; absent only while no reading has
ended (or on a primary).

Time is the tests' own (tests/clock.py): the TTL ends exactly where a test
says, so no outcome depends on how fast the machine is."""

from __future__ import annotations

import pytest

from exporter.replay_lag import ReplayLag
from exporter.tools.demo import EXPORTER_ROLE
from tests.clock import FakeClock, LeapingClock
from tests.exporter.sources.postgres.test_standby import LAG, Pair, pair  # noqa: F401 (the module's primary and standby)
from tests.scrapes import make_exporter, meta_reader, scrape

pytestmark = pytest.mark.anyio

SCRAPES = 100
TTL = 30.0


async def test_every_page_carries_the_replay_lag_though_its_ttl_ends_before_the_page(pair: Pair) -> None:  # noqa: F811
    clock = LeapingClock(leap=2 * TTL)
    url = pair.url(pair.standby, EXPORTER_ROLE)
    exporter = make_exporter(url, None, clock.clock, signals="audit_chain", ttl=str(TTL))
    lag = meta_reader(exporter, ReplayLag)
    try:
        for number in range(SCRAPES):
            page = await scrape(exporter)
            # Caught up with a connected primary: 0, on every page.
            assert page.family(LAG) == {(): 0.0}, f"scrape {number}"
            # Read again at every scrape (its TTL always ended): served from a new reading, not a held one.
            assert lag.generation == number + 1
    finally:
        await exporter.close()


async def test_a_reading_past_the_wait_leaves_the_last_one_on_the_page(pair: Pair) -> None:  # noqa: F811
    fake = FakeClock()
    exporter = make_exporter(
        pair.url(pair.standby, EXPORTER_ROLE), None, fake.clock, signals="audit_chain", ttl=str(TTL)
    )
    lag = meta_reader(exporter, ReplayLag)
    try:
        # No reading ended yet and the scrape cannot wait: absent from that one page.
        assert (await scrape(exporter, wait=0)).family(LAG) == {}
        assert (await scrape(exporter)).family(LAG) == {(): 0.0}
        read = lag.generation
        fake.advance(2 * TTL)
        # The TTL has ended: read again, past this scrape's wait; the page shows the last reading
        # (whether the new one ends before the test looks again is the loop's business: at load
        # it did, so the generation is read only after a scrape that waits).
        assert (await scrape(exporter, wait=0)).family(LAG) == {(): 0.0}
        assert (await scrape(exporter)).family(LAG) == {(): 0.0}
        assert lag.generation == read + 1
    finally:
        await exporter.close()
