"""The test clock itself: time stands still until advanced, and the timers fire
in the order they fall due, each at its own time, unless cancelled."""

from __future__ import annotations

import pytest

from tests.clock import START_MONOTONIC, START_WALL, FakeClock


def test_timers_fire_in_order_at_their_time_unless_cancelled() -> None:
    clock = FakeClock()
    fired: list[tuple[str, float, float]] = []

    def note(name: str) -> None:
        fired.append((name, clock.monotonic() - START_MONOTONIC, clock.wall() - START_WALL))

    clock.call_later(2.0, lambda: note("late"))
    clock.call_later(0.5, lambda: note("early"))
    clock.call_later(1.0, lambda: note("cancelled")).cancel()
    clock.advance(0.4)
    assert fired == []
    clock.advance(2.0)
    assert fired == [("early", 0.5, 0.5), ("late", 2.0, 2.0)]
    assert clock.monotonic() - START_MONOTONIC == pytest.approx(2.4)
    assert clock.wall() - START_WALL == pytest.approx(2.4)
    clock.advance(10)
    assert len(fired) == 2


def test_the_clock_never_goes_back() -> None:
    with pytest.raises(ValueError, match="does not go back"):
        FakeClock().advance(-1)
