"""The app's hold on its tasks: the tree of them, the one open, and following it.

Every key of the TUI acts on the open task as the view has folded it, and every answer the
gateway gives is folded into that same view before the screen is drawn again. This is that
common ground, which the keys' own parts (:mod:`.approval_keys`, :mod:`.file_keys`,
:mod:`.control_keys`) stand on: the session, the open task's view, the stream that follows it
(resumed after a break, said once when refused), the read that fetches what status updates do
not carry (the calls), and the tree, whose line for the open task is drawn from the view.

The screen never waits on the gateway: reads and streams run as Textual workers. How the open
task is drawn is :class:`~tiny_harness.tui.app.HarnessApp`'s (:meth:`FollowingApp.draw`).
"""

from __future__ import annotations

import contextlib
from typing import Any

from a2a.types import StreamResponse, Task
from rich.text import Text
from textual import on, work
from textual.app import App
from textual.css.query import NoMatches
from textual.notifications import SeverityLevel
from textual.widgets import ListView, Tree
from textual.widgets.tree import TreeNode

from tiny_harness.core.literal import literal
from tiny_harness.tui.plain import PlainLog, plain_text
from tiny_harness.tui.session import Reconnecting, Session, SessionError, Unfollowed
from tiny_harness.tui.task_tree import tree
from tiny_harness.tui.view import TaskView, listed_view


class FollowingApp(App[None]):
    """The tasks of one :class:`Session`, the open one followed."""

    def __init__(self, session: Session) -> None:
        super().__init__()
        self.session = session
        self.view: TaskView | None = None
        self.stack: list[str] = []
        self.reconnecting: str | None = None
        #: How many of the open task's lines the conversation shows.
        self.shown = 0
        #: The open task's state and sub-state when the tree was last refreshed for it.
        self.tree_header = ""
        #: The tree's node and the listing's copy of each task listed, by id: the open task's
        #: line is drawn again from its view whenever the top bar is.
        self.nodes: dict[str, tuple[TreeNode[Any], Task]] = {}

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

    def redraw_tree(self, view: TaskView) -> None:
        """The tree, as far as the open task moved it: read again when its header changed
        (its sub-tasks and their states may have moved with it), and its line drawn from the
        view the top bar is drawn from, now."""
        if view.header != self.tree_header:
            # Whichever stream moved it (the followed task's, or a send's).
            self.tree_header = view.header
            self.refresh_tasks()
        listed = self.nodes.get(view.task_id)
        if listed is not None:
            node, task = listed
            label = tree_label(listed_view(task, self.session.me, view))
            if str(node.label) != label.plain:
                node.set_label(label)

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

    def _take(self, task_id: str, event: StreamResponse, stream: str) -> None:
        """Fold ``event`` of ``stream`` into the open task's view, if ``task_id`` is still the
        one open, and draw it."""
        if self.view is not None and self.view.task_id == task_id:
            self._took(self.view, event, stream)
            self.render_view()

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
            self.draw()

    def draw(self) -> None:
        """Draw the open task (the app's screen says how)."""
        raise NotImplementedError

    # -- what the keys share -----------------------------------------------------------------

    def _chosen(self, where: str) -> str | None:
        """The call (or artifact) chosen in its list (highlighted), by id."""
        item = self.query_one(where, ListView).highlighted_child
        return str(item.name) if item is not None and item.name else None

    def _prompting(self) -> bool:
        """Whether a prompt or form is open (the keys of the main screen wait for it)."""
        return len(self.screen_stack) > 1


def tree_label(view: TaskView) -> Text:
    """A task's line in the tree: a question's or an approval's badge (bold, reversed) first."""
    label = plain_text(view.label())
    mark = view.badge()
    if mark is not None:
        label.stylize("bold reverse", 0, len(literal(mark)))
    return label
