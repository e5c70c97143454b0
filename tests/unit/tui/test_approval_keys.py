"""Approving and rejecting in the TUI over a stand-in for its gateway session (the real one is
in tests/integration/test_tui_approvals.py): the calls listed above the conversation, yours
first; f5 and f6 ask for a reason (and, when the policy allows it, the arguments) and send the
decision; the operator's answer is the harness's line and a notice, the task read again; a
call you may not decide is refused with the operator's reason and nothing is sent; escape
sends nothing; the footer offers Approve and Reject only while a call waits."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import Any

import pytest
from a2a.types import StreamResponse, Task
from textual.pilot import Pilot
from textual.widgets import Input, Label, ListView, Static, Tree

from tests.eventually import eventually_async
from tests.tui_support import lasting_notices, noticed, noticed_part
from tests.unit.tui.approval_tasks import PARK, agent, approved, call, status_update, waiting
from tiny_harness.core.approval import Decision
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.decision import DecisionPrompt
from tiny_harness.tui.session import Reconnecting

REJECTED = Decision(verdict="reject", by="alice", at="2026-12-02T05:31:00Z", reason="not Rome")

pytestmark = pytest.mark.usefixtures(lasting_notices.__name__)


@dataclass
class Sent:
    task_id: str
    call_id: str
    verdict: str
    reason: str
    arguments: dict[str, Any] | None
    park: str = ""


@dataclass
class Gateway:
    """The one task, moved as the operator would move it by each decision sent."""

    me: str = "alice"
    edit: bool = False
    sent: list[Sent] = field(default_factory=list)
    #: c1's arguments, and whether the operator stored them cut (too long to keep whole).
    arguments: dict[str, Any] | None = None
    cut: bool = False
    commands: tuple[Any, ...] = ()

    def now(self) -> Task:
        more: dict[str, Any] = {"arguments_cut": self.cut}
        if self.arguments is not None:
            more["arguments"] = self.arguments
        first = call("c1", "Oslo", allow_edit=self.edit, **more)
        second = call("c2", "Rome")
        for decided in self.sent:
            if decided.call_id == "c1":
                first = call(
                    "c1",
                    "Oslo",
                    allow_edit=self.edit,
                    decision=approved(reason=decided.reason),
                    **more,
                )
            else:
                second = call("c2", "Rome", decision=REJECTED)
        return waiting(first, second, version=10 + len(self.sent))

    async def tasks(self) -> list[Task]:
        return [self.now()]

    async def task(self, task_id: str) -> Task:
        return self.now()

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        yield StreamResponse(task=self.now())

    async def decide(
        self,
        task_id: str,
        call_id: str,
        verdict: str,
        *,
        park: str,
        reason: str = "",
        arguments: dict[str, Any] | None = None,
        message_id: str = "",
    ) -> AsyncIterator[StreamResponse]:
        self.sent.append(Sent(task_id, call_id, verdict, reason, arguments, park))
        said = "approved" if verdict == "approve" else "rejected"
        why = f": {reason}" if reason else ""
        text = f"weather__weather was {said} by {self.me}{why}"
        yield status_update(10 + len(self.sent), agent(f"cmd-{message_id}", text))


async def until(pilot: Pilot[None], done: Callable[[], bool]) -> None:
    async def drawn() -> bool:
        await pilot.pause(0.05)
        return done()

    await eventually_async(drawn, within=20, what="the screen to show it", interval=0)


def text(app: HarnessApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def calls(app: HarnessApp) -> list[str]:
    return [str(item.name) for item in app.query_one("#approvals", ListView).children]


def footer_keys(app: HarnessApp) -> set[str]:
    return {b.key for (_, b, enabled, _) in app.active_bindings.values() if enabled}


async def opened(pilot: Pilot[None]) -> HarnessApp:
    app = pilot.app
    assert isinstance(app, HarnessApp)
    tree = app.query_one("#tasks", Tree)
    await until(pilot, lambda: len(tree.root.children) == 1)
    app.open("trip")
    await until(pilot, lambda: len(calls(app)) == 2)
    return app


async def test_alice_approves_one_call_with_a_reason_and_rejects_the_other() -> None:
    gateway = Gateway()
    app = HarnessApp(gateway)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        assert text(app, "#topbar") == (
            "trip · INPUT_REQUIRED · awaiting-approval · 2 calls wait for approval, 2 for you"
        )
        assert str(app.query_one("#tasks", Tree).root.children[0].label).startswith(
            "approval for you · Plan the trip"
        )
        assert {"f5", "f6"} <= footer_keys(app)

        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        await pilot.press(*"fine", "enter")
        await until(pilot, lambda: gateway.sent != [] and calls(app) == ["c2", "c1"])
        assert gateway.sent == [Sent("trip", "c1", "approve", "fine", None, PARK)]
        assert app.view is not None
        assert app.view.lines[-1].who == "harness"
        assert app.view.lines[-1].text == "weather__weather was approved by alice: fine"
        assert (app.view.lines[-2].who, app.view.lines[-2].text) == ("you", "approve c1: fine")
        await until(pilot, lambda: noticed(app, noticed_part("approved by alice")))
        assert text(app, "#topbar").endswith("1 call waits for approval, 1 for you")

        # The chosen call is now c2, the one still waiting for alice.
        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        await pilot.press(*"not Rome", "enter")
        await until(pilot, lambda: len(gateway.sent) == 2)
        assert gateway.sent[1] == Sent("trip", "c2", "reject", "not Rome", None, PARK)
        await until(pilot, lambda: "Calls decided" in text(app, "#approvals-title"))
        assert {"f5", "f6"}.isdisjoint(footer_keys(app))

        # Nothing waits any more: the keys are gone from the footer, and do nothing.
        await pilot.press("f5")
        await pilot.pause()
        assert not isinstance(app.screen, DecisionPrompt)
        assert len(gateway.sent) == 2


async def test_a_watchers_approval_is_refused_with_the_operators_reason_and_nothing_is_sent() -> (
    None
):
    gateway = Gateway(me="bob")
    app = HarnessApp(gateway)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        assert str(app.query_one("#tasks", Tree).root.children[0].label).startswith(
            "awaits approval · Plan the trip"
        )
        listed = app.query_one("#approvals", ListView).children[0].query_one(Label)
        assert "not yours to decide: bob is a watcher" in str(listed.render())
        await pilot.press("f5")
        await until(pilot, lambda: noticed(app, "bob is a watcher and may not decide call 'c1'"))
        assert not isinstance(app.screen, DecisionPrompt)
        assert gateway.sent == []


async def test_escape_sends_nothing_and_an_edit_must_be_a_json_object() -> None:
    gateway = Gateway(edit=True)
    app = HarnessApp(gateway)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, DecisionPrompt))
        assert gateway.sent == []

        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        fields = app.screen.query_one("#arguments", Input)
        assert fields.value == '{"city": "Oslo"}'
        fields.value = '{"city": '
        fields.focus()
        await pilot.press("enter")
        error = app.screen.query_one("#error")
        await until(pilot, lambda: "not JSON" in str(error.render()))
        assert gateway.sent == []
        fields.value = '{"city": "Bergen"}'
        await pilot.press("enter")
        await until(pilot, lambda: len(gateway.sent) == 1)
        assert gateway.sent[0].arguments == {"city": "Bergen"}


async def test_the_prompt_shows_the_call_whole_however_long() -> None:
    arguments = {f"key{i:02}": "v" * 90 for i in range(30)}
    gateway = Gateway(arguments=arguments)
    app = HarnessApp(gateway)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        listed = str(app.query_one("#approvals", ListView).children[0].query_one(Label).render())
        assert "more lines" in listed  # the list is bounded; the prompt is not
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        whole = str(app.screen.query_one("#arguments-whole", Static).render())
        for key in arguments:
            assert f'"{key}": "{"v" * 90}"' in whole
        await pilot.press("enter")
        await until(pilot, lambda: len(gateway.sent) == 1)
        assert gateway.sent[0].park == PARK


async def test_a_call_too_long_to_show_whole_is_not_approved_here_but_may_be_rejected() -> None:
    gateway = Gateway(arguments={"_start": '{"text": "xxxx'}, cut=True)
    app = HarnessApp(gateway)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        await pilot.press("f5")
        await until(pilot, lambda: noticed(app, noticed_part("kubectl harness get trip")))
        assert not isinstance(app.screen, DecisionPrompt)
        assert gateway.sent == []

        await pilot.press("f6")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        await pilot.press(*"unread", "enter")
        await until(pilot, lambda: len(gateway.sent) == 1)
        assert gateway.sent[0] == Sent("trip", "c1", "reject", "unread", None, PARK)
