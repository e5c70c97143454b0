"""Someone else's text in the TUI is shown as written and never obeyed: markup in a message
stays brackets, and a cleared screen, a clipboard write, a red "notice" or a right-to-left
override in a goal, a message, a participant's name, a call's arguments or a notice is shown
as escapes, never sent to the terminal (over a stand-in for the gateway session)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any

import pytest
from a2a.types import StreamResponse, Task
from textual.pilot import Pilot
from textual.widgets import Input, ListView, Tree

from tests.tui_support import lasting_notices, noticed
from tests.unit.tui.approval_tasks import call, user, waiting
from tests.unit.tui.test_approval_keys import until
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.decision import DecisionPrompt
from tiny_harness.tui.plain import Plain, PlainLabel, PlainLog
from tiny_harness.tui.session import Reconnecting

pytestmark = pytest.mark.usefixtures(lasting_notices.__name__)

HOSTILE = "\x1b[2J\x1b]52;c;cm0gLXJm\x07\x1b[31mSECURITY NOTICE\x1b[0m report\u202efdp.exe"
SHOWN = "\\x1b[2J\\x1b]52;c;cm0gLXJm\\x07\\x1b[31mSECURITY NOTICE\\x1b[0m report\\u202efdp.exe"
MARKUP = "[bold]not bold[/bold] [@click=app.quit]not a link[/]"


def obeyable(text: str) -> list[str]:
    return [c for c in text if c in "\x1b\x07\x9b\r" or 0x202A <= ord(c) <= 0x202E]


@dataclass
class Gateway:
    """One task awaiting approval whose every text is hostile."""

    me: str = "alice"
    commands: tuple[Any, ...] = ()

    def now(self) -> Task:
        history = [
            user("m1", f"{MARKUP} {HOSTILE}", sender=f"mallory{HOSTILE}"),
        ]
        return waiting(call("c1", f"Oslo{HOSTILE}", allow_edit=True), history=history)

    async def tasks(self) -> list[Task]:
        return [self.now()]

    async def task(self, task_id: str) -> Task:
        return self.now()

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        yield StreamResponse(task=self.now())


def conversation(app: HarnessApp) -> list[str]:
    log = app.query_one("#conversation", PlainLog)
    return ["".join(segment.text for segment in strip) for strip in log.lines]


def everything_shown(app: HarnessApp) -> str:
    """The text of every widget on the screen that shows text."""
    texts = [str(w.render()) for w in app.screen.query(Plain)]
    texts += [str(w.render()) for w in app.screen.query(PlainLabel)]
    texts += [str(node.label) for node in app.query_one("#tasks", Tree).root.children]
    return "\n".join([*texts, *conversation(app)])


async def opened(pilot: Pilot[None]) -> HarnessApp:
    app = pilot.app
    assert isinstance(app, HarnessApp)
    await until(pilot, lambda: len(app.query_one("#tasks", Tree).root.children) == 1)
    app.open("trip")
    await until(pilot, lambda: len(app.query_one("#approvals", ListView).children) == 1)
    await until(pilot, lambda: len(conversation(app)) >= 2)
    return app


async def test_markup_and_escape_sequences_in_messages_are_shown_literally() -> None:
    app = HarnessApp(Gateway())  # type: ignore[arg-type]
    async with app.run_test(size=(240, 45)) as pilot:
        await opened(pilot)
        said = "".join(conversation(app))  # wrapped lines, joined again
        assert f"mallory{SHOWN}: {MARKUP} {SHOWN}" in said, said
        listed = app.query_one("#approvals", ListView).children[0].query_one(PlainLabel)
        assert '"city": "Oslo\\u001b[2J\\u001b]52;c;' in str(listed.render())
        assert obeyable(everything_shown(app)) == []


async def test_the_decision_prompt_shows_the_arguments_escaped_and_sends_them_unchanged() -> None:
    app = HarnessApp(Gateway())  # type: ignore[arg-type]
    async with app.run_test(size=(240, 45)) as pilot:
        await opened(pilot)
        await pilot.press("f5")
        await until(pilot, lambda: isinstance(app.screen, DecisionPrompt))
        field = app.screen.query_one("#arguments", Input)
        assert obeyable(field.value) == []
        assert "report\\u202efdp.exe" in field.value
        shown = [str(w.render()) for w in app.screen.query(PlainLabel)]
        shown += [str(w.render()) for w in app.screen.query(Plain)]
        assert obeyable("\n".join(shown)) == []


async def test_a_notice_quoting_hostile_text_is_shown_literally_not_as_markup() -> None:
    app = HarnessApp(Gateway())  # type: ignore[arg-type]
    async with app.run_test(size=(240, 45)) as pilot:
        app.notify(f"refused: {MARKUP} {HOSTILE}", severity="warning")
        await until(pilot, lambda: noticed(app, f"refused: {MARKUP} {SHOWN}"))
        [notice] = list(app._notifications)
        assert notice.markup is False
