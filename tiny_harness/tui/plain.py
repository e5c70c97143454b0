"""The TUI's widgets for text it did not write: shown as written, never obeyed.

Almost everything on the TUI's screens is someone else's text: a participant's message and
name, a task's goal, a model's reply, a tool's name and arguments, an artifact's name, a
refusal quoting any of them. Textual reads a string handed to a widget as markup unless told
not to (``[bold]`` would be bold, ``[@click=...]`` an action), and passes ``ESC`` and the other
controls to the terminal as they are (``ESC [2J`` clears the real screen under the app). These
widgets take such text as plain text (``markup=False``) and show what a terminal would obey
as visible escapes (:func:`~tiny_harness.core.literal.literal`), so that no caller can forget
either; the app uses them, and :meth:`FollowingApp.notify` does the same for notices.
"""

from __future__ import annotations

from typing import Any, Self

from rich.console import RenderableType
from rich.text import Text
from textual.visual import VisualType
from textual.widgets import Label, RichLog, Static

from tiny_harness.core.literal import literal


def _plain(content: VisualType) -> VisualType:
    if isinstance(content, str):
        return literal(content)
    if isinstance(content, Text):
        shown = content.copy()
        shown.plain = literal(content.plain)
        return shown
    return content


class Plain(Static):
    """A :class:`Static` that shows its text literally: no markup, no control sequence."""

    def __init__(self, content: VisualType = "", **kwargs: Any) -> None:
        super().__init__(_plain(content), markup=False, **kwargs)

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        super().update(_plain(content), layout=layout)


class PlainLabel(Label):
    """A :class:`Label` that shows its text literally: no markup, no control sequence."""

    def __init__(self, content: VisualType = "", **kwargs: Any) -> None:
        super().__init__(_plain(content), markup=False, **kwargs)

    def update(self, content: VisualType = "", *, layout: bool = True) -> None:
        super().update(_plain(content), layout=layout)


class PlainLog(RichLog):
    """A :class:`RichLog` whose lines are shown literally: no markup, no control sequence."""

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(markup=False, **kwargs)

    def write(
        self,
        content: RenderableType | object,
        width: int | None = None,
        expand: bool = False,
        shrink: bool = True,
        scroll_end: bool | None = None,
        animate: bool = False,
    ) -> Self:
        if isinstance(content, str | Text):
            content = _plain(content)
        return super().write(content, width, expand, shrink, scroll_end, animate)


def plain_text(text: str) -> Text:
    """``text`` as a rich :class:`Text`, shown literally (for a tree node's label)."""
    return Text(literal(text))
