"""What a pass does besides running a turn: the first status, the park of a new
conversation, the controls (complete, cancel) and commands, the input timeout, and the deletion
of an ended task.

The reconciler (:mod:`tiny_harness.operator.worker`) decides which of these a pass does, by a
row of :func:`~tiny_harness.core.decide.decide`; this module carries it out through the
worker's writers (:class:`~tiny_harness.operator.ports.Acting`), one short action each.
Whether a completion is accepted, what a command may do and who may end a task are decided by
pure functions (``core.completion.decide_completion``, ``core.commands.run``, ``core.speakers``).
"""

from __future__ import annotations

import logging
from typing import Any

from tiny_harness.core.commands.context import TaskSnapshot
from tiny_harness.core.commands.hooks import completion_override
from tiny_harness.core.commands.parse import CommandCall, parse_command
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.completion import CompletionVerdict, decide_completion
from tiny_harness.core.history import (
    NoticeEntry,
    RecordEntry,
)
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.reach import refuse_depth
from tiny_harness.core.remote_view import remote_ref_of
from tiny_harness.core.reply_ids import command_reply_id
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    TEXT_MAX,
    Lifecycle,
    Participant,
    Role,
    TaskLink,
    TaskSpec,
    local_parent_of,
)
from tiny_harness.core.tracing import (
    command_span,
    context_of,
)
from tiny_harness.core.turn import (
    TaskSettings,
)
from tiny_harness.kube.client import Obj
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.ownership import is_child_of
from tiny_harness.operator.feed import rv_of
from tiny_harness.operator.host import child_name, create_child
from tiny_harness.operator.initialise import created_lifecycle, initialise
from tiny_harness.operator.ports import Acting, CommandHost
from tiny_harness.operator.remote import RemoteCallError
from tiny_harness.operator.snapshot import (
    Snapshot,
    ack_entry,
    awaited_first_message,
    refusal_entries,
    rows_json,
)
from tiny_harness.operator.status_writes import (
    own_message_id,
)

log = logging.getLogger(__name__)

#: The agent's own participant id, as the assignee of a participant's /sub-task.
AGENT_ID = "tiny-harness"


class Controls:
    """The worker's actions outside a turn (see the module docstring)."""

    def __init__(self, worker: Acting) -> None:
        self.w = worker

    async def fail_past_deadline(self, snap: Snapshot) -> None:
        spent = (snap.obj.get("status") or {}).get("activeSeconds") or 0
        await self.w.fail_task(
            "DeadlineExceeded",
            f"the task has worked for {float(spent):.0f}s, its whole "
            f"activeDeadlineSeconds ({snap.spec.active_deadline_seconds}s); raise "
            "spec.activeDeadlineSeconds to give a new task more time",
        )

    async def give_up_turn(self, attempts: int) -> None:
        """The open turn was started ``attempts`` times and never finished: closed from its
        journal, and the task failed, so the model is not asked again for the same step."""
        await self.w.fail_task(
            "TurnNotFinished",
            f"the turn was started {attempts} times and never finished (the operator stopped, "
            "or lost the API server or its lease, each time during it); it is given up so that "
            "the model is not asked again for the same step. Send a message to try again.",
        )

    async def collect(self, obj: Obj) -> None:
        """Delete the ended task whose time to live has passed, as it was read (a task changed
        or re-created meanwhile is a conflict, and the pass starts again). Its turn records,
        sub-tasks and owned messages follow through the garbage collector; messages written
        without an owner reference are deleted here, or nothing would."""
        meta = obj["metadata"]
        uid = str(meta["uid"])
        orphans = [m for m in self.w.rt.cache.messages(*self.w.key) if uid not in m.owners]
        status = obj.get("status") or {}
        log.info(
            "task %s/%s: deleting it, %s after it ended (%s)",
            *self.w.key,
            "its time to live",
            status.get("state"),
        )
        await self.w.rt.event(
            obj,
            "Expired",
            f"deleted: ended ({status.get('state')}) at {status.get('completionTime')}, and "
            "its time to live after the end has passed",
        )
        await self.w.tasks.delete(self.w.name, uid=uid, resource_version=rv_of(obj))
        for message in orphans:
            await self.w.messages.delete(message.name)
        self.w.rt.metrics.task_state(self.w.namespace, self.w.name, None)

    async def timed_out_complete(self, snap: Snapshot, text: str, reason: str) -> str | None:
        """Complete the task for a timeout that says so; None when it completed, else why it
        could not (a sub-task holds it open), for the caller to end it another way."""
        decision = decide_completion(snap.extension())
        if not decision.complete:
            return f"; it could not complete: {decision.reason}"
        await self.w.write_status(
            {
                "state": TaskState.COMPLETED.value,
                "subState": None,
                "message": text,
                "messageId": own_message_id(),
            }
        )
        await self.w.rt.event(snap.obj, reason, text)
        return None

    async def input_timed_out(self, snap: Snapshot, *, complete: bool) -> None:
        """No participant answered within inputTimeoutSeconds: complete the task if asked to
        and no sub-task holds it open, otherwise fail it (InputTimeout)."""
        waited = snap.spec.input_timeout_seconds
        why = ""
        if complete:
            text = f"completed: no participant answered within {waited}s (onTimeout)"
            held = await self.timed_out_complete(snap, text, "InputTimeout")
            if held is None:
                return
            why = held
        await self.w.fail_task(
            "InputTimeout",
            f"no participant answered within inputTimeoutSeconds ({waited}s){why}; raise "
            "spec.inputTimeoutSeconds to wait longer",
        )

    async def idle_ended(self, snap: Snapshot, *, complete: bool) -> None:
        """The conversation waited its whole idle timeout for its next message: completed
        when asked to and nothing holds it open, else cancelled; either way it is ended, so
        its objects are collected after their time to live and etcd stays bounded."""
        waited = snap.spec.idle_timeout_seconds or self.w.rt.settings.idle_timeout_seconds
        said = f"no message for {waited}s (idle timeout)"
        if complete:
            held = await self.timed_out_complete(snap, f"completed: {said}", "IdleTimeout")
            if held is None:
                return
            said += held
        await self.cancel(snap, f"cancelled: {said}")

    async def initialise(self, obj: Obj) -> None:
        meta = obj["metadata"]
        result = initialise(
            obj["spec"],
            meta.get("generation"),
            created_lifecycle(meta.get("annotations")),
            name=self.w.name,
        )
        status = dict(result.status)
        if result.accepted:
            parent = self.parent_status(obj)
            catalog = self.w.rt.catalog
            model = parent.get("model") or catalog.default
            effort = parent.get("reasoningEffort") or catalog.default_effort
            status["model"] = model
            if effort:
                status["reasoningEffort"] = effort
        await self.w.write_status(status)
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
        await self.w.write_status(patch)
        if overdue:
            await self.w.rt.event(snap.obj, "FirstMessageMissing", patch["message"], warning=True)

    def ended_parent(self, obj: Obj) -> tuple[str, TaskState] | None:
        """The parent's name and state once it has ended (None while it lives, or when the
        task only names a parent it is not the child of)."""
        state = self.parent_status(obj).get("state")
        if not state or not TaskState(state).is_terminal:
            return None
        return str(local_parent_of(obj.get("spec"))), TaskState(state)

    def parent_status(self, obj: Obj) -> dict[str, Any]:
        parent = local_parent_of(obj.get("spec"))
        if not parent:
            return {}
        cache = self.w.rt.cache
        found = cache.stub(self.w.namespace, parent)
        if found is None or not is_child_of(obj, found):
            return {}  # a task that only names a parent inherits nothing from it
        whole = cache.task(self.w.namespace, parent)  # an ancestor: loaded with the task
        return dict((whole or found).get("status") or {})

    async def control(self, snap: Snapshot, message: StoredMessage) -> None:
        spec = message.spec
        sender = spec.sender
        if snap.status.runner is not None:
            # A turn is open but nobody runs it (a lease of ours from before a restart, or an
            # expired one): close it from its journal first, so nothing it did is lost.
            await self.w.close_open_turn(snap)
        if spec.control == "cancel":
            await self.cancel(snap, f"cancelled by {sender}")
            await self.w.append_notices(snap, (ack_entry(message),))
            return
        decision = decide_completion(
            snap.extension(),
            requested_by=sender,
            override=completion_override(self.w.rt.commands.hooks, sender),
        )
        refused = (
            await self.end_remote(snap, "complete")
            if decision.complete and snap.spec.agent
            else None
        )
        if refused is not None:
            # The remote agent refused the completion (its task holds a sub-task open, say).
            decision = decision.model_copy(
                update={
                    "verdict": CompletionVerdict.WAIT_FOR_SUBTASKS,
                    "reason": f"completion requested by {sender} refused: {refused}",
                }
            )
        if decision.complete:
            await self.w.write_status(
                {
                    "state": TaskState.COMPLETED.value,
                    "subState": None,
                    "runner": None,
                    "message": f"completed by {sender}",
                    "messageId": own_message_id(),
                    "subTasks": rows_json(snap.rows),
                    "approvals": None,  # nothing waits on an ended task
                }
            )
            await self.w.append_notices(snap, (ack_entry(message),))
            await self.w.rt.event(snap.obj, "Completed", f"completed by {sender}")
            return
        await self.w.append_notices(snap, refusal_entries(message, decision.reason))
        await self.w.write_status(
            {
                "state": TaskState.INPUT_REQUIRED.value,
                "subState": SubState.AWAITING_NEXT_MESSAGE.value,
                "runner": None,
                "message": decision.reason,
                # The refusal notice in the history says the same: one message, one id.
                "messageId": refusal_entries(message, decision.reason)[1].id,
                "subTasks": rows_json(snap.rows),
            }
        )

    async def end_remote(self, snap: Snapshot, control: str | None) -> str | None:
        """Carry a participant's cancel or completion of a task on a remote agent to the
        agent's task first; None when it went through (or there is nothing to end), else what
        stands in the way. A cancel that cannot reach the agent still cancels the task here
        (the note says so); a completion the agent refuses is refused here too."""
        assert self.w.rt.remotes is not None
        name = str(snap.spec.agent)
        ref = remote_ref_of(e for r in snap.records for e in r.entries)
        try:
            if control == "cancel":
                why = await self.w.rt.remotes.cancel(self.w.namespace, name, ref)
                if why is not None:
                    await self.w.rt.event(snap.obj, "RemoteCancelFailed", why, warning=True)
                    return f"the remote task could not be cancelled: {why}"
                return None
            return await self.w.rt.remotes.complete(self.w.namespace, name, ref)
        except RemoteCallError as exc:
            if control == "cancel":
                return f"the remote task could not be cancelled: {exc}"
            return str(exc)

    async def command(
        self, snap: Snapshot, message: StoredMessage, host: CommandHost | None = None
    ) -> None:
        """Run a participant's command: no model call and no state change. Its intents are
        applied here, in order: settings, then the spawn, then the reply."""
        spec = message.spec
        call = parse_command(spec, self.w.rt.commands.registry)
        if call is None:  # pragma: no cover - decide() only sends commands here
            return
        # A child of the request that sent it, so a /command over A2A is one trace.
        parent = context_of(message.annotations)
        with command_span(call.name, self.w.name, spec.sender, spec.message_id, parent):
            await self.apply_command(snap, message, call, host)

    async def apply_command(
        self,
        snap: Snapshot,
        message: StoredMessage,
        call: CommandCall,
        host: CommandHost | None,
    ) -> None:
        spec = message.spec
        result = await run_command(
            self.w.rt.commands.hooks,
            call,
            sender=spec.sender,
            role=snap.spec.role_of(spec.sender),
            snapshot=TaskSnapshot.of(
                self.w.name, snap.spec, snap.status.model_copy(update={"sub_tasks": snap.rows})
            ).model_copy(update={"budget": self.w.budget_of(snap)}),
            catalog=self.w.rt.catalog,
        )
        metadata: dict[str, Any] = {"command": call.name}
        reply = result.reply
        if result.settings is not None:
            # Settings first: whoever sees the reply may rely on them being in force.
            await self.w.write_status(
                {
                    "model": result.settings.model,
                    "reasoningEffort": result.settings.reasoning_effort,
                },
                leased=host is not None,
            )
            if host is not None:
                host.task_settings = result.settings
        if result.budget is not None:
            # Before the reply, as settings are: whoever reads the reply may rely on it.
            await self.w.write_status(
                {"budget": result.budget.model_dump(mode="json", by_alias=True)},
                leased=host is not None,
            )
        too_deep = (
            refuse_depth(
                self.w.name,
                self.w.rt.cache.depth(self.w.namespace, self.w.name),
                self.w.rt.settings.max_sub_task_depth,
            )
            if result.spawn is not None
            else None
        )
        if too_deep is not None:
            reply = f"refused: {too_deep}; no sub-task was created: go on in this task"
        elif result.spawn is not None:
            child = await create_child(
                self.w,
                snap.obj,
                child_name(self.w.name, f"command/{spec.message_id}"),
                TaskSpec(
                    goal=result.spawn.goal,
                    participants=(
                        Participant(id=spec.sender, role=Role.REPORTER),
                        Participant(id=AGENT_ID, role=Role.ASSIGNEE),
                    ),
                    parent=TaskLink(task_id=self.w.name),
                ),
                Lifecycle.CONVERSATION,
                TaskSettings(
                    model=snap.status.model, reasoning_effort=snap.status.reasoning_effort
                ),
            )
            reply = f"{reply}\nCreated sub-task {child}"
            metadata["task_ref"] = child
        reply_id = command_reply_id(spec.message_id)
        entries: tuple[RecordEntry, ...] = (
            ack_entry(message),
            NoticeEntry(id=reply_id, text=reply, metadata=metadata),
        )
        if host is not None:
            await host.record_notices(entries)
        else:
            await self.w.append_notices(snap, entries)
        # Once the reply is in the journal, it is also the status message, so whoever waits on
        # the task hears it (core/reply_ids.py). The state stays as it is.
        await self.w.write_status(
            {"message": reply[:TEXT_MAX], "messageId": reply_id}, leased=host is not None
        )

    async def cancel(self, snap: Snapshot, text: str) -> None:
        """End the task in CANCELED (its remote task first). Its children see it has ended and
        cancel themselves (row 4a of decide): level-triggered, so no crash between this write
        and theirs can leave one at work."""
        remote = await self.end_remote(snap, "cancel") if snap.spec.agent else None
        await self.w.write_status(
            {
                "state": TaskState.CANCELED.value,
                "subState": None,
                "runner": None,
                "message": text + (f" ({remote})" if remote else ""),
                "messageId": own_message_id(),
                "approvals": None,  # nothing waits on an ended task
            }
        )
        await self.w.rt.event(snap.obj, "Cancelled", text)

    async def end_with_parent(self, snap: Snapshot, parent: str, state: TaskState) -> None:
        """Row 4a: the parent has ended; so does this task."""
        if snap.status.runner is not None:
            await self.w.close_open_turn(snap)
        ended = state.value.removeprefix("TASK_STATE_").lower()
        await self.cancel(snap, f"cancelled: its parent task {parent} has ended ({ended})")
