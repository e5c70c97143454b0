"""One task's worker: brings a ``HarnessTask`` to where its inbox, children and status say it
should be, one step at a time, and runs its turns.

The worker is level-triggered. It never trusts what it remembers: each pass re-reads the task,
its turn records, its inbox and its children, and decides from those alone. So a restarted
operator, a second replica, or a missed event all converge on the same result.

Every status write carries the ``resourceVersion`` the worker last read; a 409 means someone
else wrote meanwhile, and the pass starts again on fresh state. The runner lease in the status
(see ``docs/design/messages-and-history.md``) is what keeps two replicas from running one turn.
"""

from __future__ import annotations

import asyncio
import contextlib
import datetime as dt
import logging
import time
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from pydantic import ValidationError

from tiny_harness.core.commands.context import TaskSnapshot
from tiny_harness.core.commands.parse import CommandCall, parse_command
from tiny_harness.core.commands.run import run_command
from tiny_harness.core.errors import TaskNotFoundError
from tiny_harness.core.history import (
    AckEntry,
    NoticeEntry,
    RecordEntry,
    acknowledged,
    apply_delta,
    replay_history,
)
from tiny_harness.core.hooks import completion_override
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.loop import decide_completion
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    ENDING_ROLES,
    Lifecycle,
    Participant,
    Role,
    Runner,
    SubTaskRow,
    TaskExtension,
    TaskLink,
    TaskSpec,
    TaskStatus,
)
from tiny_harness.core.turn import JournalEntry, TaskSettings, TurnInput
from tiny_harness.kube.client import ConflictError, HarnessTasks, Obj
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.kube.names import PARENT_LABEL
from tiny_harness.operator.children import pending_news, rows_of
from tiny_harness.operator.host import OperatorTurnHost, child_name, create_child
from tiny_harness.operator.initialise import initialise

if TYPE_CHECKING:
    from tiny_harness.operator.runtime import Runtime

log = logging.getLogger(__name__)

#: The agent's own participant id, as the assignee of a participant's /sub-task.
AGENT_ID = "tiny-harness"


def now_rfc3339() -> str:
    return dt.datetime.now(dt.UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def _age_seconds(stamp: str) -> float:
    try:
        then = dt.datetime.strptime(stamp, "%Y-%m-%dT%H:%M:%S.%fZ").replace(tzinfo=dt.UTC)
    except ValueError:
        return float("inf")
    return (dt.datetime.now(dt.UTC) - then).total_seconds()


class LeaseLostError(Exception):
    """Another replica holds this task's runner lease now; this one must stop."""


class Snapshot:
    """Everything one pass read about the task."""

    def __init__(
        self,
        obj: Obj,
        records: list[TurnRecord],
        messages: list[StoredMessage],
        children: list[Obj],
    ) -> None:
        self.obj = obj
        self.spec = TaskSpec.model_validate(obj["spec"])
        self.status = TaskStatus.model_validate(obj.get("status") or {})
        self.records = records
        self.entries: list[RecordEntry] = [e for r in records for e in r.entries]
        self.acked = acknowledged(self.entries)
        self.pending = [m for m in messages if m.spec.message_id not in self.acked]
        self.children = children
        self.rows = rows_of(children, self.acked)

    @property
    def rv(self) -> str:
        return str(self.obj["metadata"]["resourceVersion"])

    @property
    def name(self) -> str:
        return str(self.obj["metadata"]["name"])

    def extension(self, rows: tuple[SubTaskRow, ...] | None = None) -> TaskExtension:
        status = self.status.model_copy(update={"sub_tasks": self.rows if rows is None else rows})
        return TaskExtension.of(self.spec, status)


class TaskWorker:
    """Works one task until nothing is left to do, then exits; a poke starts it again."""

    def __init__(self, runtime: Runtime, namespace: str, name: str) -> None:
        self.rt = runtime
        self.namespace = namespace
        self.name = name
        self.tasks = HarnessTasks(runtime.api, namespace)
        self.messages = HarnessMessages(runtime.api, namespace)
        self.records = TurnRecords(runtime.api, namespace)
        self.poked = asyncio.Event()
        self.lock = asyncio.Lock()
        self.rv: str | None = None
        # What each poke since the pass began was about: a version of the task (None: a
        # message, a child). A poke for a version this replica wrote itself is not news; its
        # watch event can arrive before the write's own response, so the check waits until
        # the pass or turn is over.
        self.pokes: list[str | None] = []

    def poke(self, resource_version: str | None) -> None:
        self.pokes.append(resource_version)
        self.poked.set()

    def news(self) -> bool:
        """Did anything but this replica's own writes poke the task since the pass began?"""
        return any(
            rv is None or not self.rt.wrote(self.namespace, self.name, rv) for rv in self.pokes
        )

    # -- the pass loop ---------------------------------------------------------------------

    async def run(self) -> None:
        while True:
            self.poked.clear()
            self.pokes.clear()
            try:
                again = await self.reconcile()
            except ConflictError:
                again = True
            except LeaseLostError:
                log.info("task %s/%s: another replica runs it now", self.namespace, self.name)
                return
            except asyncio.CancelledError:
                raise
            except Exception:
                self.rt.metrics.errors.labels(where="worker").inc()
                log.exception("task %s/%s: pass failed; retrying", self.namespace, self.name)
                await asyncio.sleep(1.0)
                again = True
            if not again and not self.news():
                return

    async def get(self) -> Obj | None:
        """The task, or None once it is gone (or going)."""
        try:
            obj = await self.tasks.get(self.name)
        except TaskNotFoundError:
            return None
        if obj["metadata"].get("deletionTimestamp"):
            return None
        self.rv = obj["metadata"]["resourceVersion"]
        return obj

    async def read(self, obj: Obj | None = None) -> Snapshot | None:
        obj = obj or await self.get()
        if obj is None:
            return None
        records, messages, children = await asyncio.gather(
            self.records.for_task(self.name),
            self.messages.for_task(self.name),
            self.children_of(),
        )
        return Snapshot(obj, records, messages, children)

    async def children_of(self, *, force: bool = False) -> list[Obj]:
        if not force and not self.rt.has_children(self.namespace, self.name):
            return []
        children = await self.tasks.list(label_selector=f"{PARENT_LABEL}={label_value(self.name)}")
        return [c for c in children if (c["spec"].get("parent") or {}).get("taskId") == self.name]

    async def reconcile(self) -> bool:
        """One pass. True when it changed something and another pass should follow."""
        obj = await self.get()
        if obj is None:
            self.rt.metrics.task_state(self.namespace, self.name, None)
            return False
        if not (obj.get("status") or {}).get("state"):
            await self.initialise(obj)
            return True
        if TaskState(obj["status"]["state"]).is_terminal and obj["status"]["state"] in (
            TaskState.REJECTED.value,
        ):
            return False  # a rejected spec may not even parse; there is nothing to do
        try:
            snap = await self.read(obj)
        except ValidationError as exc:
            log.warning("task %s/%s: unreadable (%s)", self.namespace, self.name, exc)
            return False
        assert snap is not None
        status = snap.status
        self.rt.metrics.task_state(self.namespace, self.name, status.state.value)
        if status.state.is_terminal:
            if snap.pending:
                await self.refuse_terminal(snap)
            return False
        runner = status.runner
        if runner is not None and runner.holder != self.rt.identity:
            remaining = self.rt.settings.lease_seconds - _age_seconds(runner.renew_time)
            if remaining > 0:
                self.rt.wake_later(self.namespace, self.name, remaining + 0.1)
                return False
        controls = [m for m in snap.pending if m.spec.control is not None]
        if controls:
            await self.control(snap, controls[0])
            return True
        registry = self.rt.commands.registry
        for m in snap.pending:
            call = parse_command(m.spec, registry)
            if call is not None:
                await self.command(snap, m, call)
                return True
            break  # an ordinary message comes first: the turn takes it, commands wait
        ordinary = [m for m in snap.pending if m.spec.control is None]
        news = pending_news(snap.children, snap.acked)
        open_turn = runner is not None
        lifecycle = status.lifecycle or snap.spec.default_lifecycle
        if not open_turn and not ordinary and not news:
            if status.state is TaskState.SUBMITTED and lifecycle is Lifecycle.CONVERSATION:
                # A conversation started with no message parks without a model call.
                await self.write_status(
                    {
                        "state": TaskState.INPUT_REQUIRED.value,
                        "subState": SubState.AWAITING_NEXT_MESSAGE.value,
                    },
                )
                return True
            if status.state is not TaskState.SUBMITTED:
                if snap.rows != status.sub_tasks:
                    await self.write_status({"subTasks": _rows_json(snap.rows)})
                return False
        return await self.turn(snap, resume=open_turn)

    # -- status writes ---------------------------------------------------------------------

    async def write_status(self, patch: Mapping[str, Any], *, leased: bool = False) -> Obj:
        """Merge-patch the status on the version last read.

        A 409 means someone wrote meanwhile. Outside a turn it is a :class:`ConflictError` and
        the pass starts again on fresh state. During a turn (``leased``) the patch is applied
        again on the fresh version as long as this replica still holds the runner lease: its
        values are absolute, so applying it twice is the same as once.
        """
        async with self.lock:
            while True:
                try:
                    obj = await self.tasks.patch_status(self.name, patch, resource_version=self.rv)
                except ConflictError:
                    if not leased:
                        raise
                    fresh = await self.tasks.get(self.name)
                    runner = (fresh.get("status") or {}).get("runner") or {}
                    if runner.get("holder") != self.rt.identity:
                        raise LeaseLostError from None
                    self.rv = fresh["metadata"]["resourceVersion"]
                    continue
                self.rv = obj["metadata"]["resourceVersion"]
                self.rt.written(self.namespace, self.name, self.rv)
                return obj

    async def initialise(self, obj: Obj) -> None:
        result = initialise(obj["spec"], obj["metadata"].get("generation"))
        status = dict(result.status)
        if result.accepted:
            parent = await self.parent_settings(obj)
            catalog = self.rt.catalog
            model = parent.get("model") or catalog.default
            effort = parent.get("reasoningEffort") or catalog.default_effort
            status["model"] = model
            if effort:
                status["reasoningEffort"] = effort
        self.rv = obj["metadata"]["resourceVersion"]
        await self.write_status(status)
        await self.rt.event(obj, result.reason, result.message, warning=not result.accepted)
        if result.accepted and status.get("lifecycle") == Lifecycle.DELEGATED.value:
            # A delegated task's first turn starts from its brief, as a spawned child's does.
            spec = TaskSpec.model_validate(obj["spec"])
            brief = spec.goal + (f"\n\n{spec.description}" if spec.description else "")
            sender = f"task:{spec.parent.task_id}" if spec.parent else "system"
            await self.messages.send(
                MessageSpec(
                    task=self.name,
                    message_id="brief",
                    sender=sender,
                    parts=(MessagePart(text=brief),),
                ),
                task_uid=obj["metadata"]["uid"],
            )

    async def parent_settings(self, obj: Obj) -> dict[str, Any]:
        parent = ((obj.get("spec") or {}).get("parent") or {}).get("taskId")
        if not parent:
            return {}
        try:
            return dict((await self.tasks.get(parent)).get("status") or {})
        except Exception:
            return {}

    # -- records -----------------------------------------------------------------------------

    async def append_record(
        self, snap: Snapshot, turn: int, entries: tuple[RecordEntry, ...]
    ) -> None:
        last = next((r for r in reversed(snap.records) if r.turn == turn), None)
        await self.records.append(
            self.name, turn, entries, last=last, owner_uid=snap.obj["metadata"]["uid"]
        )

    async def refuse_terminal(self, snap: Snapshot) -> None:
        """Messages that reach an ended task are recorded as refused, with the reason."""
        state = snap.status.state.value
        entries: list[RecordEntry] = []
        for m in snap.pending:
            entries.append(_ack(m))
            if m.spec.control is None:
                entries.append(
                    NoticeEntry(
                        id=f"refused-{m.spec.message_id}",
                        text=f"the task is in a terminal state ({state})",
                        metadata={"refused": m.spec.message_id},
                    )
                )
        await self.append_record(snap, snap.status.turn, tuple(entries))

    # -- control: complete and cancel ----------------------------------------------------

    async def control(self, snap: Snapshot, message: StoredMessage) -> None:
        spec = message.spec
        sender = spec.sender
        role = snap.spec.role_of(sender)
        parent = snap.spec.parent.task_id if snap.spec.parent else None
        from_parent = sender == f"task:{parent}" if parent else False
        ack = _ack(message)
        if not from_parent and role not in ENDING_ROLES:
            why = (
                f"refused: {sender} is a watcher and may not {spec.control} the task"
                if role is Role.WATCHER
                else f"refused: {sender} is not a participant of this task"
            )
            await self.append_record(
                snap,
                snap.status.turn,
                (
                    ack,
                    NoticeEntry(
                        id=f"refused-{spec.message_id}",
                        text=why,
                        metadata={"refused": spec.message_id},
                    ),
                ),
            )
            return
        if spec.control == "cancel":
            await self.write_status(
                {
                    "state": TaskState.CANCELED.value,
                    "subState": None,
                    "runner": None,
                    "message": f"cancelled by {sender}",
                }
            )
            await self.cancel_children(snap)
            await self.append_record(snap, snap.status.turn, (ack,))
            await self.rt.event(snap.obj, "Cancelled", f"cancelled by {sender}")
            return
        decision = decide_completion(
            snap.extension(),
            requested_by=sender,
            override=completion_override(self.rt.commands.runner, sender),
        )
        if decision.complete:
            await self.write_status(
                {
                    "state": TaskState.COMPLETED.value,
                    "subState": None,
                    "runner": None,
                    "message": f"completed by {sender}",
                    "subTasks": _rows_json(snap.rows),
                }
            )
            await self.append_record(snap, snap.status.turn, (ack,))
            await self.rt.event(snap.obj, "Completed", f"completed by {sender}")
            return
        await self.append_record(
            snap,
            snap.status.turn,
            (
                ack,
                NoticeEntry(
                    id=f"refused-{spec.message_id}",
                    text=decision.reason,
                    metadata={"refused": spec.message_id},
                ),
            ),
        )
        await self.write_status(
            {
                "state": TaskState.INPUT_REQUIRED.value,
                "subState": SubState.AWAITING_NEXT_MESSAGE.value,
                "runner": None,
                "message": decision.reason,
                "subTasks": _rows_json(snap.rows),
            }
        )

    # -- commands ----------------------------------------------------------------------------

    async def command(
        self,
        snap: Snapshot,
        message: StoredMessage,
        call: CommandCall,
        host: OperatorTurnHost | None = None,
    ) -> None:
        """Run a participant's command: no model call and no state change. Its intents are
        applied here, in order: settings, then the spawn, then the reply."""
        spec = message.spec
        result = await run_command(
            self.rt.commands.runner,
            call,
            sender=spec.sender,
            role=snap.spec.role_of(spec.sender),
            snapshot=TaskSnapshot.of(
                self.name, snap.spec, snap.status.model_copy(update={"sub_tasks": snap.rows})
            ),
            catalog=self.rt.catalog,
        )
        metadata: dict[str, Any] = {"command": call.name}
        reply = result.reply
        if result.settings is not None:
            await self.write_status(
                {
                    "model": result.settings.model,
                    "reasoningEffort": result.settings.reasoning_effort,
                },
                leased=host is not None,
            )
            if host is not None:
                host.task_settings = result.settings
        if result.spawn is not None:
            child = await create_child(
                self,
                snap.obj,
                child_name(self.name, f"command/{spec.message_id}"),
                TaskSpec(
                    goal=result.spawn.goal,
                    participants=(
                        Participant(id=spec.sender, role=Role.REPORTER),
                        Participant(id=AGENT_ID, role=Role.ASSIGNEE),
                    ),
                    parent=TaskLink(task_id=self.name),
                ),
                Lifecycle.CONVERSATION,
                TaskSettings(
                    model=snap.status.model, reasoning_effort=snap.status.reasoning_effort
                ),
            )
            reply = f"{reply}\nCreated sub-task {child}"
            metadata["task_ref"] = child
        turn = host.turn if host is not None else snap.status.turn
        await self.records.append(
            self.name,
            turn,
            (
                _ack(message),
                NoticeEntry(id=f"cmd-{spec.message_id}", text=reply, metadata=metadata),
            ),
            last=None,
            owner_uid=snap.obj["metadata"]["uid"],
        )

    async def cancel_children(self, snap: Snapshot) -> None:
        for child in await self.children_of(force=True):
            state = (child.get("status") or {}).get("state")
            if state and TaskState(state).is_terminal:
                continue
            child_name = child["metadata"]["name"]
            await HarnessMessages(self.rt.api, self.namespace).send(
                MessageSpec(
                    task=child_name,
                    message_id=f"cancel-from-{self.name}",
                    sender=f"task:{self.name}",
                    control="cancel",
                ),
                task_uid=child["metadata"]["uid"],
            )

    # -- turns -------------------------------------------------------------------------------

    async def turn(self, snap: Snapshot, *, resume: bool) -> bool:
        """Run (or resume) a turn. True when something arrived during it that the turn may
        not have seen, so another pass should look."""
        status = snap.status
        number = status.turn if resume else status.turn + 1
        await self.write_status(
            {
                "state": TaskState.WORKING.value,
                "subState": None,
                "turn": number,
                "runner": Runner(holder=self.rt.identity, renew_time=now_rfc3339()).model_dump(
                    by_alias=True
                ),
                "subTasks": _rows_json(snap.rows),
            }
        )
        history = history_before(snap.records, number)
        journal = tuple(
            e
            for r in snap.records
            if r.turn == number
            for e in r.entries
            if not isinstance(e, (NoticeEntry, AckEntry))
        )
        host = OperatorTurnHost(self, snap, number, history)
        turn_input = TurnInput(
            task_id=self.name,
            turn=number,
            task=snap.extension(),
            history=history,
            journal=journal,
        )
        self.rt.metrics.turns_started.inc()
        self.pokes.clear()
        started = time.perf_counter()
        runner = asyncio.create_task(self.rt.loop.run_turn(host, turn_input))
        renew = asyncio.create_task(self.renew_lease(host))
        watch = asyncio.create_task(self.watch_for_interrupts(host, runner))
        try:
            outcome = await runner
        except asyncio.CancelledError:
            if not runner.cancelled():
                raise
            # Cut by a participant's complete or cancel: close the turn from its journal,
            # then the next pass handles the control message.
            await host.close_cut_turn()
            self.rt.metrics.turns_finished.labels(outcome="cut").inc()
            return True
        finally:
            renew.cancel()
            watch.cancel()
            for t in (renew, watch):
                with contextlib.suppress(asyncio.CancelledError, Exception):
                    await t
            self.rt.metrics.turn_seconds.observe(time.perf_counter() - started)
        self.rt.metrics.turns_finished.labels(outcome=outcome.kind.value).inc()
        return self.news() or outcome.kind.value == "waiting_for_subtasks"

    async def renew_lease(self, host: object) -> None:
        period = self.rt.settings.lease_seconds / 3
        while True:
            await asyncio.sleep(period)
            await self.write_status(
                {"runner": {"holder": self.rt.identity, "renewTime": now_rfc3339()}}, leased=True
            )

    async def watch_for_interrupts(self, host: OperatorTurnHost, runner: asyncio.Task[Any]) -> None:
        """While a turn runs: a participant's complete or cancel cuts it, and a child's change
        shows in this task's rows at once."""
        while True:
            await self.poked.wait()
            self.poked.clear()
            if not self.news():
                continue
            try:
                snap = await self.read()
            except Exception:
                log.exception("task %s/%s: re-read during a turn failed", self.namespace, self.name)
                continue
            if snap is None:
                runner.cancel()
                return
            for m in snap.pending:
                if m.spec.control is None:
                    continue
                role = snap.spec.role_of(m.spec.sender)
                parent = snap.spec.parent.task_id if snap.spec.parent else None
                if role in ENDING_ROLES or (parent and m.spec.sender == f"task:{parent}"):
                    runner.cancel()
                    return
            registry = self.rt.commands.registry
            for m in snap.pending:
                if m.spec.message_id in host.acked:
                    continue
                call = parse_command(m.spec, registry)
                if call is not None:
                    await self.command(snap, m, call, host)
                    host.acked.add(m.spec.message_id)
            if snap.rows != snap.status.sub_tasks:
                await self.write_status({"subTasks": _rows_json(snap.rows)}, leased=True)


def history_before(records: list[TurnRecord], turn: int) -> tuple[ChatMessage, ...]:
    """The model history at the start of ``turn``: each earlier turn's delta applied in order,
    or, for a turn that was cut before it ended, its journal replayed."""
    history: tuple[ChatMessage, ...] = ()
    by_turn: dict[int, list[TurnRecord]] = {}
    for r in records:
        if r.turn < turn:
            by_turn.setdefault(r.turn, []).append(r)
    for number in sorted(by_turn):
        chunks = by_turn[number]
        delta = next((c.history for c in chunks if c.history is not None), None)
        if delta is not None:
            history = apply_delta(history, delta)
        else:
            entries = [e for c in chunks for e in c.entries]
            loop_entries: list[JournalEntry] = [
                e for e in entries if not isinstance(e, (NoticeEntry, AckEntry))
            ]
            if loop_entries:
                history = replay_history(history, loop_entries)
    return history


def _ack(message: StoredMessage) -> AckEntry:
    spec = message.spec
    text = spec.text if spec.control is None else f"/{spec.control}"
    return AckEntry(
        id=f"ack-{spec.message_id}", message_id=spec.message_id, sender=spec.sender, text=text
    )


def _rows_json(rows: tuple[SubTaskRow, ...]) -> list[dict[str, Any]]:
    return [r.model_dump(mode="json", by_alias=True, exclude_none=True) for r in rows]
