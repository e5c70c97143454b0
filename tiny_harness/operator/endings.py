"""How a task ends outside a turn: a participant's complete or cancel (a control message), a
timeout (input, idle), the working deadline, a turn given up, and the end of its parent.

The reconciler (:mod:`tiny_harness.operator.worker`) decides which of these a pass does, by a
row of :func:`~tiny_harness.core.decide.decide`; this module carries it out through the
worker's writers (:class:`~tiny_harness.operator.ports.Acting`), one short action each.
Whether a completion is accepted and who may end a task are decided by pure functions
(``core.completion.decide_completion``, ``core.speakers``). A task on a remote agent has its remote
task ended first (:mod:`tiny_harness.operator.remote`).
"""

from __future__ import annotations

from tiny_harness.core.commands.hooks import completion_override
from tiny_harness.core.completion import CompletionVerdict, decide_completion
from tiny_harness.core.remote_view import remote_ref_of
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.operator.ports import Acting
from tiny_harness.operator.remote_calls import RemoteCallError
from tiny_harness.operator.snapshot import Snapshot, ack_entry, refusal_entries, rows_json
from tiny_harness.operator.status_writes import own_message_id


class Endings:
    """The worker's ways to end its task outside a turn (see the module docstring)."""

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

    async def timed_out_complete(self, snap: Snapshot, text: str, reason: str) -> str | None:
        """Complete the task for a timeout that says so; None when it completed, else why it
        could not (a sub-task holds it open), for the caller to end it another way."""
        decision = decide_completion(snap.extension())
        if not decision.complete:
            return f"; it could not complete: {decision.reason}"
        await self.w.status.write(
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

    async def control(self, snap: Snapshot, message: StoredMessage) -> None:
        """A participant's complete or cancel (row 7 of decide)."""
        spec = message.spec
        sender = spec.sender
        if snap.status.runner is not None:
            # A turn is open but nobody runs it (a lease of ours from before a restart, or an
            # expired one): close it from its journal first, so nothing it did is lost.
            await self.w.fences.close_open_turn(snap)
        if spec.control == "cancel":
            await self.cancel(snap, f"cancelled by {sender}")
            await self.w.notices.append(snap, (ack_entry(message),))
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
            await self.w.status.write(
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
            await self.w.notices.append(snap, (ack_entry(message),))
            await self.w.rt.event(snap.obj, "Completed", f"completed by {sender}")
            return
        await self.w.notices.append(snap, refusal_entries(message, decision.reason))
        await self.w.status.write(
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

    async def cancel(self, snap: Snapshot, text: str) -> None:
        """End the task in CANCELED (its remote task first). Its children see it has ended and
        cancel themselves (row 4a of decide): level-triggered, so no crash between this write
        and theirs can leave one at work."""
        remote = await self.end_remote(snap, "cancel") if snap.spec.agent else None
        await self.w.status.write(
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
            await self.w.fences.close_open_turn(snap)
        ended = state.value.removeprefix("TASK_STATE_").lower()
        await self.cancel(snap, f"cancelled: its parent task {parent} has ended ({ended})")
