"""A cut is a typed reason given once (:class:`cut.Cut`): the first reason wins, the turn's
task is cancelled once, and a step the cut must let finish (:meth:`cut.Cut.deferred`, the record
of a brief on its way) holds it back for that step only, within its bound. A turn whose code
dropped the cancellation (a bug: nothing under a turn is known to) is cut again after the grace,
and logged."""

from __future__ import annotations

import asyncio
import logging

import pytest

from tiny_harness.core.actions import CutReason
from tiny_harness.operator import cut as cut_module
from tiny_harness.operator.cut import Cut


async def test_the_first_reason_wins_and_the_turn_is_cancelled_once() -> None:
    cancellations: list[int] = []

    async def turn() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            cancellations.append(1)
            raise

    runner = asyncio.create_task(turn())
    await asyncio.sleep(0)
    cut = Cut()
    cut.watch(runner)

    cut(CutReason.CONTROL)
    cut(CutReason.DEADLINE)
    cut(CutReason.LEASE)
    await cut.see_through()

    assert runner.cancelled()
    assert cut.reason is CutReason.CONTROL
    assert cancellations == [1]


async def test_a_turn_that_drops_the_cancellation_is_cut_again_after_the_grace_and_logged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    dropped: list[int] = []

    async def deaf_once() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            dropped.append(1)  # a bug under the turn: taken for an event
        await asyncio.sleep(60)

    runner = asyncio.create_task(deaf_once())
    await asyncio.sleep(0)
    cut = Cut()
    cut.watch(runner)
    cut(CutReason.CONTROL)
    with caplog.at_level(logging.ERROR):
        async with asyncio.timeout(5):
            await cut.see_through(grace=0.05)

    assert runner.cancelled()
    assert dropped == [1]
    assert "code under it dropped the cancellation" in caplog.text


async def test_a_cut_during_a_deferred_step_waits_for_its_end_then_goes_on() -> None:
    cut = Cut()
    named = asyncio.Event()
    steps: list[str] = []

    async def turn() -> None:
        with cut.deferred():
            await named.wait()  # the agent names its task
            steps.append("recorded")
        steps.append("after the step")  # no await: the cancellation lands at the next one
        await asyncio.sleep(60)
        steps.append("ran on")  # pragma: no cover - the cut goes on after the step

    runner = asyncio.create_task(turn())
    cut.watch(runner)
    await asyncio.sleep(0)  # the turn is in its step
    cut(CutReason.CONTROL)
    await asyncio.sleep(0)
    assert not runner.done()  # held back, not delivered
    named.set()
    async with asyncio.timeout(5):
        await cut.see_through()

    assert steps == ["recorded", "after the step"]
    assert runner.cancelled()
    assert cut.reason is CutReason.CONTROL


async def test_a_cut_given_before_the_deferred_step_is_not_held() -> None:
    cut = Cut()
    entered: list[int] = []

    async def turn() -> None:
        await asyncio.sleep(60)
        with cut.deferred():  # pragma: no cover - never reached
            entered.append(1)

    runner = asyncio.create_task(turn())
    cut.watch(runner)
    await asyncio.sleep(0)
    cut(CutReason.DEADLINE)
    async with asyncio.timeout(5):
        await cut.see_through()
    assert runner.cancelled()
    assert entered == []


async def test_a_step_that_never_ends_holds_the_cut_for_its_bound_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(cut_module, "DEFER_SECONDS", 0.2)
    stuck = asyncio.Event()
    cut = Cut()

    async def never() -> None:
        with cut.deferred():
            await stuck.wait()

    runner = asyncio.create_task(never())
    cut.watch(runner)
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    cut(CutReason.CONTROL)
    async with asyncio.timeout(5):
        await cut.see_through()
    assert runner.cancelled()
    assert loop.time() - started >= 0.2
