"""The TUI shows one state per task: the tree's line for the open task says what the top bar
says, whatever the order in which the listing (ListTasks) and the followed stream answer.

The app runs over a stand-in for its gateway session whose listing and stream the test
drives, one answer at a time, in the order that once left the tree a state behind
(docs/screens/tui.txt showed WORKING beside a top bar saying INPUT_REQUIRED): the listing
is answered during the turn, and the stream's next state repeats the header it was asked for.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from a2a.types import (
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.types import TaskState as A2AState
from textual.pilot import Pilot
from textual.widgets import RichLog, Static, Tree
from textual.widgets.tree import TreeNode

from tests.eventually import eventually_async
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.status_ext import with_sub_state
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.task import TaskStatus as Status
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.session import Reconnecting

SPEC = TaskSpec.model_validate(
    {"goal": "Plan the release", "participants": [{"id": "alice", "role": "assignee"}]}
)


def release(state: str, sub_state: str | None = None) -> Task:
    status = Status.model_validate({"state": state, "subState": sub_state})
    return task_to_a2a("release", "release", SPEC, status)


class DrivenSession:
    """The calls the app makes on its session, answered as the test says: the listing with
    whatever ``listed`` holds when it is asked, the stream with what the test puts on it."""

    me = "alice"
    commands = ()

    def __init__(self, listed: list[Task]) -> None:
        self.listed = listed
        self.listings = 0
        self.events: asyncio.Queue[StreamResponse] = asyncio.Queue()

    async def tasks(self) -> list[Task]:
        self.listings += 1
        return list(self.listed)

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        while True:
            yield await self.events.get()


def top_bar(app: HarnessApp) -> str:
    return str(app.query_one("#topbar", Static).render())


def tree_lines(app: HarnessApp) -> list[str]:
    def walk(node: TreeNode[Any]) -> Iterator[str]:
        for child in node.children:
            yield str(child.label)
            yield from walk(child)

    return list(walk(app.query_one("#tasks", Tree).root))


async def until(pilot: Pilot[None], done: Callable[[], bool], what: str) -> None:
    async def drawn() -> bool:
        await pilot.pause(0.02)
        return done()

    await eventually_async(drawn, within=20, what=what, interval=0)


async def test_the_open_tasks_line_in_the_tree_keeps_up_with_its_top_bar() -> None:
    parked = ("TASK_STATE_INPUT_REQUIRED", "awaiting-next-message")
    session = DrivenSession([release(*parked)])
    app = HarnessApp(session)  # type: ignore[arg-type]
    async with app.run_test(size=(120, 30)) as pilot:
        await until(pilot, lambda: len(tree_lines(app)) == 1, "the tree to list the task")
        app.open("release")
        await until(pilot, lambda: session.listings >= 2, "the tree to be read for the open task")

        # The turn runs: the listing, whenever it is asked now, says WORKING; the stream has
        # not said so yet, and its first event is the task as it was, parked.
        session.listed = [release("TASK_STATE_WORKING")]
        asked = session.listings
        session.events.put_nowait(StreamResponse(task=release(*parked)))
        await until(pilot, lambda: session.listings > asked, "the tree to be read again")
        await until(pilot, lambda: "INPUT_REQUIRED" in top_bar(app), "the top bar to move")
        assert tree_lines(app) == ["Plan the release · INPUT_REQUIRED · awaiting-next-message"]

        # The reply parks it again: the same header, so nothing asks for the listing again.
        reply = Message(message_id="r1", role=Role.ROLE_AGENT, parts=[Part(text="Planned.")])
        session.events.put_nowait(
            StreamResponse(
                status_update=TaskStatusUpdateEvent(
                    task_id="release",
                    status=TaskStatus(state=A2AState.TASK_STATE_INPUT_REQUIRED, message=reply),
                    metadata=with_sub_state(None, "awaiting-next-message"),
                )
            )
        )
        log = app.query_one("#conversation", RichLog)
        await until(pilot, lambda: len(log.lines) >= 1, "the reply to show")

        assert top_bar(app) == "release · INPUT_REQUIRED · awaiting-next-message"
        assert tree_lines(app) == ["Plan the release · INPUT_REQUIRED · awaiting-next-message"]
