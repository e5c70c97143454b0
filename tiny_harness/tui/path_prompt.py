"""The prompt for a path: a file to attach, or where to save an artifact.

A save never writes over an existing file unasked: the prompt says the file exists and takes
a second enter on the same path as the consent to overwrite it (:attr:`Chosen.overwrite`);
anything else typed asks again. What the path is then used for is the caller's.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from tiny_harness.tui.plain import PlainLabel


@dataclass(frozen=True)
class Chosen:
    """A path as the prompt took it (``~`` expanded, relative to the current directory), and
    whether an existing file there may be overwritten."""

    path: Path
    overwrite: bool = False


class PathPrompt(ModalScreen[Chosen | None]):
    """Ask for a path under ``title``; dismissed with it, or None (escape). With ``saving``, a
    path where a file exists is taken only when enter is pressed on it a second time."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "abandon", "Back")]
    DEFAULT_CSS = """
    PathPrompt { align: center middle; }
    PathPrompt > Vertical { width: 100; height: auto; border: thick $primary; padding: 1 2; }
    #warning { color: $warning; }
    """

    def __init__(self, title: str, value: str = "", *, saving: bool = False) -> None:
        super().__init__()
        self.title_text = title
        self.start = value
        self.saving = saving
        #: The path the prompt said exists: enter on it again overwrites it.
        self.warned: Path | None = None

    def compose(self) -> ComposeResult:
        with Vertical():
            yield PlainLabel(self.title_text)
            yield Input(value=self.start, placeholder="A path (~ and relative paths work)")
            yield PlainLabel("", id="warning")
            yield Label("enter: take it · escape: back, nothing done", markup=False)

    def on_mount(self) -> None:
        self.query_one(Input).focus()

    @on(Input.Changed)
    def _changed(self) -> None:
        if self.warned is not None:
            self.warned = None
            self.query_one("#warning", PlainLabel).update("")

    @on(Input.Submitted)
    def _taken(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text:
            return
        path = Path(text).expanduser().absolute()
        if self.saving and path.exists():
            if path.is_dir():
                self.query_one("#warning", PlainLabel).update(f"{path} is a directory: name a file")
                return
            if self.warned != path:
                self.warned = path
                self.query_one("#warning", PlainLabel).update(
                    f"{path} exists: enter again to overwrite it, or change the path"
                )
                return
            self.dismiss(Chosen(path, overwrite=True))
            return
        self.dismiss(Chosen(path))

    def action_abandon(self) -> None:
        self.dismiss(None)
