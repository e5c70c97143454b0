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
(:mod:`.artifacts`); ``f8`` saves the chosen one to a file, after a prompt for the path that
proposes the artifact's own file name, and never over an existing file unless the prompt was
told so twice.

Keys (each in the footer): ``ctrl+d`` Complete, ``ctrl+c`` Cancel (both refused with a notice
on an ended task or for a watcher), ``f5`` Approve and ``f6`` Reject (while a call waits;
refused with the operator's reason, before anything is sent, for a call you may not decide),
``f7`` Attach, ``f9`` Drop file (while a file is attached), ``f8`` Save artifact
(while the open task has one), ``enter`` on a sub-task row opens it, ``f4`` goes back to the
parent, ``ctrl+n`` starts a new task, ``ctrl+t`` switches task (the tree), ``ctrl+q`` quits.
"""

from __future__ import annotations

import contextlib
import uuid
from pathlib import Path
from typing import Any, ClassVar

from a2a.types import Message, Part, Role, StreamResponse, Task
from rich.text import Text
from textual import on, work
from textual.app import App, ComposeResult
from textual.binding import Binding, BindingType
from textual.containers import Horizontal, Vertical
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.suggester import SuggestFromList
from textual.widgets import Footer, Input, ListItem, ListView, Tree
from textual.widgets.tree import TreeNode

from tiny_harness.core.approval import Verdict
from tiny_harness.core.literal import literal
from tiny_harness.core.sizes import kib
from tiny_harness.tui.approvals import Call, refusal_to, summary, unseen
from tiny_harness.tui.artifacts import content_of as artifact_bytes
from tiny_harness.tui.artifacts import row_text as artifact_row
from tiny_harness.tui.artifacts import save_name, written
from tiny_harness.tui.attach import KEPT, Attached, AttachError, attach
from tiny_harness.tui.attach import shown as attached_line
from tiny_harness.tui.decision import Asked, DecisionPrompt
from tiny_harness.tui.new_task import NewTask
from tiny_harness.tui.path_prompt import Chosen, PathPrompt
from tiny_harness.tui.plain import Plain, PlainLabel, PlainLog, plain_text
from tiny_harness.tui.session import (
    Reconnecting,
    Session,
    SessionError,
    Unfollowed,
    decision_message,
)
from tiny_harness.tui.view import COMPOSER_PLACEHOLDER, TaskView, listed_view, row_text, tree


class HarnessApp(App[None]):
    """The TUI over one :class:`Session`."""

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

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.view: TaskView | None = None
        self.stack: list[str] = []
        self.reconnecting: str | None = None
        #: The open task's state and sub-state when the tree was last refreshed for it.
        self.tree_header = ""
        #: The tree's node and the listing's copy of each task listed, by id: the open task's
        #: line is drawn again from its view whenever the top bar is.
        self.nodes: dict[str, tuple[TreeNode[Any], Task]] = {}
        #: Whether a call of the open task waits (Approve and Reject are in the footer).
        self.deciding_shown = False
        #: The calls listed, as drawn: the list is drawn again only when they change.
        self.calls_shown: list[tuple[str, str]] = []
        #: The artifacts listed, as drawn (by id and line).
        self.artifacts_shown: list[tuple[str, str]] = []
        #: The files attached to the next message, in the order attached.
        self.attached: list[Attached] = []

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """A notice, shown literally: a notice quotes refusals and replies, so its text is
        never read as markup and its control characters are shown escaped."""
        super().notify(
            literal(message), title=literal(title), severity=severity, timeout=timeout, markup=False
        )

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

    # -- the task list -----------------------------------------------------------------------

    @work(exclusive=True, group="tasks")
    async def refresh_tasks(self) -> None:
        try:
            tasks = await self.session.tasks()
        except SessionError as exc:
            self.notify(str(exc), severity="error")
            return
        try:
            widget = self.query_one("#tasks", Tree)
        except NoMatches:
            return  # the app is closing
        widget.clear()
        self.nodes = {}
        nodes: dict[int, Any] = {-1: widget.root}
        me = self.session.me

        def for_me(task: Task) -> bool:
            return any(c.mine for c in listed_view(task, me, self.view).calls())

        for depth, task in tree(tasks, first=for_me):
            parent = nodes.get(depth - 1, widget.root)
            view = listed_view(task, me, self.view)
            nodes[depth] = parent.add_leaf(tree_label(view), data=task.id)
            self.nodes[task.id] = (nodes[depth], task)
        widget.root.expand_all()

    @on(Tree.NodeSelected, "#tasks")
    def _picked(self, event: Tree.NodeSelected[Any]) -> None:
        if event.node.data:
            self.open(str(event.node.data))

    # -- one task ----------------------------------------------------------------------------

    def open(self, task_id: str, *, push: bool = True) -> None:
        if push and self.view is not None and self.view.task_id != task_id:
            self.stack.append(self.view.task_id)
        self.view = TaskView(task_id, self.session.me)
        self.reconnecting = None
        self.query_one("#conversation", PlainLog).clear()
        self.shown = 0
        self.follow(task_id)
        self.render_view()

    @work(exclusive=True, group="follow")
    async def follow(self, task_id: str) -> None:
        """Follow the open task until it ends, another is opened, or the gateway refuses."""
        view = self.view
        if view is None:
            return
        async for item in self.session.follow(task_id, since=lambda: view.version):
            if self.view is not view:
                return
            if isinstance(item, Reconnecting):
                view.ended("follow")
                self.reconnecting = f"reconnecting… ({item.reason})"
            elif isinstance(item, Unfollowed):
                self.reconnecting = f"not following: {item.reason}"
                self.notify(f"Not following {task_id}: {item.reason}", severity="warning")
            else:
                self.reconnecting = None
                self._took(view, item, "follow")
            if view.state.is_terminal and isinstance(item, Reconnecting):
                self.reconnecting = None  # it ended meanwhile (a send's stream said so)
            self.render_view()
            if view.state.is_terminal:
                return

    def _took(self, view: TaskView, event: StreamResponse, stream: str) -> None:
        """Fold ``event`` of ``stream`` into ``view``; after a status update, read the task
        again when its calls may have moved (they ride on no status update)."""
        view.take(event, stream)
        if event.HasField("status_update") and view.wants_read():
            self.reread(view.task_id)

    @work(exclusive=True, group="reread")
    async def reread(self, task_id: str) -> None:
        """Read the open task again (the latest ask wins: an earlier read still running is
        cancelled), for what its status updates do not carry."""
        try:
            task = await self.session.task(task_id)
        except SessionError:
            return  # the follow stream says when the gateway is gone; the next update reads
        if self.view is not None and self.view.task_id == task_id:
            self.view.take_task(task)
            self.render_view()

    def _tick(self) -> None:
        if self.view is not None and self.view.working_since is not None:
            self.render_view()

    def render_view(self) -> None:
        # When the app is closing, a stream's last event has nowhere to go.
        with contextlib.suppress(NoMatches):
            self._render_view()

    def _render_view(self) -> None:
        view = self.view
        top = self.query_one("#topbar", Plain)
        self.query_one("#composer", Input).placeholder = literal(
            view.placeholder() if view is not None else COMPOSER_PLACEHOLDER
        )
        if view is None:
            top.update("no task open: type a goal to start one")
            return
        if view.header != self.tree_header:
            # Whichever stream moved it (the followed task's, or a send's), the tree is read
            # again: its sub-tasks and their states may have moved with it.
            self.tree_header = view.header
            self.refresh_tasks()
        listed = self.nodes.get(view.task_id)
        if listed is not None:
            # The open task's line says what the top bar says, drawn from the same view now.
            node, task = listed
            label = tree_label(listed_view(task, self.session.me, view))
            if str(node.label) != label.plain:
                node.set_label(label)
        bar = f"{view.task_id} · {view.header}"
        calls = view.calls()
        waiting = summary(calls)
        if waiting:
            bar += f" · {waiting}"
        progress = view.progress()
        if progress:
            bar += f" · {progress}"
        if self.reconnecting:
            bar += f" · {self.reconnecting}"
        top.update(bar)
        question = view.question()
        if question is not None:
            details = [f"{question.title}: {question.text}", f"  {question.guidance()}"]
        else:
            details = [f"Goal: {view.goal}"] if view.goal else []
        details += [f"  ✓ {c}" for c in view.criteria]
        if view.participants:
            details.append(
                "Participants: " + ", ".join(f"{p.id} ({p.role.value})" for p in view.participants)
            )
        details += view.plan_lines
        used = view.usage_line()
        if used:
            details.append(used)
        if view.parent:
            details.append(f"← Parent: {view.parent} (f4)")
        self.query_one("#details", Plain).update("\n".join(details))
        self._render_calls(calls)
        self._render_artifacts(view)
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

    def _render_calls(self, calls: tuple[Call, ...]) -> None:
        """The calls that wait for approval, the viewer's first, the chosen one kept."""
        title = self.query_one("#approvals-title", Plain)
        items = self.query_one("#approvals", ListView)
        waiting = [c for c in calls if not c.decided]
        if any(c.mine for c in waiting):
            heading = "Calls waiting for approval: f5 approve, f6 reject (tab, then ↑ ↓ to choose)"
        elif waiting:
            heading = "Calls waiting for someone else's approval"
        else:
            heading = "Calls decided: the next turn runs what was approved" if calls else ""
        title.update(heading)
        title.display = items.display = bool(calls)
        wanted = [(c.call_id, "\n".join(c.lines())) for c in calls]
        if self.calls_shown != wanted:
            self.calls_shown = wanted
            chosen = self._chosen()
            items.clear()
            for call_id, text in wanted:
                items.append(ListItem(PlainLabel(text), name=call_id))
            ids = [call_id for call_id, _ in wanted]
            # The same call stays chosen while it waits; else the first (the viewer's first).
            still = chosen is not None and chosen in ids and not calls[ids.index(chosen)].decided
            items.index = ids.index(chosen) if still and chosen else (0 if ids else None)
        if bool(waiting) != self.deciding_shown:
            self.deciding_shown = bool(waiting)
            self.refresh_bindings()

    def _chosen(self, where: str = "#approvals") -> str | None:
        """The call (or artifact) chosen in its list (highlighted), by id."""
        item = self.query_one(where, ListView).highlighted_child
        return str(item.name) if item is not None and item.name else None

    def _render_artifacts(self, view: TaskView) -> None:
        """The task's artifacts, each whole, the chosen one kept chosen."""
        title = self.query_one("#artifacts-title", Plain)
        items = self.query_one("#artifacts", ListView)
        wanted = [(a.artifact_id, artifact_row(a)) for a in view.artifacts]
        title.display = items.display = bool(wanted)
        if self.artifacts_shown == wanted:
            return
        had = bool(self.artifacts_shown)
        self.artifacts_shown = wanted
        count = len(wanted)
        title.update(
            f"{count} artifact{'' if count == 1 else 's'}: f8 saves the chosen one "
            "(tab, then ↑ ↓ to choose)"
        )
        chosen = self._chosen("#artifacts")
        items.clear()
        for artifact_id, text in wanted:
            items.append(ListItem(PlainLabel(text), name=artifact_id))
        ids = [artifact_id for artifact_id, _ in wanted]
        items.index = ids.index(chosen) if chosen in ids else (0 if ids else None)
        if had != bool(wanted):
            self.refresh_bindings()

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
        self.say(text, files=self._handed())

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
                self._render_attached()

    # -- files in, artifacts out -------------------------------------------------------------

    def _prompting(self) -> bool:
        """Whether a prompt or form is open (the keys of the main screen wait for it)."""
        return len(self.screen_stack) > 1

    def _handed(self) -> tuple[Attached, ...]:
        """The files attached, handed to the message about to be sent (attached no more: a
        second message sent meanwhile does not carry them again)."""
        files = tuple(self.attached)
        if files:
            self.attached = []
            self._render_attached()
        return files

    def _render_attached(self) -> None:
        bar = self.query_one("#attached", Plain)
        bar.update(attached_line(self.attached))
        bar.display = bool(self.attached)
        self.refresh_bindings()

    def action_attach(self) -> None:
        """Ask for a path, and attach the file there when the gateway would take it."""
        if self._prompting():
            return

        def chosen(picked: Chosen | None) -> None:
            if picked is None:
                return
            try:
                file = attach(picked.path, self.attached)
            except AttachError as exc:
                self.notify(f"Not attached: {exc}", severity="warning")
                return
            self.attached.append(file)
            self._render_attached()
            if file.unread:
                self.notify(f"Attached {file.name}, but {file.unread}: {KEPT}", severity="warning")

        self.push_screen(PathPrompt("Attach a file to your next message"), chosen)

    def action_drop_attachment(self) -> None:
        if self.attached and not self._prompting():
            dropped = self.attached.pop()
            self._render_attached()
            self.notify(f"Dropped {dropped.name}", severity="information")

    def action_save_artifact(self) -> None:
        """Ask where, and save the chosen artifact there (never over a file unasked)."""
        view = self.view
        if view is None or not view.artifacts:
            self.notify("this task has no artifacts yet", severity="warning")
            return
        if self._prompting():
            return
        chosen = self._chosen("#artifacts")
        artifact = next((a for a in view.artifacts if a.artifact_id == chosen), view.artifacts[0])

        def save(picked: Chosen | None) -> None:
            if picked is None:
                return
            data = artifact_bytes(artifact)
            try:
                path = written(picked.path, data, overwrite=picked.overwrite)
            except FileExistsError:
                self.notify(f"Not saved: {picked.path} exists", severity="warning")
            except OSError as exc:
                self.notify(f"Not saved: {exc.strerror or exc}", severity="error")
            else:
                self.notify(f"Saved {artifact.name} ({kib(len(data))}) to {path}")

        title = f"Save artifact {artifact.name} to (a relative path is in {Path.cwd()})"
        self.push_screen(PathPrompt(title, save_name(artifact), saving=True), save)

    # -- controls ----------------------------------------------------------------------------

    def action_complete(self) -> None:
        if self._refused():
            return
        assert self.view is not None
        self.completing(self.view.task_id)

    @work(group="send")
    async def completing(self, task_id: str) -> None:
        try:
            stream = str(uuid.uuid4())
            async for event in self.session.complete(task_id):
                self._take(task_id, event, stream)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
        self.refresh_tasks()

    def action_cancel_task(self) -> None:
        if self._refused():
            return
        assert self.view is not None
        self.cancelling(self.view.task_id)

    @work(group="send")
    async def cancelling(self, task_id: str) -> None:
        try:
            task = await self.session.cancel(task_id)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
            return
        if self.view is not None and self.view.task_id == task_id:
            self.view.take_task(task)
            self.render_view()
        self.refresh_tasks()

    def _take(self, task_id: str, event: StreamResponse, stream: str) -> None:
        if self.view is not None and self.view.task_id == task_id:
            self._took(self.view, event, stream)
            self.render_view()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        if action == "decide":
            return self.deciding_shown  # in the footer only while a call waits
        if action == "drop_attachment":
            return bool(self.attached)
        if action == "save_artifact":
            return self.view is not None and bool(self.view.artifacts)
        return True

    def action_decide(self, verdict: Verdict) -> None:
        """Approve or reject the chosen call, after the prompt; refused with the operator's
        reason, before anything is sent, when the viewer may not decide it."""
        view = self.view
        if view is None:
            self.notify("no task is open", severity="warning")
            return
        if isinstance(self.screen, DecisionPrompt):
            return
        calls = view.calls()
        if not any(not c.decided for c in calls):
            self.notify("no call waits for a decision on this task", severity="warning")
            return
        chosen = self._chosen() or calls[0].call_id
        refusal = refusal_to(calls, chosen)
        if refusal is not None:
            self.notify(refusal, severity="warning")
            return
        call = next(c for c in calls if c.call_id == chosen)
        blind = unseen(call.pending, verdict, view.task_id)
        if blind is not None:
            self.notify(blind, severity="warning")
            return

        def asked(decision: Asked | None) -> None:
            if decision is not None:
                self.deciding(view.task_id, call.call_id, call.pending.park, verdict, decision)

        self.push_screen(DecisionPrompt(call, verdict), asked)

    @work(group="send")
    async def deciding(
        self, task_id: str, call_id: str, park: str, verdict: Verdict, asked: Asked
    ) -> None:
        """Send the decision, and say the operator's answer (or its refusal) as a notice too."""
        message_id = str(uuid.uuid4())
        # Shown once the gateway has taken it (its first event), or just before the answer to
        # it when the followed stream brings that first.
        sent = decision_message(
            task_id, call_id, verdict, park=park, reason=asked.reason, message_id=message_id
        )
        if self.view is not None and self.view.task_id == task_id:
            self.view.sending(sent)
        try:
            async for event in self.session.decide(
                task_id,
                call_id,
                verdict,
                park=park,
                reason=asked.reason,
                arguments=asked.arguments,
                message_id=message_id,
            ):
                if self.view is not None and self.view.task_id == task_id:
                    self.view.take_message(sent)
                self._take(task_id, event, message_id)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
            return
        answer = self.view.answer_to(message_id) if self.view is not None else None
        if answer is not None:
            refused = answer.who == "harness" and answer.text.startswith("refused")
            self.notify(answer.text, severity="warning" if refused else "information")

    def _refused(self) -> bool:
        if self.view is None:
            self.notify("no task is open", severity="warning")
            return True
        reason = self.view.refusal()
        if reason is not None:
            self.notify(reason, severity="warning")
            return True
        return False

    def action_parent(self) -> None:
        if self.view is None:
            return
        target = self.stack.pop() if self.stack else self.view.parent
        if target is None:
            self.notify("this task has no parent", severity="information")
            return
        self.open(target, push=False)

    def action_new_task(self) -> None:
        def made(envelope: dict[str, Any] | None) -> None:
            if envelope is not None:
                self.say(str(envelope["goal"]), envelope=envelope, files=self._handed())

        self.push_screen(NewTask(self.session.me), made)

    def action_switch_task(self) -> None:
        self.refresh_tasks()
        self.query_one("#tasks", Tree).focus()


def tree_label(view: TaskView) -> Text:
    """A task's line in the tree: a question's or an approval's badge (bold, reversed) first."""
    label = plain_text(view.label())
    mark = view.badge()
    if mark is not None:
        label.stylize("bold reverse", 0, len(literal(mark)))
    return label
