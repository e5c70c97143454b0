"""A cut is seen through: :func:`cut_turn` ends a turn whose code drops a cancellation (as
``asyncio.wait_for`` does on Python 3.11 when its awaitable finishes as the cancellation
lands), and the one wait a cut must not break, for the record of a brief on its way
(:func:`remote._uncut`), keeps its bound across the repeats."""

from __future__ import annotations

import asyncio
import contextlib

import pytest

from tiny_harness.operator import remote, worker
from tiny_harness.operator.worker import cut_turn


async def test_a_turn_that_drops_the_first_cancellation_is_cut_all_the_same(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "CUT_REPEAT_SECONDS", 0.01)
    dropped: list[int] = []

    async def deaf_once() -> None:
        try:
            await asyncio.sleep(60)
        except asyncio.CancelledError:
            dropped.append(1)  # taken for an event, as wait_for does
        await asyncio.sleep(60)

    runner = asyncio.create_task(deaf_once())
    await asyncio.sleep(0)
    cut: list[str] = []
    async with asyncio.timeout(5):
        await cut_turn(runner, cut, "control")

    assert runner.cancelled()
    assert dropped == [1]
    assert cut == ["control"]


async def test_a_turn_that_takes_the_cut_is_cancelled_once() -> None:
    runner = asyncio.create_task(asyncio.sleep(60))
    await asyncio.sleep(0)
    cut: list[str] = []
    await cut_turn(runner, cut, "deadline")
    assert runner.cancelled()
    assert cut == ["deadline"]


async def test_a_cut_during_a_send_waits_for_its_record_across_repeated_cuts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "CUT_REPEAT_SECONDS", 0.01)
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
    await cut_turn(runner, [], "control")

    assert recorded.is_set()  # some twenty repeats later, the record was still made
    assert runner.cancelled()


async def test_a_send_that_never_answers_holds_the_cut_for_its_bound_only(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(worker, "CUT_REPEAT_SECONDS", 0.01)
    monkeypatch.setattr(remote, "RECORD_WAIT_SECONDS", 0.2)
    stuck = asyncio.Event()

    async def never() -> None:
        await stuck.wait()

    runner = asyncio.create_task(remote._uncut(never()))
    await asyncio.sleep(0)
    loop = asyncio.get_running_loop()
    started = loop.time()
    with contextlib.suppress(asyncio.CancelledError):
        async with asyncio.timeout(5):
            await cut_turn(runner, [], "control")
    assert runner.cancelled()
    assert loop.time() - started >= 0.2
