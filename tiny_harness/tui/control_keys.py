"""The control keys: ``ctrl+d`` completes the open task, ``ctrl+c`` cancels it, ``f4`` goes
back to the task it was opened from (or its parent).

Complete and Cancel are refused with a notice before anything is sent when the view already
knows the answer (an ended task, a watcher: :meth:`~tiny_harness.tui.folded.FoldedTask.refusal`);
otherwise the gateway's answer is folded into the open task like any other event, and the tree
is read again for the state it ended in.
"""

from __future__ import annotations

import uuid

from textual import work

from tiny_harness.tui.following import FollowingApp
from tiny_harness.tui.session import SessionError


class ControlKeys(FollowingApp):
    """Complete, Cancel, and back to the parent."""

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
