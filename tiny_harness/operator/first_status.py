"""A task's start outside any turn: its first status, its brief, and the park of a new
conversation until its first message comes.

Whether a spec is accepted, and the status it starts with, are decided by a pure function
(:func:`~tiny_harness.operator.initialise.initialise`); this module writes what it decided, with
the model and effort a child takes from its parent (:mod:`tiny_harness.operator.parentage`).
Rows 1 and 11 of :func:`~tiny_harness.core.decide.decide` send a pass here.
"""

from __future__ import annotations

from typing import Any

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import TEXT_MAX, Lifecycle, TaskSpec
from tiny_harness.kube.client import Obj
from tiny_harness.operator.initialise import created_lifecycle, initialise
from tiny_harness.operator.parentage import parent_status
from tiny_harness.operator.ports import TaskIO
from tiny_harness.operator.snapshot import Snapshot, awaited_first_message
from tiny_harness.operator.status_writes import own_message_id


class FirstStatus:
    """One task's start (see the module docstring)."""

    def __init__(self, task: TaskIO) -> None:
        self.w = task

    async def write(self, obj: Obj) -> None:
        """Row 1: accept (or reject) the spec in the first status; a delegated task gets its
        brief as its first message."""
        meta = obj["metadata"]
        result = initialise(
            obj["spec"],
            meta.get("generation"),
            created_lifecycle(meta.get("annotations")),
            name=self.w.name,
        )
        status = dict(result.status)
        if result.accepted:
            parent = parent_status(self.w.rt.cache, self.w.namespace, obj)
            catalog = self.w.rt.catalog
            model = parent.get("model") or catalog.default
            effort = parent.get("reasoningEffort") or catalog.default_effort
            status["model"] = model
            if effort:
                status["reasoningEffort"] = effort
        await self.w.status.write(status)
        await self.w.rt.event(obj, result.reason, result.message, warning=not result.accepted)
        spec = TaskSpec.model_validate(obj["spec"]) if result.accepted else None
        remote_parent = spec is not None and spec.parent is not None and bool(spec.parent.agent)
        if spec is not None and status.get("lifecycle") == Lifecycle.DELEGATED.value:
            if remote_parent:
                return  # delegated over A2A: the first message, already here, is the brief
            # A delegated task's first turn starts from its brief, as a spawned child's does.
            brief = spec.goal + (f"\n\n{spec.description}" if spec.description else "")
            sender = f"task:{spec.parent.task_id}" if spec.parent else "system"
            await self.w.messages.send(
                MessageSpec(
                    task=self.w.name,
                    message_id="brief",
                    sender=sender,
                    parts=(MessagePart(text=brief),),
                ),
                task=obj,
            )

    async def park(self, snap: Snapshot, *, overdue: bool) -> None:
        """Row 11: the new conversation waits for its first message, without a model call;
        ``overdue``: the one its creator announced did not come within the bound, and the
        status text (and a warning Event) says so, so whoever looks knows to send one."""
        patch: dict[str, Any] = {
            "state": TaskState.INPUT_REQUIRED.value,
            "subState": SubState.AWAITING_NEXT_MESSAGE.value,
        }
        if overdue:
            seconds = self.w.rt.settings.first_message_seconds
            text = (
                f"the first message this task was created with "
                f"({awaited_first_message(snap) or 'announced'}) did not come within "
                f"{seconds:g}s; send a message to start it"
            )
            patch |= {"message": text[:TEXT_MAX], "messageId": own_message_id()}
        await self.w.status.write(patch)
        if overdue:
            await self.w.rt.event(snap.obj, "FirstMessageMissing", patch["message"], warning=True)
