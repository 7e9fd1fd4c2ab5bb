"""Every time limit derived from the deadline, and how long a scrape may wait."""

from __future__ import annotations

import pytest
from hypothesis import given
from hypothesis import strategies as st

from exporter.timeouts import (
    CLIENT_GRACE_SECONDS,
    LOCK_SHARE_OF_DEADLINE,
    MIN_SCRAPE_WAIT_SECONDS,
    SCRAPE_GRACE_SECONDS,
    SCRAPE_TIMEOUT_MARGIN_SECONDS,
    Timeouts,
    header_wait,
)

deadlines = st.floats(min_value=0.01, max_value=3600, allow_nan=False, allow_infinity=False)
scrape_timeouts = st.floats(min_value=0, max_value=3600, allow_nan=False, allow_infinity=False)


def test_the_defaults_as_documented() -> None:
    """With the default 10 s deadline: what the README and the runbook tell operators."""
    timeouts = Timeouts(deadline=10)
    assert timeouts.statement == 10
    assert timeouts.connect == 10
    assert timeouts.lock == 2.5  # "lock_timeout after a quarter of the deadline"
    assert timeouts.client == 11
    assert timeouts.scrape_budget == 10.5
    # Prometheus' scrape_timeout of 12 s (the deadline plus 1 s, as advised): a full measurement fits.
    assert timeouts.bounded_wait(header_wait(12)) == timeouts.scrape_budget
    # A shorter scrape timeout: answered 0.5 s before it.
    assert timeouts.bounded_wait(header_wait(3)) == 2.5


@given(deadlines)
def test_every_limit_follows_the_deadline(deadline: float) -> None:
    timeouts = Timeouts(deadline)
    assert timeouts.statement == deadline  # the server cuts a statement at the deadline, never later
    assert timeouts.connect == deadline
    assert timeouts.lock == pytest.approx(deadline * LOCK_SHARE_OF_DEADLINE)
    assert timeouts.lock < timeouts.statement  # a lock wait gives up before the statement would
    # The client gives up after the server, so the server's clearer error wins.
    assert timeouts.client == pytest.approx(timeouts.statement + CLIENT_GRACE_SECONDS)
    assert timeouts.client > timeouts.statement
    # A scrape waits past the deadline, so the measurement's own deadline error lands first.
    assert timeouts.scrape_budget == pytest.approx(deadline + SCRAPE_GRACE_SECONDS)
    assert timeouts.scrape_budget > timeouts.deadline


@given(deadlines)
def test_without_the_header_a_scrape_waits_the_whole_budget(deadline: float) -> None:
    timeouts = Timeouts(deadline)
    assert timeouts.bounded_wait(header_wait(None)) == timeouts.scrape_budget


@given(deadlines, scrape_timeouts)
def test_a_scrape_answers_before_prometheus_gives_up(deadline: float, scrape_timeout: float) -> None:
    timeouts = Timeouts(deadline)
    wait = timeouts.bounded_wait(header_wait(scrape_timeout))
    assert MIN_SCRAPE_WAIT_SECONDS <= wait <= timeouts.scrape_budget
    if scrape_timeout - SCRAPE_TIMEOUT_MARGIN_SECONDS >= MIN_SCRAPE_WAIT_SECONDS:
        assert wait <= scrape_timeout - SCRAPE_TIMEOUT_MARGIN_SECONDS
    if MIN_SCRAPE_WAIT_SECONDS <= scrape_timeout - SCRAPE_TIMEOUT_MARGIN_SECONDS <= timeouts.scrape_budget:
        assert wait == pytest.approx(scrape_timeout - SCRAPE_TIMEOUT_MARGIN_SECONDS)


@given(deadlines, scrape_timeouts, scrape_timeouts)
def test_a_longer_scrape_timeout_never_shortens_the_wait(deadline: float, a: float, b: float) -> None:
    timeouts = Timeouts(deadline)
    shorter, longer = sorted((a, b))
    assert timeouts.bounded_wait(header_wait(shorter)) <= timeouts.bounded_wait(header_wait(longer))


def test_a_scrape_timeout_within_the_margin_still_gets_the_minimum_wait() -> None:
    timeouts = Timeouts(deadline=10)
    for scrape_timeout in (0.0, 0.1, SCRAPE_TIMEOUT_MARGIN_SECONDS):
        assert timeouts.bounded_wait(header_wait(scrape_timeout)) == MIN_SCRAPE_WAIT_SECONDS
