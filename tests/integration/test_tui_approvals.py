"""Tool-call approvals in the TUI, driven by Textual's Pilot against a real gateway, operator
and control plane, the scripted model asking for two gated calls of the test MCP server
(declared as a HarnessToolServer whose ``spec.approval`` gates ``weather``): bob, watching,
sees the calls wait for someone else and his f5 refused with the operator's reason, nothing
sent; alice finds the task marked for her, approves one call with a reason and rejects the
other, each answered by the operator as the harness's line, and the task goes on; the tool ran
once (the MCP server's count). The screen with a decided call and one waiting for alice is
written to ``docs/screens/tui-approvals.txt``.

Under a policy that allows edits, alice's f5 prompt shows the arguments to edit, and the call
runs with the ones she typed; under a policy with a short timeout, the call no one decides is
shown rejected by its timeout, the model is told so, and the tool never runs."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Input, Label, ListView, Tree

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import Replicas
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tests.tui_support import lasting_notices, noticed
from tiny_harness.testing.mcp_server import McpServerThread
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.decision import DecisionPrompt
from tiny_harness.tui.session import Session

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures(lasting_notices.__name__)]

Operator = Callable[..., OperatorProcess]
#: Where the test leaves what the screen showed, for the README and docs/design/tui.md.
SCREEN: Final = Path(__file__).resolve().parents[2] / "docs" / "screens" / "tui-approvals.txt"
TWO_CALLS: Final = {
    "type": "tool_calls",
    "calls": [
        {"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_oslo"},
        {"name": "weather__weather", "arguments": {"city": "Rome"}, "id": "call_rome"},
    ],
}
REPLY: Final = "Sunny in Oslo; I did not check Rome."
PARKED: Final = "TASK_STATE_INPUT_REQUIRED"


ONE_CALL: Final = {
    "type": "tool_calls",
    "calls": [{"name": "weather__weather", "arguments": {"city": "Oslo"}, "id": "call_oslo"}],
}


def gate(
    operator: Operator, kubectl: Kubectl, mcp: McpServerThread, **policy: Any
) -> McpServerThread:
    """The operator, and the test MCP server as tool server ``weather`` whose ``weather``
    tool needs approval (``policy``: more of its ``spec.approval``)."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={"tools": ["weather"], **policy})
    wait_ready(kubectl, "weather")
    return mcp


@pytest.fixture
def gated(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The ``weather`` tool needs approval."""
    return gate(operator, kubectl, mcp)


@pytest.fixture
def editable(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The ``weather`` tool needs approval, and may be approved with edited arguments."""
    return gate(operator, kubectl, mcp, allowEdit=True)


#: Long enough for the open app to show the call waiting, short enough for a test.
TIMEOUT: Final = 3


@pytest.fixture
def timed(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The ``weather`` tool needs approval, within :data:`TIMEOUT` seconds (then rejected)."""
    return gate(operator, kubectl, mcp, timeoutSeconds=TIMEOUT)


async def until(pilot: Pilot[None], condition: Callable[[], Any], within: float = 30) -> None:
    async def drawn() -> Any:
        await pilot.pause(0.05)  # the app handles what it was sent, and redraws
        return condition()

    await eventually_async(drawn, within=within, what="the app to show it", interval=0)


def topbar(app: HarnessApp) -> str:
    return str(app.query_one("#topbar").render())


def labels(app: HarnessApp) -> list[str]:
    return [str(node.label) for node in app.query_one("#tasks", Tree).root.children]


def listed(app: HarnessApp) -> list[str]:
    """The calls listed, by id, in their order on the screen."""
    return [str(item.name) for item in app.query_one("#approvals", ListView).children]


def said(app: HarnessApp) -> list[str]:
    return [f"{line.who}: {line.text}" for line in (app.view.lines if app.view else [])]


def screen_text(app: HarnessApp) -> str:
    """The screen as plain text, each line's trailing blanks dropped."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


async def decide(pilot: Pilot[None], key: str, reason: str) -> None:
    """``key`` (f5 or f6) on the chosen call, the reason typed into the prompt, enter."""
    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
    await pilot.press(*reason, "enter")
    await until(pilot, lambda: not isinstance(app.screen, DecisionPrompt))


async def test_alice_approves_one_call_and_rejects_the_other_and_the_tool_runs_once(
    tasks: Tasks, model_server: ModelServer, gated: McpServerThread, gateway: Replicas
) -> None:
    await model_server.control.script([TWO_CALLS, {"type": "text", "text": REPLY}])
    await tasks.create(
        "trip",
        toolServers=["weather"],
        participants=[{"id": "alice", "role": "assignee"}, {"id": "bob", "role": "watcher"}],
    )
    await tasks.wait("trip", PARKED)
    await tasks.send("trip", "Weather in Oslo and Rome?")
    await tasks.wait("trip", PARKED, sub_state="awaiting-approval", turn=1, within=60)
    url = gateway().url
    awaiting = "Help with trip. · INPUT_REQUIRED · awaiting-approval"

    # Bob watches: the calls wait for someone else, and his f5 is refused before anything
    # is sent, with the operator's own reason.
    bob = await Session.connect(url, participant="bob")
    try:
        app = HarnessApp(bob)
        async with app.run_test(size=(140, 45)) as pilot:
            await until(pilot, lambda: labels(app) == [f"awaits approval · {awaiting}"])
            app.open("trip")
            await until(pilot, lambda: listed(app) == ["call_oslo", "call_rome"])
            assert (
                topbar(app) == f"trip · {awaiting.split(' · ', 1)[1]} · 2 calls wait for approval"
            )
            await pilot.press("f5")
            await until(
                pilot, lambda: noticed(app, "bob is a watcher and may not decide call 'call_oslo'")
            )
            assert not isinstance(app.screen, DecisionPrompt)
    finally:
        await bob.close()
    assert not (await tasks.status("trip"))["approvals"][0].get("decision")

    # Alice: the task is marked for her; she approves Oslo with a reason, then rejects Rome.
    alice = await Session.connect(url, participant="alice")
    try:
        app = HarnessApp(alice)
        async with app.run_test(size=(140, 45)) as pilot:
            await until(pilot, lambda: labels(app) == [f"approval for you · {awaiting}"])
            await pilot.press("ctrl+t", "down", "enter")  # to the tree, its first task, open it
            await until(pilot, lambda: listed(app) == ["call_oslo", "call_rome"])
            assert topbar(app).endswith(" · 2 calls wait for approval, 2 for you")

            await decide(pilot, "f5", "fine")
            approved = "harness: weather__weather was approved by alice: fine"
            await until(pilot, lambda: approved in said(app))
            lines = said(app)
            assert lines[lines.index(approved) - 1] == "you: approve call_oslo: fine"
            # The decided call goes last; the one still waiting for alice is first, and chosen.
            await until(pilot, lambda: listed(app) == ["call_rome", "call_oslo"])
            await until(pilot, lambda: noticed(app, approved.removeprefix("harness: ")))
            assert topbar(app).endswith(" · 1 call waits for approval, 1 for you")
            assert labels(app) == [f"approval for you · {awaiting}"]
            SCREEN.write_text(
                "The TUI with a call waiting for approval (alice's), the other approved.\n"
                "Written by tests/integration/test_tui_approvals.py (Pilot, 140x45).\n\n"
                + screen_text(app)
            )

            await decide(pilot, "f6", "not Rome")
            rejected = "harness: weather__weather was rejected by alice: not Rome"
            await until(pilot, lambda: rejected in said(app))
            lines = said(app)  # the next turn may have begun: what came just before the answer
            assert lines[lines.index(rejected) - 1] == "you: reject call_rome: not Rome"
            # Both decided, the next turn runs the approved call and the model answers.
            await until(pilot, lambda: f"agent: {REPLY}" in said(app), within=60)
            await until(
                pilot, lambda: topbar(app) == "trip · INPUT_REQUIRED · awaiting-next-message"
            )
            await until(pilot, lambda: listed(app) == [])
            await until(
                pilot,
                lambda: labels(app) == ["Help with trip. · INPUT_REQUIRED · awaiting-next-message"],
            )
    finally:
        await alice.close()

    assert [c.arguments for c in gated.served("weather")] == [{"city": "Oslo"}]
    outputs = tool_outputs((await model_server.control.requests())[-1])
    assert outputs == [
        "Sunny in Oslo.",
        "Not run: weather__weather was rejected by alice: not Rome.",
    ]


def call_text(app: HarnessApp, call_id: str) -> str:
    """The call's entry in the list of calls, as the screen shows it."""
    for item in app.query_one("#approvals", ListView).children:
        if item.name == call_id:  # its label, once mounted
            return "".join(str(label.render()) for label in item.query(Label))
    return ""


async def test_alice_approves_a_call_with_edited_arguments_and_it_runs_with_them(
    tasks: Tasks, model_server: ModelServer, editable: McpServerThread, gateway: Replicas
) -> None:
    reply = "Sunny in Bergen: pack light."
    await model_server.control.script([ONE_CALL, {"type": "text", "text": reply}])
    await tasks.create("trip", toolServers=["weather"])
    await tasks.wait("trip", PARKED)
    await tasks.send("trip", "Weather in Oslo?")
    await tasks.wait("trip", PARKED, sub_state="awaiting-approval", turn=1, within=60)

    alice = await Session.connect(gateway().url, participant="alice")
    try:
        app = HarnessApp(alice)
        async with app.run_test(size=(140, 45)) as pilot:
            await until(pilot, lambda: bool(labels(app)))
            app.open("trip")
            await until(pilot, lambda: listed(app) == ["call_oslo"])
            await until(
                pilot, lambda: call_text(app, "call_oslo").startswith("for you · weather__weather")
            )

            # f5: the prompt shows the arguments, editable as one line of JSON.
            await pilot.press("f5")
            await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
            prompt = app.screen
            field = prompt.query_one("#arguments", Input)
            assert field.value == '{"city": "Oslo"}'
            assert "with the arguments as they are in the field" in " ".join(
                str(label.render()) for label in prompt.query(Label)
            )
            # Something not an object is refused in the prompt, nothing sent.
            await pilot.press(*"Bergen instead", "tab", "ctrl+a", "ctrl+k", *'["Bergen"]')
            await pilot.press("enter")
            error = prompt.query_one("#error", Label)
            await until(pilot, lambda: "must be a JSON object" in str(error.render()))
            assert isinstance(app.screen, DecisionPrompt)
            assert not (await tasks.status("trip"))["approvals"][0].get("decision")
            # Then the edit: Bergen.
            await pilot.press("ctrl+a", "ctrl+k", *'{"city": "Bergen"}', "enter")
            await until(pilot, lambda: not isinstance(app.screen, DecisionPrompt))

            approved = (
                "harness: weather__weather was approved by alice with edited arguments: "
                "Bergen instead"
            )
            await until(pilot, lambda: approved in said(app))
            lines = said(app)
            assert lines[lines.index(approved) - 1] == "you: approve call_oslo: Bergen instead"
            await until(pilot, lambda: noticed(app, approved.removeprefix("harness: ")))
            await until(pilot, lambda: f"agent: {reply}" in said(app), within=60)
            await until(
                pilot, lambda: topbar(app) == "trip · INPUT_REQUIRED · awaiting-next-message"
            )
            await until(pilot, lambda: listed(app) == [])
    finally:
        await alice.close()

    assert [c.arguments for c in editable.served("weather")] == [{"city": "Bergen"}]
    assert tool_outputs((await model_server.control.requests())[-1]) == ["Sunny in Bergen."]


async def test_a_call_no_one_decides_is_rejected_by_its_timeout_and_the_task_goes_on(
    tasks: Tasks, model_server: ModelServer, timed: McpServerThread, gateway: Replicas
) -> None:
    reply = "I could not check the weather in Oslo."
    # The model takes a while over the next turn: the decided call stays listed meanwhile.
    await model_server.control.script(
        [ONE_CALL, {"type": "text", "text": reply, "delay_seconds": 3}]
    )
    await tasks.create("trip", toolServers=["weather"])
    await tasks.wait("trip", PARKED)

    alice = await Session.connect(gateway().url, participant="alice")
    try:
        app = HarnessApp(alice)
        async with app.run_test(size=(140, 45)) as pilot:
            await until(pilot, lambda: bool(labels(app)))
            app.open("trip")
            await until(pilot, lambda: topbar(app).endswith("awaiting-next-message"))
            await tasks.send("trip", "Weather in Oslo?")  # the call parks while alice looks on

            # Listed: waiting (until when, then rejected), or already decided by its timeout.
            await until(
                pilot,
                lambda: (
                    listed(app) == ["call_oslo"]
                    and any(
                        words in call_text(app, "call_oslo")
                        for words in ("then rejected", "no one decided in time")
                    )
                ),
            )

            why = f"not decided within {TIMEOUT}s (onTimeout: reject)"
            await until(
                pilot,
                lambda: call_text(app, "call_oslo").startswith(
                    f"weather__weather · call call_oslo · rejected: no one decided in time: {why}"
                ),
            )
            timed_out = f"harness: weather__weather was rejected: no one decided in time: {why}"
            await until(pilot, lambda: timed_out in said(app))
            assert "awaits approval" not in topbar(app)
            assert "1 call wait" not in topbar(app)
            # Nothing is left to decide: f5 is no longer offered, and does nothing.
            active = app.screen.active_bindings.get("f5")
            assert active is None or not active.enabled
            await pilot.press("f5")
            await pilot.pause(0.05)
            assert not isinstance(app.screen, DecisionPrompt)

            # The task goes on: the model is told, and answers.
            await until(pilot, lambda: f"agent: {reply}" in said(app), within=60)
            await until(
                pilot, lambda: topbar(app) == "trip · INPUT_REQUIRED · awaiting-next-message"
            )
            await until(pilot, lambda: listed(app) == [])
    finally:
        await alice.close()

    assert timed.served("weather") == []
    assert tool_outputs((await model_server.control.requests())[-1]) == [
        f"Not run: weather__weather was rejected: no one decided in time: {why}."
    ]
