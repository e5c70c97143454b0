"""A snapshot of the TUI with a file sent, its artifact listed and another file attached, so a
change of layout is seen (``pytest --snapshot-update`` after a deliberate one); the stand-in
session is test_file_keys.py's."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from tests.unit.tui.artifact_events import PNG
from tests.unit.tui.test_file_keys import Desk, answer, listed, opened, until
from tiny_harness.tui.app import HarnessApp


def test_an_artifact_listed_and_a_file_attached(snap_compare: Any, tmp_path: Path) -> None:
    (tmp_path / "chart.png").write_bytes(PNG)
    (tmp_path / "notes.md").write_text("Release 1.2\n")

    async def attach_send_attach(pilot: Pilot[None]) -> None:
        app = await opened(pilot)
        app.query_one("#composer", Input).cursor_blink = False
        await answer(pilot, "f7", str(tmp_path / "chart.png"))
        app.query_one("#composer", Input).focus()
        await pilot.press(*"Look", "enter")
        await until(pilot, lambda: listed(app) != [])
        await answer(pilot, "f7", str(tmp_path / "notes.md"))
        app.query_one("#composer", Input).focus()
        await pilot.pause()

    app = HarnessApp(Desk())  # type: ignore[arg-type]
    assert snap_compare(app, terminal_size=(120, 36), run_before=attach_send_attach)
