"""Batches of tenants, and the progress line of a long pass over them."""

from __future__ import annotations

import logging

import pytest

from exporter.sources.postgres.batches import BatchProgress, lane_shares, tenant_batches


def test_a_pass_over_a_second_reports_once_a_second(caplog: pytest.LogCaptureFixture) -> None:
    now = [100.0]
    progress = BatchProgress(lambda: now[0])
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
    progress = BatchProgress(lambda: now[0])
    caplog.set_level(logging.INFO, logger="orpycamcp.postgres")
    progress.done("dlq", 2)
    now[0] = 5.0
    progress.done("dlq", 2)
    assert not [record for record in caplog.records if record.name == "orpycamcp.postgres"]


def test_batches_are_bounded_and_keep_every_slug_in_order() -> None:
    slugs = [f"t{n:05d}" for n in range(1000)]
    batches = tenant_batches(slugs, 50)
    assert [slug for batch in batches for slug in batch] == slugs
    assert max(len(batch) for batch in batches) <= 50


def test_a_tenant_added_re_cuts_only_the_batches_up_to_the_next_hash_boundary() -> None:
    slugs = [f"t{n:05d}" for n in range(0, 2000, 2)]
    before = tenant_batches(slugs, 50)
    after = tenant_batches(sorted([*slugs, "t00999"]), 50)
    changed = [batch for batch in after if batch not in before]
    assert "t00999" in changed[0]
    # Boundaries follow the slugs' hashes: past the next one, every batch is as before
    # (a position-based cut would have shifted all 15 batches after the new slug).
    assert len(changed) <= 3
    assert after[after.index(changed[-1]) + 1 :] == before[len(before) - len(after[after.index(changed[-1]) + 1 :]) :]


@pytest.mark.parametrize("lanes", [1, 2, 3, 4])
@pytest.mark.parametrize("count", [0, 1, 2, 3, 5, 7, 10, 11])
def test_lane_shares_keep_every_batch_once_in_order_remainder_included(count: int, lanes: int) -> None:
    batches = [f"batch {n}" for n in range(count)]
    shares = lane_shares(batches, lanes)
    assert len(shares) == lanes
    assert [batch for share in shares for batch in share] == batches
    sizes = sorted(len(share) for share in shares)
    assert sizes[-1] - sizes[0] <= 1
    assert sizes[-1] == -(-count // lanes)  # the largest share is the count divided, rounded up
