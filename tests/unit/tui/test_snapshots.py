"""Snapshots of the TUI's main screens, so a change of layout is seen (``pytest
--snapshot-update`` after a deliberate one). The app runs over a plain stand-in for its
gateway session that always answers the same tasks; the real gateway is in
tests/integration/test_tui.py."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterator
from typing import Any

from a2a.types import Message, Part, Role, StreamResponse, Task
from textual.pilot import Pilot
from textual.widgets import Input, ListView, RichLog, Static, Tree
from textual.widgets.tree import TreeNode

from tests.eventually import eventually_async
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.command_spec import CommandSpec
from tiny_harness.core.task import TaskSpec, TaskStatus
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.session import Reconnecting


def task(task_id: str, goal: str, state: str, sub_state: str | None, **more: Any) -> Task:
    spec = TaskSpec.model_validate(
        {
            "goal": goal,
            "acceptanceCriteria": ["Dates agreed", "Owners named"],
            "participants": [{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
            **more.pop("spec", {}),
        }
    )
    history = more.pop("history", None) or [
        Message(message_id="m1", role=Role.ROLE_USER, parts=[Part(text="Plan the release")]),
        Message(message_id="r1", role=Role.ROLE_AGENT, parts=[Part(text="Happy to plan it.")]),
    ]
    status = TaskStatus.model_validate({"state": state, "subState": sub_state, **more})
    return task_to_a2a(task_id, task_id, spec, status, history=history)


PARENT = task(
    "release",
    "Plan the release",
    "TASK_STATE_INPUT_REQUIRED",
    "awaiting-next-message",
    subTasks=[
        {"taskId": "release-docs", "goal": "Draft the changelog", "state": "TASK_STATE_WORKING"},
        {
            "taskId": "release-price",
            "agent": "market",
            "goal": "Price the launch",
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-answer",
        },
    ],
    plan={"steps": [{"name": "dates", "done": True}, {"name": "owners"}]},
)
CHILD = task(
    "release-docs",
    "Draft the changelog",
    "TASK_STATE_WORKING",
    None,
    spec={"parent": {"taskId": "release"}},
)


QUESTION = task(
    "release-ask",
    "Approve the budget of 40k?",
    "TASK_STATE_INPUT_REQUIRED",
    "awaiting-answer",
    lifecycle="participant",
    message="Approve the budget of 40k?",
    # Alice, watching, tried to answer for carol; the operator refused it.
    history=[
        Message(
            message_id="m1",
            role=Role.ROLE_USER,
            parts=[Part(text="I approve it myself.")],
            metadata={"sender": "alice"},
        ),
        Message(
            message_id="refused-m1",
            role=Role.ROLE_AGENT,
            parts=[
                Part(
                    text="refused: this task waits for carol's answer; a message from alice "
                    "does not answer it"
                )
            ],
        ),
    ],
    spec={
        "acceptanceCriteria": [],
        "parent": {"taskId": "release"},
        "participants": [{"id": "carol", "role": "assignee"}, {"id": "alice", "role": "watcher"}],
    },
)


class StillSession:
    """The calls the app makes on its session, answered from two fixed tasks."""

    me = "alice"
    commands = (
        CommandSpec(name="status", description="Show the task's state"),
        CommandSpec(name="sub-task", description="Start a sub-task with this goal"),
    )

    async def tasks(self) -> list[Task]:
        return [PARENT, CHILD]

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        yield StreamResponse(task=PARENT if task_id == "release" else CHILD)


class QuestionSession(StillSession):
    """Carol's session: the one task she is on is the question put to her."""

    me = "carol"

    async def tasks(self) -> list[Task]:
        return [QUESTION]

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        yield StreamResponse(task=QUESTION)


def app() -> HarnessApp:
    return HarnessApp(StillSession())  # type: ignore[arg-type]


async def settle(pilot: Pilot[None]) -> None:
    """Until the tree holds both tasks (a fixed pause raced a loaded machine's first paint),
    with the composer's cursor steady."""
    assert isinstance(pilot.app, HarnessApp)
    # A blinking cursor is drawn or not depending on when the capture lands.
    pilot.app.query_one("#composer", Input).cursor_blink = False
    tree = pilot.app.query_one("#tasks", Tree)
    await until(pilot, lambda: len(list(_nodes(tree.root))) == 2)


async def opened(pilot: Pilot[None], task_id: str) -> None:
    """Open ``task_id`` and wait until its conversation, details and rows are drawn."""
    assert isinstance(pilot.app, HarnessApp)
    await settle(pilot)
    pilot.app.open(task_id)

    def drawn() -> bool:
        app = pilot.app
        bar = str(app.query_one("#topbar", Static).render())
        log = app.query_one("#conversation", RichLog)
        rows = app.query_one("#subtasks", ListView)
        return task_id in bar and len(log.lines) >= 2 and len(rows.children) >= 1

    await until(pilot, drawn)


async def until(pilot: Pilot[None], done: Callable[[], bool], within: float = 20.0) -> None:
    async def drawn() -> bool:
        await pilot.pause(0.05)  # the app handles what it was sent, and redraws
        return done()

    await eventually_async(drawn, within=within, what="the screen to settle", interval=0)
    await pilot.pause()  # one more refresh, so what was drawn is what is captured


def _nodes(node: TreeNode[Any]) -> Iterator[TreeNode[Any]]:
    for child in node.children:
        yield child
        yield from _nodes(child)


def test_the_start_screen(snap_compare: Any) -> None:
    assert snap_compare(app(), terminal_size=(120, 36), run_before=settle)


def test_a_task_with_its_plan_and_a_sub_task(snap_compare: Any) -> None:
    async def open_parent(pilot: Pilot[None]) -> None:
        await opened(pilot, "release")

    assert snap_compare(app(), terminal_size=(120, 36), run_before=open_parent)


def test_the_command_hint(snap_compare: Any) -> None:
    async def type_slash(pilot: Pilot[None]) -> None:
        await opened(pilot, "release")
        await pilot.press("/", "s")
        hint = pilot.app.query_one("#hint", Static)
        await until(pilot, lambda: "sub-task" in str(hint.render()))

    assert snap_compare(app(), terminal_size=(120, 36), run_before=type_slash)


def test_a_question_for_you(snap_compare: Any) -> None:
    async def open_question(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, HarnessApp)
        pilot.app.query_one("#composer", Input).cursor_blink = False
        tree = pilot.app.query_one("#tasks", Tree)
        await until(pilot, lambda: len(list(_nodes(tree.root))) == 1)
        pilot.app.open("release-ask")
        details = pilot.app.query_one("#details", Static)
        await until(pilot, lambda: "Question for you" in str(details.render()))

    question = HarnessApp(QuestionSession())  # type: ignore[arg-type]
    assert snap_compare(question, terminal_size=(120, 36), run_before=open_question)
