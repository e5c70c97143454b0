"""The new-task form: a goal, acceptance criteria, and who else takes part.

What the form gives back is the task envelope a first A2A message carries (the gateway checks
it, and says what is wrong if anything is): the one who creates the task is its assignee
unless they name themselves otherwise.
"""

from __future__ import annotations

from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label

from tiny_harness.tui.plain import PlainLabel

ROLES = ("assignee", "reporter", "watcher", "admin")


class FormError(ValueError):
    """What to fix in the form, as a sentence."""


def envelope(goal: str, criteria: str, participants: str, me: str) -> dict[str, Any]:
    """The task envelope: ``criteria`` separated by ``;``, ``participants`` as
    ``name:role`` separated by commas (``me`` is the assignee unless named)."""
    goal = goal.strip()
    if not goal:
        raise FormError("a task needs a goal")
    people: dict[str, str] = {}
    for item in filter(None, (p.strip() for p in participants.split(","))):
        name, _, role = item.partition(":")
        role = role.strip() or "watcher"
        if role not in ROLES:
            raise FormError(f"{role!r} is not a role; roles: {', '.join(ROLES)}")
        people[name.strip()] = role
    people.setdefault(me, "assignee")
    out: dict[str, Any] = {
        "goal": goal,
        "participants": [{"id": name, "role": role} for name, role in people.items()],
    }
    listed = [c.strip() for c in criteria.split(";") if c.strip()]
    if listed:
        out["acceptance_criteria"] = listed
    return out


class NewTask(ModalScreen[dict[str, Any] | None]):
    """The form; dismissed with the envelope, or None when abandoned (escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "abandon", "Back")]
    DEFAULT_CSS = """
    NewTask { align: center middle; }
    NewTask > Vertical { width: 80; height: auto; border: thick $primary; padding: 1 2; }
    #error { color: $error; }
    """

    def __init__(self, me: str) -> None:
        super().__init__()
        self.me = me

    def compose(self) -> ComposeResult:
        with Vertical():
            yield Label("New task")
            yield Input(placeholder="Goal", id="goal")
            yield Input(placeholder="Acceptance criteria, separated by ;", id="criteria")
            yield Input(placeholder="Participants as name:role, separated by commas", id="people")
            yield PlainLabel("", id="error")
            yield Button("Create", variant="primary", id="create")

    def on_mount(self) -> None:
        self.query_one("#goal", Input).focus()

    @on(Button.Pressed, "#create")
    @on(Input.Submitted)
    def _create(self) -> None:
        try:
            made = envelope(
                self.query_one("#goal", Input).value,
                self.query_one("#criteria", Input).value,
                self.query_one("#people", Input).value,
                self.me,
            )
        except FormError as exc:
            self.query_one("#error", PlainLabel).update(str(exc))
            return
        self.dismiss(made)

    def action_abandon(self) -> None:
        self.dismiss(None)
