"""Files in and artifacts out in the TUI, over a stand-in for its gateway session (the real one
is in tests/integration/test_tui_files.py): f7 attaches a file after a path prompt, named above
the composer; a kind no model is given is attached with a notice saying so; f9 drops the
last; a refusal by the gateway is a notice and keeps the files; the message sent carries them as
raw parts, and the conversation names them; the artifact the answer publishes is listed, and
f8 saves it where the prompt says, over an existing file only when told twice."""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from a2a.types import Part, StreamResponse, Task
from textual.pilot import Pilot
from textual.widgets import Input, Label, ListView, Static

from tests.eventually import eventually_async
from tests.tui_support import lasting_notices, noticed
from tests.unit.tui.approval_tasks import agent, status_update, waiting
from tests.unit.tui.artifact_events import PNG, artifact, chunk, text_part
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.path_prompt import PathPrompt
from tiny_harness.tui.session import Reconnecting, SessionError

pytestmark = pytest.mark.usefixtures(lasting_notices.__name__)

REPORT = "Two files: a chart and notes."


@dataclass
class Desk:
    """The task ``trip``: each message sent is answered, the answer publishing ``report``."""

    me: str = "alice"
    commands: tuple[Any, ...] = ()
    #: What the gateway refuses a message with (None: it takes it).
    refuse: str | None = None
    sent: list[tuple[str, list[Part]]] = field(default_factory=list)

    def now(self) -> Task:
        task = waiting(version=10 + 2 * len(self.sent), sub_state="awaiting-next-message")
        if self.sent:
            task.artifacts.append(artifact("report", text_part(REPORT)))
        return task

    async def tasks(self) -> list[Task]:
        return [self.now()]

    async def task(self, task_id: str) -> Task:
        return self.now()

    async def follow(
        self, task_id: str, **_: object
    ) -> AsyncIterator[StreamResponse | Reconnecting]:
        yield StreamResponse(task=self.now())

    async def send(
        self,
        text: str,
        *,
        task_id: str = "",
        envelope: dict[str, Any] | None = None,
        message_id: str = "",
        files: list[Part] | tuple[Part, ...] = (),
    ) -> AsyncIterator[StreamResponse]:
        if self.refuse is not None:
            raise SessionError(self.refuse)
        self.sent.append((text, list(files)))
        version = 10 + 2 * len(self.sent)
        yield status_update(version - 1, sub_state="turn-running")
        yield chunk("report", text_part(REPORT))
        yield status_update(version, agent(f"a{version}", "Published."), sub_state=None)


async def until(pilot: Pilot[None], done: Callable[[], bool]) -> None:
    async def drawn() -> bool:
        await pilot.pause(0.05)
        return done()

    await eventually_async(drawn, within=20, what="the screen to show it", interval=0)


def text(app: HarnessApp, selector: str) -> str:
    return str(app.query_one(selector, Static).render())


def listed(app: HarnessApp) -> list[str]:
    items = app.query_one("#artifacts", ListView).children
    return [str(item.query_one(Label).render()) for item in items]


def footer_keys(app: HarnessApp) -> set[str]:
    return {b.key for (_, b, enabled, _) in app.active_bindings.values() if enabled}


async def prompt(pilot: Pilot[None], key: str, value: str | None = None) -> PathPrompt:
    """``key`` pressed, the path prompt it opens (its field set to ``value`` when given)."""
    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, PathPrompt))
    screen = app.screen
    assert isinstance(screen, PathPrompt)
    if value is not None:
        screen.query_one(Input).value = value
    return screen


async def answer(pilot: Pilot[None], key: str, value: str) -> None:
    """``key``'s path prompt answered with ``value``."""
    await prompt(pilot, key, value)
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(pilot.app.screen, PathPrompt))


async def opened(pilot: Pilot[None]) -> HarnessApp:
    app = pilot.app
    assert isinstance(app, HarnessApp)
    await until(pilot, lambda: app.nodes != {})
    app.open("trip")
    await until(pilot, lambda: app.view is not None and app.view.goal != "")
    return app


async def test_files_attached_are_sent_named_and_the_published_artifact_saved(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "chart.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("Release 1.2\n")
    (tmp_path / "logs.zip").write_bytes(b"PK\x03\x04")
    desk = Desk()
    app = HarnessApp(desk)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        assert "f7" in footer_keys(app)
        assert {"f8", "f9"}.isdisjoint(footer_keys(app))
        chart = f"[file chart.png (image/png, {len(PNG)} B)]"
        notes = "[file notes.md (text/markdown, 12 B)]"

        await answer(pilot, "f7", str(tmp_path / "chart.png"))
        await until(pilot, lambda: chart in text(app, "#attached"))
        assert "f9" in footer_keys(app)

        # A zip no model is given: attached, and a notice says what becomes of it.
        await answer(pilot, "f7", str(tmp_path / "logs.zip"))
        await until(
            pilot,
            lambda: noticed(
                app,
                "Attached logs.zip, but files of type application/zip cannot be given to a "
                "model: kept with the task, and the model told only its name",
            ),
        )
        assert "(kept with the task, and the model told only its name)" in text(app, "#attached")

        # f9 drops the last attached; escape attaches nothing.
        await pilot.press("f9")
        await until(pilot, lambda: "logs.zip" not in text(app, "#attached"))
        assert noticed(app, "Dropped logs.zip")
        await prompt(pilot, "f7", str(tmp_path / "notes.md"))
        await pilot.press("f7", "f8", "f9")  # a prompt open: the main screen's keys wait
        await pilot.pause()
        assert len(app.screen_stack) == 2
        assert [f.name for f in app.attached] == ["chart.png"]
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, PathPrompt))
        assert [f.name for f in app.attached] == ["chart.png"]
        await answer(pilot, "f7", str(tmp_path / "notes.md"))
        assert text(app, "#attached") == f"Attached: {chart} {notes} · f9 drops the last"

        # The gateway refuses: its sentence is the notice, nothing is sent, the files stay.
        desk.refuse = "message.parts[1]: the file chart.png is too large"
        app.query_one("#composer", Input).focus()
        await pilot.press(*"Look", "enter")
        await until(pilot, lambda: noticed(app, desk.refuse or ""))
        assert desk.sent == []
        assert [f.name for f in app.attached] == ["chart.png", "notes.md"]

        desk.refuse = None
        await pilot.press(*"Look", "enter")
        await until(pilot, lambda: app.view is not None and listed(app) != [])
        [(said, files)] = desk.sent
        assert said == "Look"
        assert [(p.filename, p.media_type, p.raw) for p in files] == [
            ("chart.png", "image/png", PNG),
            ("notes.md", "text/markdown", b"Release 1.2\n"),
        ]
        assert app.view is not None
        mine = [line.text for line in app.view.lines if line.who == "you"]
        assert mine[-1] == f"Look\n{chart}\n{notes}"
        assert app.attached == []
        assert not app.query_one("#attached").display
        assert listed(app) == [f"report · {len(REPORT)} bytes"]
        assert text(app, "#artifacts-title").startswith("1 artifact: f8 saves the chosen one")
        assert "f8" in footer_keys(app)

        # f8 proposes the artifact's name in the current directory, and saves it there.
        out = tmp_path / "out"
        out.mkdir()
        monkeypatch.chdir(out)
        screen = await prompt(pilot, "f8")
        assert screen.query_one(Input).value == "report.txt"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, PathPrompt))
        saved = f"Saved report ({len(REPORT)} bytes) to {out / 'report.txt'}"
        await until(pilot, lambda: noticed(app, saved))
        assert (out / "report.txt").read_text() == REPORT

        # Over an existing file only when told twice; escape saves nothing.
        (out / "report.txt").write_text("mine")
        screen = await prompt(pilot, "f8")
        await pilot.press("escape")
        await until(pilot, lambda: not isinstance(app.screen, PathPrompt))
        screen = await prompt(pilot, "f8")
        await pilot.press("enter")
        warning = screen.query_one("#warning", Label)
        await until(pilot, lambda: "exists: enter again to overwrite it" in str(warning.render()))
        assert (out / "report.txt").read_text() == "mine"
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, PathPrompt))
        assert (out / "report.txt").read_text() == REPORT


async def test_with_no_artifact_and_no_file_attached_f8_and_f9_do_nothing() -> None:
    app = HarnessApp(Desk())  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        await pilot.press("f8", "f9")
        await pilot.pause()
        assert not isinstance(app.screen, PathPrompt)
        assert not app.query_one("#artifacts").display


async def test_files_alone_go_to_an_open_task_and_an_empty_composer_sends_nothing(
    tmp_path: Path,
) -> None:
    (tmp_path / "notes.md").write_text("Release 1.2\n")
    desk = Desk()
    app = HarnessApp(desk)  # type: ignore[arg-type]
    async with app.run_test(size=(140, 45)) as pilot:
        await opened(pilot)
        app.query_one("#composer", Input).focus()
        await pilot.press("enter")  # nothing typed, nothing attached: nothing is sent
        await pilot.pause()
        assert desk.sent == []

        await answer(pilot, "f7", str(tmp_path / "notes.md"))
        app.query_one("#composer", Input).focus()
        await pilot.press("enter")
        await until(pilot, lambda: desk.sent != [])
        [(said, files)] = desk.sent
        assert said == ""
        assert [(p.filename, p.raw) for p in files] == [("notes.md", b"Release 1.2\n")]
        assert app.attached == []
        assert app.view is not None
        await until(
            pilot,
            lambda: (
                [line.text for line in app.view.lines if line.who == "you"][-1:]  # type: ignore[union-attr]
                == ["[file notes.md (text/markdown, 12 B)]"]
            ),
        )
