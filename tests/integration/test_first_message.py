"""A task created by its first message goes SUBMITTED → WORKING → its answer (row 11 of
``core/decide.py``). Real control plane, real operator process, scripted model server.

The gateway creates such a task in two writes, the task and then its message, and announces
the message on the task (``kube.names.FIRST_MESSAGE_ANNOTATION``). These tests make the same two
writes through the API, in that order, and hold the second back for as long as they like: until
the operator has written the task's first status, and has parked a twin created after it
without the annotation (so the operator's passes over the first task after its first status
have been made). A watch on each task records every state its status goes through.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import NotYet, eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.kube.names import FIRST_MESSAGE_ANNOTATION, PLURAL
from tiny_harness.kube.watching import read_for_watch, watch_client, watch_object

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]
State = tuple[str, str | None]

SUBMITTED: State = ("TASK_STATE_SUBMITTED", None)
WORKING: State = ("TASK_STATE_WORKING", None)
PARKED: State = ("TASK_STATE_INPUT_REQUIRED", "awaiting-next-message")
PARTICIPANTS = [{"id": "alice", "role": "assignee"}]


class StatusWatch:
    """Every (state, sub-state) one task's status goes through, in the order committed, from
    before the task exists; a repeat of the last one (a status write that changes another
    field) is not a new state."""

    def __init__(self) -> None:
        self.states: list[State] = []

    def saw(self, obj: dict[str, Any]) -> None:
        status = obj.get("status") or {}
        if not status.get("state"):
            return
        state = (str(status["state"]), status.get("subState"))
        if not self.states or self.states[-1] != state:
            self.states.append(state)

    async def reached(self, state: State, *, count: int = 1) -> list[State]:
        """The states so far, once ``state`` is among them ``count`` times."""

        async def there() -> list[State] | NotYet:
            seen = list(self.states)
            return seen if seen.count(state) >= count else NotYet(seen)

        return await eventually_async(there, within=30, what=f"the task to reach {state}")


@contextlib.asynccontextmanager
async def watched(api: Any, namespace: str, name: str) -> AsyncIterator[StatusWatch]:
    """A :class:`StatusWatch` of the task ``name``, started before the task is written."""
    client = watch_client(api)
    seen = StatusWatch()
    obj, version = await read_for_watch(client, namespace, PLURAL, name)
    assert obj is None, f"{name} exists already"

    async def follow() -> None:
        async for event in watch_object(client, namespace, PLURAL, name, resource_version=version):
            seen.saw(event.object)

    follower = asyncio.create_task(follow())
    try:
        yield seen
    finally:
        follower.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await follower
        await client.close()


async def create_announced(tasks: Tasks, name: str, message_id: str) -> None:
    """The task as the gateway creates it from a first message: the message announced."""
    await tasks.tasks.create(
        name,
        {"goal": f"Help with {name}.", "participants": PARTICIPANTS},
        annotations={FIRST_MESSAGE_ANNOTATION: message_id},
    )


async def send(tasks: Tasks, name: str, message_id: str, text: str) -> None:
    await tasks.messages.send(
        MessageSpec(
            task=name, message_id=message_id, sender="alice", parts=(MessagePart(text=text),)
        ),
        task=await tasks.tasks.get(name),
    )


async def test_a_task_created_by_its_first_message_goes_from_submitted_to_working_to_its_answer(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    async with (
        watched(api, namespace, "first") as first,
        watched(api, namespace, "twin") as twin,
    ):
        await create_announced(tasks, "first", "m-first")
        await first.reached(SUBMITTED)
        # The gap between the two writes: the operator has written the first status, and has
        # since made its passes over a twin created later, without the annotation, to its park.
        await tasks.tasks.create("twin", {"goal": "Help with twin.", "participants": PARTICIPANTS})
        assert await twin.reached(PARKED) == [SUBMITTED, PARKED]
        assert first.states == [SUBMITTED]

        await send(tasks, "first", "m-first", "Hi!")
        status = await tasks.wait("first", "TASK_STATE_INPUT_REQUIRED", turn=1)
        await first.reached(PARKED)

    assert first.states == [SUBMITTED, WORKING, PARKED]
    assert status["message"] == "Hello Alice."
    assert [(m.role, m.text) for m in await tasks.transcript("first")] == [
        ("user", "Hi!"),
        ("agent", "Hello Alice."),
    ]


async def test_a_task_with_no_announced_first_message_parks_at_once_as_before(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello Alice."}])
    operator()
    async with watched(api, namespace, "applied") as applied:
        await tasks.create("applied")
        await applied.reached(PARKED)
        await tasks.send("applied", "Hi!")
        await tasks.wait("applied", "TASK_STATE_INPUT_REQUIRED", turn=1)
        await applied.reached(PARKED, count=2)

    assert applied.states == [SUBMITTED, PARKED, WORKING, PARKED]


async def test_an_announced_first_message_that_never_comes_parks_the_task_saying_so(
    api: Any, namespace: str, tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello at last."}])
    operator(first_message_seconds=1)
    async with watched(api, namespace, "late") as late:
        await create_announced(tasks, "late", "m-lost")
        await late.reached(PARKED)
        parked = await tasks.status("late")

        await tasks.send("late", "Are you there?")
        answered = await tasks.wait("late", "TASK_STATE_INPUT_REQUIRED", turn=1)
        await late.reached(PARKED, count=2)

    assert late.states == [SUBMITTED, PARKED, WORKING, PARKED]
    assert parked["message"] == (
        "the first message this task was created with (m-lost) did not come within 1s; "
        "send a message to start it"
    )
    assert answered["message"] == "Hello at last."
