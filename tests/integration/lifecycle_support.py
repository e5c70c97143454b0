"""Helpers for driving tasks as a participant would: create a task, send messages and
controls, read status and the transcript, all through the real API."""

from __future__ import annotations

import uuid
from typing import Any

from tests.eventually import INTERVAL, NotYet, eventually_async
from tiny_harness.core.approval import DecisionRequest
from tiny_harness.core.history import TranscriptMessage, transcript
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.messages import HarnessMessages, StoredMessage


class Tasks:
    """One namespace's tasks, as a participant sees them."""

    def __init__(self, api: Any, namespace: str) -> None:
        self.tasks = HarnessTasks(api, namespace)
        self.messages = HarnessMessages(api, namespace)
        self.records = TurnRecords(api, namespace)

    async def create(self, name: str, **spec: Any) -> dict[str, Any]:
        spec.setdefault("goal", f"Help with {name}.")
        spec.setdefault(
            "participants",
            [
                {"id": "alice", "role": "assignee"},
                {"id": "bob", "role": "watcher"},
            ],
        )
        return await self.tasks.create(name, spec)

    async def create_child(self, parent: str, name: str, goal: str, **extra: Any) -> dict[str, Any]:
        """A delegated child made by hand, linked as a spawned one is (``extra``: more spec)."""
        from tiny_harness.kube.labels import label_value
        from tiny_harness.kube.names import PARENT_LABEL

        owner = await self.tasks.get(parent)
        spec = {
            "goal": goal,
            "parent": {"taskId": parent},
            "participants": owner["spec"].get("participants", []),
            **extra,
        }
        return await self.tasks.create(
            name, spec, labels={PARENT_LABEL: label_value(parent)}, owner=owner
        )

    async def send(self, task: str, text: str, sender: str = "alice") -> str:
        message_id = f"m-{uuid.uuid4().hex[:8]}"
        await self.messages.send(
            MessageSpec(
                task=task, message_id=message_id, sender=sender, parts=(MessagePart(text=text),)
            ),
            task=await self.tasks.get(task),
        )
        return message_id

    async def control(self, task: str, action: str, sender: str = "alice") -> str:
        message_id = f"c-{uuid.uuid4().hex[:8]}"
        await self.messages.send(
            MessageSpec(task=task, message_id=message_id, sender=sender, control=action),  # type: ignore[arg-type]
            task=await self.tasks.get(task),
        )
        return message_id

    async def decide(
        self,
        task: str,
        call_id: str,
        verdict: str = "approve",
        sender: str = "alice",
        **request: Any,
    ) -> str:
        """Send a decision on a call that waits for approval (``request``: reason, arguments,
        park). It names the park the task shows open, as every front end does, unless
        ``park`` is given (None: no park)."""
        message_id = f"d-{uuid.uuid4().hex[:8]}"
        if "park" not in request:
            shown = (await self.status(task)).get("approvals") or [{}]
            request["park"] = shown[0].get("park")
        decision = DecisionRequest(call_id=call_id, verdict=verdict, **request)  # type: ignore[arg-type]
        await self.messages.send(
            MessageSpec(task=task, message_id=message_id, sender=sender, decision=decision),
            task=await self.tasks.get(task),
        )
        return message_id

    async def status(self, task: str) -> dict[str, Any]:
        return dict((await self.tasks.get(task)).get("status") or {})

    async def wait(
        self,
        task: str,
        state: str,
        *,
        sub_state: str | None = None,
        within: float = 30.0,
        turn: int | None = None,
        running: bool = False,
        interval: float = INTERVAL,
    ) -> dict[str, Any]:
        """The task's status once it is in ``state`` (and sub-state, and at least ``turn``),
        with no turn running (or, with ``running``, with one running)."""

        async def reached() -> dict[str, Any] | NotYet:
            status = await self.status(task)
            return (
                status
                if status.get("state") == state
                and (sub_state is None or status.get("subState") == sub_state)
                and (turn is None or status.get("turn", 0) >= turn)
                and bool(status.get("runner")) is running
                else NotYet(status)
            )

        wanted = "/".join(part for part in (state, sub_state) if part)
        at_turn = f" at turn {turn} or later" if turn is not None else ""
        turning = "a turn running" if running else "no turn running"
        return await eventually_async(
            reached,
            within=within,
            what=f"{task} to be {wanted}{at_turn} with {turning}",
            interval=interval,
        )

    async def wait_children_read(
        self, parent: str, count: int = 1, within: float = 60.0
    ) -> dict[str, Any]:
        """The parent's status once its ``count`` children have completed and its model has
        read their endings, with no turn running."""

        async def read() -> dict[str, Any] | NotYet:
            status = await self.status(parent)
            rows = status.get("subTasks", [])
            parked = status.get("state") == "TASK_STATE_INPUT_REQUIRED" and not status.get("runner")
            done = len(rows) == count and all(
                r["state"] == "TASK_STATE_COMPLETED" and not r.get("resultUnread") for r in rows
            )
            return status if parked and done else NotYet(status)

        return await eventually_async(
            read, within=within, what=f"{parent}'s model to read the ends of {count} children"
        )

    async def records_of(self, task: str, turn: int | None = None) -> list[TurnRecord]:
        """The turn records of the task of that name now."""
        return await self.records.for_task(await self.tasks.get(task), turn)

    async def messages_of(self, task: str) -> list[StoredMessage]:
        """The messages of the task of that name now."""
        return await self.messages.for_task(await self.tasks.get(task))

    async def transcript(self, task: str) -> list[TranscriptMessage]:
        records = await self.records_of(task)
        return transcript(e for r in records for e in r.entries)

    async def wait_agent_message(
        self, task: str, contains: str, within: float = 30.0
    ) -> TranscriptMessage:
        """The first agent message of the transcript that contains ``contains``."""

        async def said() -> TranscriptMessage | NotYet:
            messages = await self.transcript(task)
            found = (m for m in messages if m.role == "agent" and contains in m.text)
            return next(found, NotYet([m.text for m in messages]))

        return await eventually_async(
            said, within=within, what=f"an agent message with {contains!r} in {task}"
        )

    async def children(self, task: str) -> list[dict[str, Any]]:
        return [
            c
            for c in await self.tasks.list()
            if (c["spec"].get("parent") or {}).get("taskId") == task
        ]
