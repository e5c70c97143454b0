"""A cut is a typed reason given once (:class:`supervisor.Cut`): the first reason wins, the
turn's task is cancelled once, and the one wait a cut must let finish, for the record of a brief
on its way (:func:`remote._uncut`), keeps its bound. A turn whose code dropped the cancellation
(a bug: nothing under a turn is known to) is cut again after the grace, and logged."""

from __future__ import annotations

import asyncio
import contextlib
import logging

import pytest

from tiny_harness.core.decide import CutReason
from tiny_harness.operator import remote
from tiny_harness.operator.supervisor import Cut


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


async def test_a_cut_during_a_send_waits_for_its_record_then_goes_on() -> None:
    recorded = asyncio.Event()

    async def send_then_record() -> str:
        await asyncio.sleep(0.2)  # the agent names its task
        recorded.set()
        return "remote-task"

    async def turn() -> None:
        await remote._uncut(send_then_record())
        await asyncio.sleep(60)  # pragma: no cover - the cut goes on after the record

    runner = asyncio.create_task(turn())
    await asyncio.sleep(0)
    cut = Cut()
    cut.watch(runner)
    cut(CutReason.CONTROL)
    async with asyncio.timeout(5):
        await cut.see_through()

    assert recorded.is_set()
    assert runner.cancelled()


async def test_a_send_that_never_answers_holds_the_cut_for_its_bound_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(remote, "RECORD_WAIT_SECONDS", 0.2)
    stuck = asyncio.Event()

    async def never() -> None:
        await stuck.wait()

    runner = asyncio.create_task(remote._uncut(never()))
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    cut = Cut()
    cut.watch(runner)
    cut(CutReason.CONTROL)
    with contextlib.suppress(asyncio.CancelledError):
        async with asyncio.timeout(5):
            await cut.see_through()
    assert runner.cancelled()
    assert loop.time() - started >= 0.2
