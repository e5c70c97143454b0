"""A participant's ``/command`` carried out: no model call, and no change of the task's state.

What a command may do is decided by a pure function (``core.commands.run``); its result is
intents, applied here in order: settings (``/model``, ``/effort``), the budget, then a spawned
sub-task (``/sub-task``), then the reply. A command runs between turns (row 8 of
:func:`~tiny_harness.core.decide.decide`) or beside a running turn
(:mod:`tiny_harness.operator.turn_guards`), when its writes are fenced by the turn's lease
and its reply goes into the turn's journal.
"""

from __future__ import annotations

from typing import Any, Final

from tiny_harness.core.commands.context import TaskSnapshot
from tiny_harness.core.commands.parse import CommandCall, parse_command
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.history import NoticeEntry, RecordEntry
from tiny_harness.core.reach import refuse_depth
from tiny_harness.core.reply_ids import command_reply_id
from tiny_harness.core.task import TEXT_MAX, Lifecycle, Participant, Role, TaskLink, TaskSpec
from tiny_harness.core.tracing import command_span, context_of
from tiny_harness.core.turn import TaskSettings
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.operator.host import child_name, create_child
from tiny_harness.operator.ports import Acting, CommandHost
from tiny_harness.operator.snapshot import Snapshot, ack_entry

#: The agent's own participant id, as the assignee of a participant's /sub-task.
AGENT_ID: Final = "tiny-harness"


class CommandStep:
    """Runs a task's commands (see the module docstring)."""

    def __init__(self, worker: Acting) -> None:
        self.w = worker

    async def run(
        self, snap: Snapshot, message: StoredMessage, host: CommandHost | None = None
    ) -> None:
        """Run a participant's command, beside a running turn when ``host`` is given."""
        spec = message.spec
        call = parse_command(spec, self.w.rt.commands.registry)
        if call is None:  # pragma: no cover - decide() only sends commands here
            return
        # A child of the request that sent it, so a /command over A2A is one trace.
        parent = context_of(message.annotations)
        with command_span(call.name, self.w.name, spec.sender, spec.message_id, parent):
            await self.apply(snap, message, call, host)

    async def apply(
        self,
        snap: Snapshot,
        message: StoredMessage,
        call: CommandCall,
        host: CommandHost | None,
    ) -> None:
        """Apply the command's intents in order: settings, budget, the spawn, the reply."""
        spec = message.spec
        result = await run_command(
            self.w.rt.commands.hooks,
            call,
            sender=spec.sender,
            role=snap.spec.role_of(spec.sender),
            snapshot=TaskSnapshot.of(
                self.w.name, snap.spec, snap.status.model_copy(update={"sub_tasks": snap.rows})
            ).model_copy(update={"budget": self.w.budgets.own(snap)}),
            catalog=self.w.rt.catalog,
        )
        metadata: dict[str, Any] = {"command": call.name}
        reply = result.reply
        if result.settings is not None:
            # Settings first: whoever sees the reply may rely on them being in force.
            await self.w.status.write(
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
            await self.w.status.write(
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
            await self.w.notices.append(snap, entries)
        # Once the reply is in the journal, it is also the status message, so whoever waits on
        # the task hears it (core/reply_ids.py). The state stays as it is.
        await self.w.status.write(
            {"message": reply[:TEXT_MAX], "messageId": reply_id}, leased=host is not None
        )
