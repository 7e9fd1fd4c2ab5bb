from __future__ import annotations

import asyncio

import pytest

from exporter.pacing import Pacer


def test_a_pacer_is_due_once_its_slice_has_passed() -> None:
    assert not Pacer(slice_seconds=3600).due()
    assert Pacer(slice_seconds=-1).due()


@pytest.mark.anyio
async def test_handing_back_runs_the_other_ready_tasks_and_starts_a_new_slice() -> None:
    ran: list[str] = []

    async def other() -> None:
        ran.append("other")

    pacer = Pacer(slice_seconds=0.5)
    pacer._since -= 1  # a slice already spent
    assert pacer.due()
    task = asyncio.create_task(other())
    await pacer.hand_back()
    assert ran == ["other"]
    assert not pacer.due()
    await task
