"""A snapshot of the TUI with two calls waiting for alice's approval, so a change of layout is
seen (``pytest --snapshot-update`` after a deliberate one); the stand-in session is
test_approval_keys.py's."""

from __future__ import annotations

from typing import Any

from textual.pilot import Pilot
from textual.widgets import Input

from tests.unit.tui.test_approval_keys import Gateway, opened
from tiny_harness.tui.app import HarnessApp


def test_calls_waiting_for_your_approval(snap_compare: Any) -> None:
    async def open_trip(pilot: Pilot[None]) -> None:
        assert isinstance(pilot.app, HarnessApp)
        pilot.app.query_one("#composer", Input).cursor_blink = False
        await opened(pilot)
        await pilot.pause()

    app = HarnessApp(Gateway())  # type: ignore[arg-type]
    assert snap_compare(app, terminal_size=(120, 36), run_before=open_trip)
