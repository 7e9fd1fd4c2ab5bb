"""The progress line of a long pass over the tenants."""

from __future__ import annotations

import logging

import pytest

from exporter.postgres import _Progress


def test_a_pass_over_a_second_reports_once_a_second(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    progress = _Progress(lambda: now[0])
    caplog.set_level(logging.INFO, logger="orpycamcp.postgres")
    for step in (0.4, 0.4, 0.4, 0.3, 0.3, 0.5, 0.3):  # 7 of 10 batches, 2.6 s
        now[0] += step
        progress.done("dlq", 10)
    lines = [record for record in caplog.records if record.name == "orpycamcp.postgres"]
    assert [record.getMessage() for record in lines] == [
        "signal dlq: 3 of 10 batches read after 1.2 s",
        "signal dlq: 6 of 10 batches read after 2.3 s",
    ]
    assert lines[0].signal == "dlq"  # type: ignore[attr-defined]


def test_a_quick_pass_and_the_last_batch_are_silent(caplog: pytest.LogCaptureFixture) -> None:
    now = [0.0]
    progress = _Progress(lambda: now[0])
    caplog.set_level(logging.INFO, logger="orpycamcp.postgres")
    progress.done("dlq", 2)
    now[0] = 5.0
    progress.done("dlq", 2)
    assert not [record for record in caplog.records if record.name == "orpycamcp.postgres"]
