"""Files in and artifacts out in the TUI, driven by Textual's Pilot against a real gateway,
operator and control plane, with the scripted model: a file past the message's bound is
refused with a notice and nothing is sent; alice attaches a real PNG, a text file and a zip
(said to be kept with the task, the model told only its name), and her first message carries
them to the model (its recorded request holds the image, the text and the note naming the
zip); the model publishes a report in two chunks and the PNG back as a chart; the TUI lists
both, each whole, and f8 saves each where the prompt says, byte for byte; the next turn's
chunk, carried by two streams, shows once, and a save over the first is made only when told
twice. The screen with the artifacts listed is written to ``docs/screens/tui-files.txt``."""

from __future__ import annotations

import base64
import io
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any, Final

import pytest
from rich.console import Console
from textual.pilot import Pilot
from textual.widgets import Input, Label, ListView

from tests.conftest import ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.files_support import png, publish
from tests.integration.gateway_support import Replicas
from tests.tui_support import lasting_notices, noticed, noticed_part
from tiny_harness.core.sizes import FILE_BYTES
from tiny_harness.tui.app import HarnessApp
from tiny_harness.tui.path_prompt import PathPrompt
from tiny_harness.tui.session import Session

pytestmark = [pytest.mark.controlplane, pytest.mark.usefixtures(lasting_notices.__name__)]

Operator = Callable[..., OperatorProcess]
#: Where the test leaves what the screen showed, for docs/design/tui.md.
SCREEN: Final = Path(__file__).resolve().parents[2] / "docs" / "screens" / "tui-files.txt"
NOTES: Final = "Release 1.2\n- faster sends\n- files in, artifacts out\n"
REPORT: Final = ("The release, in brief. ", "Files go in; artifacts come out.")
ANSWER: Final = "The report and the chart are published."
MORE: Final = " And a line more."


CHART: Final = png()


async def until(pilot: Pilot[None], condition: Callable[[], Any], within: float = 60) -> None:
    async def drawn() -> Any:
        await pilot.pause(0.05)  # the app handles what it was sent, and redraws
        return condition()

    await eventually_async(drawn, within=within, what="the app to show it", interval=0)


@pytest.fixture
async def alice(gateway: Replicas) -> AsyncIterator[Session]:
    session = await Session.connect(gateway().url, participant="alice")
    yield session
    await session.close()


def said(app: HarnessApp) -> list[str]:
    return [f"{line.who}: {line.text}" for line in (app.view.lines if app.view else [])]


def listed(app: HarnessApp) -> list[str]:
    items = app.query_one("#artifacts", ListView).children
    return [str(item.query_one(Label).render()) for item in items]


def screen_text(app: HarnessApp) -> str:
    """The screen as plain text, each line's trailing blanks dropped."""
    width, height = app.size
    console = Console(width=width, height=height, file=io.StringIO(), record=True)
    console.print(app.screen._compositor.render_update(full=True))
    return "\n".join(line.rstrip() for line in console.export_text().splitlines()) + "\n"


async def path_prompt(pilot: Pilot[None], key: str, value: str | None = None) -> None:
    """``key``'s path prompt, answered with ``value`` (None: with what it proposes)."""
    app = pilot.app
    await pilot.press(key)
    await until(pilot, lambda: isinstance(app.screen, PathPrompt))
    if value is not None:
        app.screen.query_one(Input).value = value
    await pilot.press("enter")
    await until(pilot, lambda: not isinstance(app.screen, PathPrompt))


def user_content(body: dict[str, Any]) -> list[dict[str, Any]]:
    """The first user message's content in a recorded Responses request."""
    users = [i for i in body["input"] if isinstance(i, dict) and i.get("role") == "user"]
    content = users[0]["content"]
    assert isinstance(content, list)
    return content


async def test_files_reach_the_model_and_its_artifacts_are_listed_and_saved(
    alice: Session,
    operator: Operator,
    model_server: ModelServer,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    b64 = base64.b64encode(CHART).decode()
    await model_server.control.script(
        [
            publish("report", [{"text": REPORT[0]}], "c0", description="The release in brief"),
            publish("report", [{"text": REPORT[1]}], "c1", append=True),
            publish(
                "chart",
                [{"file": {"name": "chart.png", "media_type": "image/png", "bytes": b64}}],
                "c2",
            ),
            {"type": "text", "text": ANSWER},
            publish("report", [{"text": MORE}], "c3", append=True),
            {"type": "text", "text": "Added a line."},
        ]
    )
    operator()
    files = tmp_path / "files"
    files.mkdir()
    (files / "chart.png").write_bytes(CHART)
    (files / "notes.md").write_text(NOTES)
    (files / "logs.zip").write_bytes(b"PK\x05\x06" + bytes(18))
    (files / "huge.txt").write_bytes(b"x" * (FILE_BYTES + 1))
    out = tmp_path / "out"
    out.mkdir()
    monkeypatch.chdir(out)

    app = HarnessApp(alice)
    async with app.run_test(size=(140, 45)) as pilot:
        # Refused before anything is sent: a file too large for a message.
        await path_prompt(pilot, "f7", str(files / "huge.txt"))
        await until(pilot, lambda: noticed(app, noticed_part("Not attached: huge.txt is 192 KiB")))
        assert app.attached == []
        assert await alice.tasks() == []
        assert await model_server.control.requests() == []

        # A PNG, a text file and a zip, sent with the goal of a new task.
        await path_prompt(pilot, "f7", str(files / "chart.png"))
        await path_prompt(pilot, "f7", str(files / "notes.md"))
        await path_prompt(pilot, "f7", str(files / "logs.zip"))
        await until(pilot, lambda: noticed(app, noticed_part("Attached logs.zip, but files of")))
        assert [f.name for f in app.attached] == ["chart.png", "notes.md", "logs.zip"]
        app.query_one("#composer").focus()
        await pilot.press(*"Summarise these", "enter")
        await until(pilot, lambda: f"agent: {ANSWER}" in said(app))
        assert app.attached == []
        chart_line = f"[file chart.png (image/png, {len(CHART)} B)]"
        notes_line = f"[file notes.md (text/markdown, {len(NOTES)} B)]"
        zip_line = "[file logs.zip (application/zip, 22 B)]"
        assert f"you: Summarise these\n{chart_line}\n{notes_line}\n{zip_line}" in said(app)

        # The model was given both, in its wire format (Responses).
        first = (await model_server.control.requests())[0].body
        content = user_content(first)
        assert "Summarise these" in content[0]["text"]
        assert chart_line in content[0]["text"]
        assert {"type": "input_image", "image_url": f"data:image/png;base64,{b64}"}.items() <= (
            content[1].items()
        )
        assert content[2] == {
            "type": "input_text",
            "text": f"Contents of notes.md (text/markdown):\n{NOTES}",
        }
        assert (
            "[the file logs.zip (application/zip) is kept with the task but could not be "
            in (content[3]["text"])
        )

        # Both artifacts listed, the report's two chunks as one.
        report_size = len("".join(REPORT).encode())
        await until(
            pilot,
            lambda: (
                listed(app)
                == [
                    f"report · {report_size} bytes · The release in brief",
                    f"chart · {len(CHART)} bytes",
                ]
            ),
        )
        # The task's id is new on every run: the screen names it by a stand-in of its width.
        shown = app.view.task_id if app.view is not None else ""
        SCREEN.write_text(
            "The TUI with the files alice sent and the two artifacts the model published.\n"
            "Written by tests/integration/test_tui_files.py (Pilot, 140x45).\n\n"
            + screen_text(app).replace(shown, "<task id>".ljust(len(shown)))
        )

        # f8 saves the chosen one: the report (first), then the chart under its own name.
        await path_prompt(pilot, "f8")
        await until(pilot, lambda: noticed(app, noticed_part(f"to {out / 'report.txt'}")))
        assert (out / "report.txt").read_text() == "".join(REPORT)
        artifacts = app.query_one("#artifacts", ListView)
        artifacts.focus()
        await pilot.press("down")
        await until(pilot, lambda: artifacts.index == 1)
        await path_prompt(pilot, "f8")
        saved = f"Saved chart ({len(CHART)} bytes) to {out / 'chart.png'}"
        await until(pilot, lambda: noticed(app, saved))
        assert (out / "chart.png").read_bytes() == CHART

        # The next turn appends to the report while the message's own stream and the followed
        # one both carry the chunk: it shows once, and the save, told twice, overwrites.
        await pilot.press("tab")
        app.query_one("#composer").focus()
        await pilot.press(*"Add a line", "enter")
        await until(pilot, lambda: "agent: Added a line." in said(app))
        whole = "".join(REPORT) + MORE
        await until(
            pilot,
            lambda: listed(app)[0] == f"report · {len(whole)} bytes · The release in brief",
        )
        artifacts.focus()
        await pilot.press("up")
        await until(pilot, lambda: artifacts.index == 0)
        await pilot.press("f8")
        await until(pilot, lambda: isinstance(app.screen, PathPrompt))
        await pilot.press("enter")
        warning = app.screen.query_one("#warning", Label)
        await until(pilot, lambda: "exists: enter again to overwrite it" in str(warning.render()))
        await pilot.press("enter")
        await until(pilot, lambda: not isinstance(app.screen, PathPrompt))
        await until(pilot, lambda: (out / "report.txt").read_text() == whole)
