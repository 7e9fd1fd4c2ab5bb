"""The identity does not blink: it cannot change between two readings, so every
page shows the last reading that ended, even when its TTL ends between the
reading and the page, or the next reading runs past the scrape's wait.
scrape_timeout only while no reading has ended.

Time is the tests' own (tests/clock.py): the TTL ends exactly where a test
says, so no outcome depends on how fast the machine is."""

from __future__ import annotations

import pytest

from exporter.identity import DatabaseIdentity
from tests.clock import FakeClock, LeapingClock
from tests.exporter.test_identity import failures, identities, truth
from tests.platform import Platform
from tests.scrapes import make_exporter, meta_reader, scrape

SCRAPES = 200
TTL = 30.0


@pytest.mark.anyio
async def test_every_page_carries_the_identity_though_its_ttl_ends_before_the_page(platform: Platform) -> None:
    want = await truth(platform.admin_url)
    clock = LeapingClock(leap=2 * TTL)
    exporter = make_exporter(platform.exporter_url, None, clock.clock, signals="audit_chain", ttl=str(TTL))
    identity = meta_reader(exporter, DatabaseIdentity)
    try:
        for number in range(SCRAPES):
            page = await scrape(exporter)
            assert (identities(page), failures(page)) == ([want], set()), f"scrape {number}"
            # Read again at every scrape (its TTL always ended): served from a new reading, not a held one.
            assert identity.generation == number + 1
    finally:
        await exporter.close()
    print(f"\n{SCRAPES} scrapes, each identity's TTL ended before its page: identity on every page ({want})")


@pytest.mark.anyio
async def test_a_reading_past_the_wait_leaves_the_last_one_on_the_page(platform: Platform) -> None:
    want = await truth(platform.admin_url)
    fake = FakeClock()
    exporter = make_exporter(platform.exporter_url, None, fake.clock, signals="audit_chain", ttl=str(TTL))
    identity = meta_reader(exporter, DatabaseIdentity)
    try:
        # No reading ended yet and the scrape cannot wait: that one scrape timed out.
        first = await scrape(exporter, wait=0)
        assert (identities(first), failures(first)) == ([], {"scrape_timeout"})
        assert identities(await scrape(exporter)) == [want]
        read = identity.generation
        fake.advance(2 * TTL)
        # The TTL has ended: read again, past this scrape's wait; the page shows the last reading
        # (whether the new one ends before the test looks again is the loop's business: on a quiet
        # machine with three workers it did, so the generation is read only after a scrape that waits).
        page = await scrape(exporter, wait=0)
        assert (identities(page), failures(page)) == ([want], set())
        assert identities(await scrape(exporter)) == [want]
        assert identity.generation == read + 1
    finally:
        await exporter.close()
