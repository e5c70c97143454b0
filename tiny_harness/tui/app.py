"""The terminal UI: a participant's tasks, one task's conversation, and a composer.

Everything goes through a :class:`~tiny_harness.tui.session.Session` (A2A to a gateway), and
everything shown is folded by :mod:`tiny_harness.tui.view`. The screen never waits on the
gateway: reads and streams run as Textual workers, and a followed task's stream that ends
shows "reconnecting…" in the top bar until the next one, which resumes where the view is, is
back; a refusal to follow it (the participant's streams at the gateway's limit) is said there
once, and nothing retries it.

A participant task (a question an agent put to a person) is marked in the tree ("question
for you", or whom it asks), its question heads the details with what to do about it, and the
composer asks for the answer.

A task awaiting approval is marked in the tree ("approval for you" first, or "awaits
approval"), and its calls are listed above the conversation, the ones you may decide first:
``f5`` approves the chosen call and ``f6`` rejects it, each after a prompt for an optional
reason (and, when the call's policy allows it, the arguments to run it with). The operator's
answer, or its refusal, is the harness's line in the conversation and a notice.

Files go with the next message: ``f7`` asks for a path and attaches the file when the gateway
would take it (:mod:`.attach`; else a notice says why, and nothing is attached; a notice says
so too of a file no model can be given, kept with the task and named to the model), the files
attached are named above the composer, ``f9`` drops the last, and they are sent with what is
typed next, and named in the conversation as the harness names them. The open task's
artifacts are listed under the conversation, each whole, as its stream and reads give them
(:mod:`.artifact_list`); ``f8`` saves the chosen one to a file, after a prompt for the path that
proposes the artifact's own file name, and never over an existing file unless the prompt was
told so twice.

The keys' parts are their own modules, on the common ground of :mod:`.following` (the
session, the open task's view, its stream): :mod:`.approval_keys`, :mod:`.file_keys`,
:mod:`.control_keys`. Their bindings are all declared here, in the footer's order.

Keys (each in the footer): ``ctrl+d`` Complete, ``ctrl+c`` Cancel (both refused with a notice
on an ended task or for a watcher), ``f5`` Approve and ``f6`` Reject (while a call waits;
refused with the operator's reason, before anything is sent, for a call you may not decide),
``f7`` Attach, ``f9`` Drop file (while a file is attached), ``f8`` Save artifact
(while the open task has one), ``enter`` on a sub-task row opens it, ``f4`` goes back to the
parent, ``ctrl+n`` starts a new task, ``ctrl+t`` switches task (the tree), ``ctrl+q`` quits.
"""

from __future__ import annotations

import uuid
from typing import Any, ClassVar

from a2a.types import Message, Part, Role
from textual import on, work
from textual.app import ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Input, ListItem, ListView, Tree

from tiny_harness.core.literal import literal
from tiny_harness.tui.approval_keys import ApprovalKeys
from tiny_harness.tui.attach import Attached
from tiny_harness.tui.control_keys import ControlKeys
from tiny_harness.tui.file_keys import FileKeys
from tiny_harness.tui.folded import row_text
from tiny_harness.tui.new_task import NewTask
from tiny_harness.tui.plain import Plain, PlainLabel, PlainLog
from tiny_harness.tui.question import COMPOSER_PLACEHOLDER
from tiny_harness.tui.session import SessionError


class HarnessApp(ApprovalKeys, FileKeys, ControlKeys):
    """The TUI over one :class:`~tiny_harness.tui.session.Session`."""

    TITLE = "tiny-harness"
    CSS = """
    #topbar { height: 1; background: $primary; color: $text; padding: 0 1; }
    #tasks { width: 44; border-right: solid $primary; }
    #details { height: auto; max-height: 12; padding: 0 1; color: $text-muted; }
    #conversation { height: 1fr; padding: 0 1; }
    #subtasks { height: auto; max-height: 6; }
    #approvals-title { display: none; height: auto; padding: 0 1; color: $warning; }
    #approvals { display: none; height: auto; max-height: 16; border-bottom: solid $warning; }
    #hint { height: auto; color: $text-muted; padding: 0 1; }
    #artifacts-title { display: none; height: auto; padding: 0 1; color: $success; }
    #artifacts { display: none; height: auto; max-height: 6; border-bottom: solid $success; }
    #attached { display: none; height: auto; padding: 0 1; color: $accent; }
    """
    BINDINGS: ClassVar[list[BindingType]] = [
        Binding("ctrl+d", "complete", "Complete", priority=True),
        Binding("ctrl+c", "cancel_task", "Cancel", priority=True),
        Binding("f5", "decide('approve')", "Approve", priority=True),
        Binding("f6", "decide('reject')", "Reject", priority=True),
        Binding("f7", "attach", "Attach", priority=True),
        Binding("f9", "drop_attachment", "Drop file", priority=True),
        Binding("f8", "save_artifact", "Save artifact", priority=True),
        Binding("f4", "parent", "Back to parent"),
        Binding("ctrl+n", "new_task", "New task"),
        Binding("ctrl+t", "switch_task", "Switch task"),
        Binding("ctrl+q", "quit", "Quit", priority=True),
    ]

    # -- layout ------------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Plain("no task open: type a goal to start one", id="topbar")
        with Horizontal():
            yield Tree("tasks", id="tasks")
            with Vertical():
                yield Plain("", id="details")
                yield Plain("", id="approvals-title")
                yield ListView(id="approvals")
                yield PlainLog(id="conversation", wrap=True)
                yield Plain("", id="artifacts-title")
                yield ListView(id="artifacts")
                yield ListView(id="subtasks")
                yield Plain("", id="hint")
                yield Plain("", id="attached")
                yield Input(
                    placeholder=COMPOSER_PLACEHOLDER,
                    id="composer",
                    suggester=SuggestFromList(
                        [f"/{c.name}" for c in self.session.commands], case_sensitive=True
                    ),
                )
        yield Footer()

    async def on_mount(self) -> None:
        self.query_one("#tasks", Tree).show_root = False
        # The top bar's "working for ..." counts up while a turn runs.
        self.set_interval(1.0, self._tick)
        self.query_one("#composer", Input).focus()
        self.refresh_tasks()

    # -- the open task -----------------------------------------------------------------------

    def draw(self) -> None:
        view = self.view
        top = self.query_one("#topbar", Plain)
        self.query_one("#composer", Input).placeholder = literal(
            view.placeholder() if view is not None else COMPOSER_PLACEHOLDER
        )
        if view is None:
            top.update("no task open: type a goal to start one")
            return
        self.redraw_tree(view)
        bar = view.top_bar()
        if self.reconnecting:
            bar += f" · {self.reconnecting}"
        top.update(bar)
        self.query_one("#details", Plain).update("\n".join(view.details()))
        self.draw_calls(view.calls())
        self.draw_artifacts(view)
        log = self.query_one("#conversation", PlainLog)
        for line in view.lines[self.shown :]:
            log.write(f"{line.who}: {line.text}")
        self.shown = len(view.lines)
        rows = self.query_one("#subtasks", ListView)
        wanted = [row_text(r) for r in view.sub_tasks]
        if [str(i.name) for i in rows.children] != [r.task_id for r in view.sub_tasks]:
            rows.clear()
            for row, text in zip(view.sub_tasks, wanted, strict=True):
                rows.append(ListItem(PlainLabel(text), name=row.task_id))
            rows.index = 0 if view.sub_tasks else None
        else:
            for item, text in zip(rows.children, wanted, strict=True):
                item.query_one(PlainLabel).update(text)

    @on(ListView.Selected, "#subtasks")
    def _sub_task(self, event: ListView.Selected) -> None:
        if event.item.name:
            self.open(event.item.name)

    # -- the composer ------------------------------------------------------------------------

    @on(Input.Changed, "#composer")
    def _hint(self, event: Input.Changed) -> None:
        text = event.value
        hint = ""
        if text.startswith("/") and " " not in text:
            matching = [c for c in self.session.commands if f"/{c.name}".startswith(text)]
            hint = "\n".join(f"/{c.name}  {c.description}" for c in matching[:6])
        self.query_one("#hint", Plain).update(hint)

    @on(Input.Submitted, "#composer")
    def _submit(self, event: Input.Submitted) -> None:
        text = event.value.strip()
        if not text and not self.attached:
            return
        if not text and (self.view is None or self.view.state.is_terminal):
            # A new task needs its goal in words; the files wait for it.
            self.notify("Say what the task is: the files go with it", severity="warning")
            return
        event.input.value = ""
        self.query_one("#hint", Plain).update("")
        self.say(text, files=self.handed())

    @work(group="send")
    async def say(
        self,
        text: str,
        envelope: dict[str, Any] | None = None,
        files: tuple[Attached, ...] = (),
    ) -> None:
        """Send ``text`` and ``files`` to the open task; with none open (or an ended one), or
        with an ``envelope``, start a task with them. A refusal attaches the files again, to
        drop one and send again."""
        view = self.view
        parts = [f.part() for f in files]
        try:
            if envelope is not None or view is None or view.state.is_terminal:
                if envelope is None:
                    envelope = {
                        "goal": text,
                        "participants": [{"id": self.session.me, "role": "assignee"}],
                    }
                async for event in self.session.send(text, envelope=envelope, files=parts):
                    if event.HasField("task"):
                        self.open(event.task.id, push=False)
                        self.refresh_tasks()
                        return
                return
            # What you said shows once the gateway has taken it (its first event comes after
            # the write), so a message it refuses outright never appears as sent.
            sent = Message(
                message_id=str(uuid.uuid4()),
                role=Role.ROLE_USER,
                parts=[*([Part(text=text)] if text else []), *parts],
            )
            async for event in self.session.send(
                text, task_id=view.task_id, message_id=sent.message_id, files=parts
            ):
                if self.view is view:
                    view.take_message(sent)
                    view.take(event, sent.message_id)
                    self.render_view()
            view.ended(sent.message_id)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
            if files:
                self.attached[:0] = files
                self.draw_attached()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            return self.deciding_shown  # in the footer only while a call waits
        if action == "drop_attachment":
            return bool(self.attached)
        if action == "save_artifact":
            return self.view is not None and bool(self.view.artifacts)
        return True

    def action_new_task(self) -> None:
        def made(envelope: dict[str, Any] | None) -> None:
            if envelope is not None:
                self.say(str(envelope["goal"]), envelope=envelope, files=self.handed())

        self.push_screen(NewTask(self.session.me), made)

    def action_switch_task(self) -> None:
        self.refresh_tasks()
        self.query_one("#tasks", Tree).focus()
