"""The tests' one wait (``tests/eventually.py``): a field not there yet is "not yet", anything
else a probe raises ends the wait, and a timeout says what was awaited and what was last seen."""

from __future__ import annotations

import asyncio
from collections.abc import Callable
from typing import Any

import pytest

from tests.eventually import NotYet, eventually, eventually_async

#: Short enough that a timeout test takes a blink, long enough for a few looks.
BRIEF = 0.2
QUICK = 0.01


def fresh_then_initialised(looks_before: int) -> Callable[[], dict[str, Any]]:
    """An object as the API returns it: without ``status`` for the first ``looks_before``
    looks, then with the state the operator wrote."""
    looks = 0

    def get() -> dict[str, Any]:
        nonlocal looks
        looks += 1
        if looks <= looks_before:
            return {"metadata": {"name": "research"}}
        return {"metadata": {"name": "research"}, "status": {"state": "TASK_STATE_WORKING"}}

    return get


def test_a_probe_reading_a_field_not_there_yet_is_retried_until_it_is() -> None:
    get = fresh_then_initialised(looks_before=2)

    state = eventually(lambda: get()["status"]["state"], within=5, what="a state", interval=QUICK)

    assert state == "TASK_STATE_WORKING"


def test_the_first_truthy_value_is_returned() -> None:
    answers = iter([None, [], 0, ["child"], ["child", "other"]])

    assert eventually(lambda: next(answers), within=5, what="a child", interval=QUICK) == ["child"]


def test_a_timeout_names_what_was_awaited_the_last_value_and_the_last_error() -> None:
    looks = 0
    fresh = fresh_then_initialised(looks_before=10_000)

    def state_completed() -> bool:
        nonlocal looks
        looks += 1
        if looks == 1:
            return False  # one value first, then only objects the operator has not initialised
        return bool(fresh()["status"]["state"] == "TASK_STATE_COMPLETED")

    with pytest.raises(AssertionError) as failed:
        eventually(state_completed, within=BRIEF, what="research to complete", interval=QUICK)

    message = str(failed.value)
    assert "waiting for research to complete" in message
    assert "last value: False" in message
    assert "last error: KeyError('status')" in message
    assert isinstance(failed.value.__cause__, KeyError)


def test_a_timeout_of_a_probe_that_never_answered_says_it_saw_nothing() -> None:
    with pytest.raises(AssertionError, match=r"last value: nothing; last error: IndexError"):
        eventually(lambda: [][0], within=BRIEF, what="a row", interval=QUICK)


def test_a_not_yet_with_what_the_probe_saw_is_shown_when_the_wait_times_out() -> None:
    def collected() -> bool | NotYet:
        left = {"harnessturns": ["long-turn-1"]}
        return NotYet(left) if any(left.values()) else True

    with pytest.raises(AssertionError, match=r"last value: \{'harnessturns': \['long-turn-1'\]\}"):
        eventually(collected, within=BRIEF, what="the turns to be collected", interval=QUICK)


def refusing_twice() -> Callable[[], bool]:
    """A health check of a server still starting: refused twice, then healthy."""
    refusals = iter([ConnectionRefusedError("still starting")] * 2)

    def healthy() -> bool:
        error = next(refusals, None)
        if error is not None:
            raise error
        return True

    return healthy


def test_errors_named_as_not_yet_at_the_call_are_retried_too_and_only_there() -> None:
    healthy = refusing_twice()
    assert eventually(healthy, within=5, what="/healthz", interval=QUICK, not_yet=(OSError,))

    with pytest.raises(ConnectionRefusedError, match="still starting"):
        eventually(refusing_twice(), within=5, what="/healthz", interval=QUICK)


@pytest.mark.parametrize("error", [ValueError("not a number"), AssertionError("wrong state")])
def test_any_other_error_of_the_probe_ends_the_wait_at_once(error: Exception) -> None:
    looks = 0

    def probe() -> bool:
        nonlocal looks
        looks += 1
        raise error

    with pytest.raises(type(error), match=str(error)):
        eventually(probe, within=5, what="anything", interval=QUICK)
    assert looks == 1


def test_an_awaited_probe_given_to_the_sync_wait_is_refused() -> None:
    async def probe() -> bool:
        return True

    with pytest.raises(TypeError, match="use eventually_async"):
        eventually(probe, within=5, what="the async probe")  # type: ignore[unused-coroutine]


async def test_an_awaited_probe_reading_a_field_not_there_yet_is_retried_until_it_is() -> None:
    get = fresh_then_initialised(looks_before=2)

    async def state() -> str:
        return str((await asyncio.to_thread(get))["status"]["state"])

    assert await eventually_async(state, within=5, what="a state", interval=QUICK) == (
        "TASK_STATE_WORKING"
    )


async def test_a_plain_probe_looks_while_the_loop_goes_on_filling_what_it_reads() -> None:
    seen: list[str] = []

    async def subscribe() -> None:
        for event in ("TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED"):
            await asyncio.sleep(QUICK)
            seen.append(event)

    following = asyncio.create_task(subscribe())
    second = await eventually_async(lambda: seen[1], within=5, what="two events", interval=QUICK)

    assert second == "TASK_STATE_INPUT_REQUIRED"
    await following


async def test_an_awaited_timeout_names_what_the_last_value_and_the_last_error() -> None:
    looks = 0

    async def completed() -> bool:
        nonlocal looks
        looks += 1
        if looks == 1:
            return False
        raise KeyError("status")

    with pytest.raises(AssertionError) as failed:
        await eventually_async(completed, within=BRIEF, what="research to complete", interval=QUICK)

    message = str(failed.value)
    assert "timed out after 0.2s waiting for research to complete" in message
    assert "last value: False; last error: KeyError('status')" in message


@pytest.mark.parametrize("error", [ValueError("not a number"), AssertionError("wrong state")])
async def test_any_other_error_of_an_awaited_probe_ends_the_wait_at_once(error: Exception) -> None:
    looks = 0

    async def probe() -> bool:
        nonlocal looks
        looks += 1
        raise error

    with pytest.raises(type(error), match=str(error)):
        await eventually_async(probe, within=5, what="anything", interval=QUICK)
    assert looks == 1


async def test_a_look_that_never_returns_is_cut_at_the_bound() -> None:
    never = asyncio.Event()

    async def hangs() -> bool:
        await never.wait()
        return True

    with pytest.raises(AssertionError, match=r"waiting for the hung look .*last value: nothing"):
        await eventually_async(hangs, within=BRIEF, what="the hung look")


async def test_a_timeout_the_probe_raises_itself_is_its_error_not_the_end_of_the_wait() -> None:
    async def probe() -> bool:
        async with asyncio.timeout(0):
            await asyncio.Event().wait()
        return True

    with pytest.raises(TimeoutError):
        await eventually_async(probe, within=5, what="the probe's own call")
