"""Helpers for driving tasks as a participant would: create a task, send messages and
controls, read status and the transcript, all through the real API."""

from __future__ import annotations

import asyncio
import time
import uuid
from typing import Any

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
    ) -> dict[str, Any]:
        """Poll until the task is in ``state`` (and sub-state, and at least ``turn``), with no
        turn running (or, with ``running``, with one running)."""
        deadline = time.monotonic() + within
        last: dict[str, Any] = {}
        while time.monotonic() < deadline:
            last = await self.status(task)
            if (
                last.get("state") == state
                and (sub_state is None or last.get("subState") == sub_state)
                and (turn is None or last.get("turn", 0) >= turn)
                and bool(last.get("runner")) is running
            ):
                return last
            await asyncio.sleep(0.05)
        raise AssertionError(f"{task} did not reach {state}/{sub_state} in {within}s: {last}")

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
        """Poll the transcript until an agent message containing ``contains`` appears."""
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            for m in await self.transcript(task):
                if m.role == "agent" and contains in m.text:
                    return m
            await asyncio.sleep(0.05)
        said = [m.text for m in await self.transcript(task)]
        raise AssertionError(f"no agent message with {contains!r} in {task}: {said}")

    async def children(self, task: str) -> list[dict[str, Any]]:
        return [
            c
            for c in await self.tasks.list()
            if (c["spec"].get("parent") or {}).get("taskId") == task
        ]
