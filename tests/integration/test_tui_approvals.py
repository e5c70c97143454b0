"""Tool-call approvals in the TUI, driven by Textual's Pilot against a real gateway, operator
and control plane, the scripted model asking for two gated calls of the test MCP server
(declared as a HarnessToolServer whose ``spec.approval`` gates ``weather``): bob, watching,
sees the calls wait for someone else and his f5 refused with the operator's reason, nothing
sent; alice finds the task marked for her, approves one call with a reason and rejects the
other, each answered by the operator as the harness's line, and the task goes on; the tool ran
once (the MCP server's count). The screen with a decided call and one waiting for alice is
written to ``docs/screens/tui-approvals.txt``."""

from __future__ import annotations

import io
from collections.abc import Callable
from pathlib import Path
from typing import Any, Final

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import ListView, Tree

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.gateway_support import Replicas
from tests.integration.lifecycle_support import Tasks
from tests.integration.toolserver_support import declare, tool_outputs, wait_ready
from tiny_harness.testing.mcp_server import McpServerThread
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.decision import DecisionPrompt
from tiny_harness.tui.session import Session

pytestmark = pytest.mark.controlplane

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


@pytest.fixture
def gated(operator: Operator, kubectl: Kubectl, mcp: McpServerThread) -> McpServerThread:
    """The operator, and the test MCP server as tool server ``weather`` whose ``weather``
    tool needs approval."""
    operator()
    declare(kubectl, "weather", mcp.url, approval={"tools": ["weather"]})
    wait_ready(kubectl, "weather")
    return mcp


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


def noticed(app: HarnessApp, text: str) -> bool:
    return any(n.message == text for n in app._notifications)


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
            assert noticed(app, approved.removeprefix("harness: "))
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
