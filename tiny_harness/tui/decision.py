"""The prompt that approves or rejects one call: the call as listed, an optional reason, and,
for an approval its policy lets edit, the arguments to run it with.

What it gives back is what the decision carries (the reason, and the edited arguments or None
to run the call as asked); the session sends it as the control envelope
(:meth:`~tiny_harness.tui.session.Session.decide`).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from textual import on
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Input, Label

from tiny_harness.core.approval import Verdict
from tiny_harness.tui.approvals import (
    Call,
    PromptError,
    edited_arguments,
    shown_json,
    verb,
    whole_lines,
)
from tiny_harness.tui.plain import Plain, PlainLabel


@dataclass(frozen=True)
class Asked:
    """A decision as the prompt took it."""

    reason: str
    #: The arguments an approval runs the call with; None: as the model asked.
    arguments: dict[str, Any] | None = None


class DecisionPrompt(ModalScreen[Asked | None]):
    """Approve or reject ``call``; dismissed with the decision, or None (escape)."""

    BINDINGS: ClassVar[list[BindingType]] = [Binding("escape", "abandon", "Back")]
    DEFAULT_CSS = """
    DecisionPrompt { align: center middle; }
    DecisionPrompt > Vertical { width: 100; height: auto; border: thick $primary; padding: 1 2; }
    #call { color: $text-muted; }
    #whole { height: auto; max-height: 16; }
    #error { color: $error; }
    """

    def __init__(self, call: Call, verdict: Verdict) -> None:
        super().__init__()
        self.call = call
        self.verdict = verdict
        self.editable = verdict == "approve" and call.pending.requirement.allow_edit

    def compose(self) -> ComposeResult:
        pending = self.call.pending
        with Vertical():
            yield PlainLabel(f"{verb(self.verdict)} {pending.tool} (call {pending.call_id})?")
            with VerticalScroll(id="whole"):
                # The arguments whole, however long: the call is decided as it will run.
                yield Plain("\n".join(whole_lines(pending)), id="arguments-whole")
            yield Plain("\n".join(self.call.details()), id="call")
            yield Input(placeholder="Reason (optional)", id="reason")
            if self.editable:
                yield Input(
                    value=shown_json(pending),
                    placeholder="The arguments as a JSON object",
                    id="arguments",
                )
            yield PlainLabel("", id="error")
            yield Label(
                f"enter: {verb(self.verdict).lower()}"
                + (" (with the arguments as they are in the field)" if self.editable else "")
                + " · escape: back, nothing sent",
                markup=False,
            )

    def on_mount(self) -> None:
        self.query_one("#reason", Input).focus()

    @on(Input.Submitted)
    def _decided(self) -> None:
        reason = self.query_one("#reason", Input).value.strip()
        arguments = None
        if self.editable:
            try:
                arguments = edited_arguments(
                    self.query_one("#arguments", Input).value, self.call.pending
                )
            except PromptError as exc:
                self.query_one("#error", PlainLabel).update(str(exc))
                return
        self.dismiss(Asked(reason, arguments))

    def action_abandon(self) -> None:
        self.dismiss(None)
