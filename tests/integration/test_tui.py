"""The TUI driven by Textual's Pilot against a real gateway, operator and control plane, with
the scripted model: create a task, converse, /status, /sub-task, open the child, go back,
complete; a watcher's ctrl+d is refused; an ended task's controls do nothing; a question an
agent puts to a person (a participant task) marked in their tree and a watcher's, a watcher's
answer refused, and the person's answer completing it; a gateway replaced mid-conversation,
every message shown once and in order across it; a stream past the participant's limit said
once and not tried again."""

from __future__ import annotations

import re
from collections.abc import AsyncIterator, Callable
from typing import Any

import httpx
import pytest
from textual.pilot import Pilot
from textual.widgets import Input, ListView, Tree

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import Replicas, agent_says, alices_task
from tests.integration.lifecycle_support import Tasks
from tests.integration.question_support import QUESTION, carol_is_asked
from tests.tui_support import lasting_notices, noticed, noticed_part
from tiny_harness.a2a_gateway.card import REST_PREFIX
from tiny_harness.core.states import TaskState
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.session import Session

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures(lasting_notices.__name__)]

Operator = Callable[..., OperatorProcess]


async def until(pilot: Pilot[None], condition: Callable[[], Any], within: float = 30) -> None:
    """Let the app run until ``condition()`` holds on the screen it has drawn."""

    async def drawn() -> Any:
        await pilot.pause(0.05)  # the app handles what it was sent, and redraws
        return condition()

    await eventually_async(drawn, within=within, what="the app to show it", interval=0)


async def type_in(pilot: Pilot[None], text: str) -> None:
    app = pilot.app
    assert isinstance(app, HarnessApp)
    app.query_one("#composer").focus()
    await pilot.press(*text)
    await pilot.press("enter")


@pytest.fixture
async def alice(gateway: Replicas) -> AsyncIterator[Session]:
    session = await Session.connect(gateway().url, participant="alice")
    yield session
    await session.close()


def said(app: HarnessApp) -> list[str]:
    return [f"{line.who}: {line.text}" for line in (app.view.lines if app.view else [])]


async def test_a_task_from_first_goal_to_completion_with_a_sub_task(
    alice: Session, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {"type": "text", "text": "Happy to plan it."},
            {"type": "text", "text": "Two weeks."},
        ]
    )
    operator()
    app = HarnessApp(alice)
    async with app.run_test(size=(140, 45)) as pilot:
        await type_in(pilot, "Plan the release")
        await until(pilot, lambda: app.view is not None and "agent: Happy to plan it." in said(app))
        assert app.view is not None
        parent = app.view.task_id
        assert app.view.goal == "Plan the release"
        await until(pilot, lambda: app.view.state is TaskState.INPUT_REQUIRED)  # type: ignore[union-attr]
        assert str(app.query_one("#topbar").render()).startswith(
            f"{parent} · INPUT_REQUIRED · awaiting-next-message"
        )
        # The tree follows the state, whichever stream moved it.
        tasks = app.query_one("#tasks", Tree)
        await until(
            pilot,
            lambda: (
                [str(n.label) for n in tasks.root.children]
                == ["Plan the release · INPUT_REQUIRED · awaiting-next-message"]
            ),
        )

        await type_in(pilot, "How long will it take?")
        await until(pilot, lambda: "agent: Two weeks." in said(app))

        # Typing / lists the card's commands; a command's reply shows as a reply.
        app.query_one("#composer").focus()
        await pilot.press("/", "s", "t")
        hint = str(app.query_one("#hint").render())
        assert "/status" in hint
        await pilot.press("backspace", "backspace", "backspace")
        await type_in(pilot, "/status")
        await until(pilot, lambda: any("\nstate: " in ln for ln in said(app)))

        await type_in(pilot, "/sub-task Draft the changelog")
        await until(pilot, lambda: len(app.view.sub_tasks) == 1)  # type: ignore[union-attr]
        child = app.view.sub_tasks[0].task_id  # type: ignore[union-attr]

        # enter on the sub-task row opens it; f4 comes back to the parent.
        rows = app.query_one("#subtasks", ListView)
        await until(pilot, lambda: len(rows.children) == 1)
        rows.focus()
        await pilot.press("enter")
        await until(pilot, lambda: app.view is not None and app.view.task_id == child)
        await until(pilot, lambda: app.view.parent == parent)  # type: ignore[union-attr]
        await until(pilot, lambda: not app.view.state.is_terminal and app.view.goal != "")  # type: ignore[union-attr]
        await pilot.press("ctrl+d")  # the child is done
        await until(pilot, lambda: app.view.state is TaskState.COMPLETED)  # type: ignore[union-attr]
        await pilot.press("f4")
        await until(pilot, lambda: app.view is not None and app.view.task_id == parent)
        await until(pilot, lambda: app.view.sub_tasks[0].state is TaskState.COMPLETED)  # type: ignore[union-attr]

        await pilot.press("ctrl+d")
        await until(pilot, lambda: app.view.state is TaskState.COMPLETED)  # type: ignore[union-attr]
        # An ended task's controls do nothing but say why.
        await pilot.press("ctrl+c")
        await until(pilot, lambda: noticed(app, noticed_part("has ended")))
        assert app.view.state is TaskState.COMPLETED


async def test_a_watchers_complete_is_refused_with_a_notice(
    gateway: Replicas, operator: Operator, model_server: ModelServer, alice: Session
) -> None:
    await model_server.control.script([{"type": "text", "text": "On it."}])
    operator()
    created = [
        e
        async for e in alice.send(
            "Tidy the docs",
            envelope={
                "goal": "Tidy the docs",
                "participants": [
                    {"id": "alice", "role": "assignee"},
                    {"id": "bob", "role": "watcher"},
                ],
            },
        )
    ]
    task_id = next(e.task.id for e in created if e.HasField("task"))
    bob = await Session.connect(gateway().url, participant="bob")
    try:
        app = HarnessApp(bob)
        async with app.run_test(size=(140, 45)) as pilot:
            app.open(task_id)
            await until(pilot, lambda: app.view is not None and app.view.role() == "watcher")
            before = app.view.state
            await pilot.press("ctrl+d")
            await until(pilot, lambda: noticed(app, noticed_part("watcher cannot complete")))
            assert app.view.state is before
    finally:
        await bob.close()


async def test_a_new_task_from_the_form_carries_its_criteria_and_participants(
    alice: Session, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Noted."}])
    operator()
    app = HarnessApp(alice)
    async with app.run_test(size=(140, 45)) as pilot:
        await pilot.press("ctrl+n")
        await pilot.press(*"Tidy the docs")
        await pilot.press("tab", *"Links work; No typos", "tab", *"bob:watcher", "enter")
        await until(pilot, lambda: app.view is not None and "agent: Noted." in said(app))
        assert app.view is not None
        assert app.view.criteria == ("Links work", "No typos")
        assert [(p.id, p.role.value) for p in app.view.participants] == [
            ("bob", "watcher"),
            ("alice", "assignee"),
        ]


async def test_a_gateway_that_goes_away_shows_reconnecting_and_the_stream_resumes(
    gateway: Replicas, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [{"type": "text", "text": "First."}, {"type": "text", "text": "Second."}]
    )
    operator()
    replica = gateway()
    session = await Session.connect(replica.url, participant="alice")
    try:
        app = HarnessApp(session)
        async with app.run_test(size=(140, 45)) as pilot:
            await type_in(pilot, "Plan the release")
            await until(pilot, lambda: "agent: First." in said(app))
            replica.stop()
            await until(pilot, lambda: "reconnecting" in str(app.query_one("#topbar").render()))
            replica.restart()
            await until(pilot, lambda: "reconnecting" not in str(app.query_one("#topbar").render()))
            await type_in(pilot, "And then?")
            await until(pilot, lambda: "agent: Second." in said(app))
            assert said(app).count("agent: First.") == 1  # the replay showed nothing twice
    finally:
        await session.close()


async def test_a_gateway_replaced_mid_conversation_loses_no_message_and_shows_none_twice(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    """The task's changes are written here as the operator writes them, so that the agent
    speaks while no gateway is there: what it said then reaches the screen through the resumed
    stream (Last-Event-ID), which a stream started afresh would have lost (its first event is
    the task as it is now)."""
    replica = gateway()
    tasks = await alices_task(api, namespace, "talk")
    session = await Session.connect(replica.url, participant="alice")
    try:
        app = HarnessApp(session)
        async with app.run_test(size=(140, 45)) as pilot:
            app.open("talk")
            await until(pilot, lambda: said(app) == ["agent: one"])
            await agent_says(tasks, "talk", "two")
            await until(pilot, lambda: said(app) == ["agent: one", "agent: two"])

            replica.stop()  # the gateway's pod replaced: gone, then back at the same address
            await until(pilot, lambda: "reconnecting…" in topbar(app))
            await agent_says(tasks, "talk", "three")
            await tasks.patch_status("talk", {"runner": None})  # nothing a participant sees
            await agent_says(tasks, "talk", "four")
            replica.restart()

            await until(pilot, lambda: said(app)[-1:] == ["agent: four"])
            await until(pilot, lambda: "reconnecting" not in topbar(app))
            await agent_says(tasks, "talk", "five")
            await until(pilot, lambda: said(app)[-1:] == ["agent: five"])
            assert said(app) == [
                "agent: one",
                "agent: two",
                "agent: three",
                "agent: four",
                "agent: five",
            ]
            assert topbar(app) == "talk · INPUT_REQUIRED · awaiting-next-message"
    finally:
        await session.close()


def following(app: HarnessApp) -> bool:
    """Whether the app still follows its open task (its follow worker has not ended)."""
    return any(worker.group == "follow" and not worker.is_finished for worker in app.workers)


def refused_streams(metrics: str) -> float:
    match = re.search(
        r'tiny_harness_gateway_requests_total\{method="SubscribeToTask",'
        r'outcome="too_many_streams"\} ([0-9.]+)',
        metrics,
    )
    return float(match.group(1)) if match else 0.0


async def test_a_stream_past_the_participants_limit_is_said_once_and_not_tried_again(
    api: Any, namespace: str, gateway: Replicas
) -> None:
    replica = gateway(max_streams_per_participant=1)
    await alices_task(api, namespace, "busy")
    session = await Session.connect(replica.url, participant="alice")
    headers = {"X-Participant-Id": "alice", "Accept": "text/event-stream", "A2A-Version": "1.0"}
    try:
        # Alice's one stream on this gateway is open elsewhere (another terminal, a tab).
        async with (
            httpx.AsyncClient(timeout=httpx.Timeout(30.0)) as http,
            http.stream(
                "GET", f"{replica.url}{REST_PREFIX}/tasks/busy:subscribe", headers=headers
            ) as held,
        ):
            assert held.status_code == 200
            app = HarnessApp(session)
            async with app.run_test(size=(140, 45)) as pilot:
                app.open("busy")
                await until(pilot, lambda: "not following: alice has 1 streams open" in topbar(app))
                assert "max_streams_per_participant" in topbar(app)
                await until(pilot, lambda: noticed(app, noticed_part("Not following busy")))
                # The refusal ended the follow: nothing is left that could try again.
                await until(pilot, lambda: not following(app))
                assert refused_streams(replica.metrics()) == 1
                assert "not following" in topbar(app)
    finally:
        await session.close()


async def test_a_long_turn_shows_for_how_long_it_runs_and_its_model_calls_so_far(
    alice: Session, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script(
        [
            {
                "type": "tool_calls",
                "calls": [{"name": "create_plan", "arguments": {"steps": [{"name": "one"}]}}],
            },
            {"type": "text", "text": "Planned.", "delay_seconds": 6},
        ]
    )
    operator(lease_seconds=3)  # renewed every second: each renewal carries the count
    app = HarnessApp(alice)
    async with app.run_test(size=(140, 45)) as pilot:
        await type_in(pilot, "Plan the release")

        def bar() -> str:
            return str(app.query_one("#topbar").render())

        await until(pilot, lambda: "1 model call so far" in bar(), within=20)
        assert "WORKING" in bar()
        assert "working for " in bar()
        await until(pilot, lambda: "agent: Planned." in said(app), within=30)
        await until(pilot, lambda: "working for" not in bar())


async def test_ctrl_c_cancels_an_open_task_after_which_its_controls_do_nothing(
    alice: Session, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Noted."}])
    operator()
    app = HarnessApp(alice)
    async with app.run_test(size=(140, 45)) as pilot:
        await type_in(pilot, "Tidy the docs")
        await until(pilot, lambda: app.view is not None and "agent: Noted." in said(app))
        await pilot.press("ctrl+c")
        await until(pilot, lambda: app.view.state is TaskState.CANCELED)  # type: ignore[union-attr]
        assert "CANCELED" in str(app.query_one("#topbar").render())
        await pilot.press("ctrl+d")  # an ended task: refused, nothing sent
        await until(pilot, lambda: noticed(app, noticed_part("has ended")))
        assert app.view.state is TaskState.CANCELED  # type: ignore[union-attr]


def topbar(app: HarnessApp) -> str:
    return str(app.query_one("#topbar").render())


def details(app: HarnessApp) -> str:
    return str(app.query_one("#details").render())


def labels(app: HarnessApp) -> list[str]:
    """The tree's lines, depth first."""
    out: list[str] = []

    def walk(node: Any) -> None:
        for child in node.children:
            out.append(str(child.label))
            walk(child)

    walk(app.query_one("#tasks", Tree).root)
    return out


async def test_a_question_for_carol_is_refused_to_a_watcher_and_her_answer_completes_it(
    gateway: Replicas, operator: Operator, model_server: ModelServer, tasks: Tasks
) -> None:
    child = await carol_is_asked(model_server, operator, tasks)
    question = QUESTION
    url = gateway().url

    # Alice watches it (she is on the parent): her tree says whom it asks, and what she types
    # is refused as not the answer, the task still waiting.
    alice = await Session.connect(url, participant="alice")
    try:
        app = HarnessApp(alice)
        async with app.run_test(size=(140, 45)) as pilot:
            await until(
                pilot,
                lambda: (
                    labels(app)
                    == [
                        "Help with release. · INPUT_REQUIRED · awaiting-next-message",
                        f"asks carol · {question} · INPUT_REQUIRED · awaiting-answer",
                    ]
                ),
            )
            app.open(child)
            await until(pilot, lambda: f"Question for carol: {question}" in details(app))
            assert "This task waits for carol's answer" in details(app)
            composer = app.query_one("#composer", Input)
            assert composer.placeholder == (
                "Only carol's answer completes this task; / for commands"
            )
            await type_in(pilot, "I approve it myself.")
            refusal = (
                "harness: refused: this task waits for carol's answer; a message from alice "
                "does not answer it"
            )
            await until(pilot, lambda: refusal in said(app))
            assert said(app)[-2:] == ["you: I approve it myself.", refusal]
            assert topbar(app).startswith(f"{child} · INPUT_REQUIRED · awaiting-answer")
    finally:
        await alice.close()
    assert (await tasks.status(child))["turn"] == 0  # no turn took alice's words

    # Carol: the question is in her tree, marked for her; her answer completes it.
    carol = await Session.connect(url, participant="carol")
    try:
        app = HarnessApp(carol)
        async with app.run_test(size=(140, 45)) as pilot:
            mine = f"question for you · {question} · INPUT_REQUIRED · awaiting-answer"
            await until(pilot, lambda: labels(app) == [mine])
            await pilot.press("ctrl+t", "down", "enter")  # to the tree, its first task, open it
            await until(pilot, lambda: f"Question for you: {question}" in details(app))
            assert "Your answer completes this task" in details(app)
            composer = app.query_one("#composer", Input)
            assert composer.placeholder == "Your answer (enter sends it and completes the task)"

            await type_in(pilot, "Approved, up to 40k.")
            await until(pilot, lambda: app.view.state is TaskState.COMPLETED)  # type: ignore[union-attr]
            answer = "answered by carol: Approved, up to 40k."
            await until(pilot, lambda: f"  {answer}" in details(app))
            assert topbar(app).startswith(f"{child} · COMPLETED")
            assert said(app)[-2:] == ["you: Approved, up to 40k.", f"agent: {answer}"]
            await until(
                pilot, lambda: labels(app) == [f"question for you · {question} · COMPLETED"]
            )
            # Ended: its controls do nothing but say why.
            await pilot.press("ctrl+d")
            await until(pilot, lambda: noticed(app, noticed_part("has ended")))
            assert app.view.state is TaskState.COMPLETED  # type: ignore[union-attr]
    finally:
        await carol.close()
    # And the parent's model read the answer.
    parent = await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=2)
    assert parent["message"] == "Carol approved."
