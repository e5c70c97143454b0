"""``kubectl harness watch TASK``: a task's state changes, sub-task changes and new messages,
printed as they happen until the task ends.

The task is followed by one watch of its object (``kube/watching.watch_object``), read again
when the watch expires; its transcript is read again at each change, and every
:data:`WATCH_REREAD_SECONDS` while nothing changes, since a command's reply or a refusal is a
journal entry that changes no task status.
"""

from __future__ import annotations

import argparse
import asyncio
from typing import Final

from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_session import Session, name_of, role_of, state_of, status_of
from tiny_harness.core.approval import undecided
from tiny_harness.core.clock import now
from tiny_harness.core.errors import HarnessError, TaskNotFoundError
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import SubTaskRow
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import PLURAL
from tiny_harness.kube.watching import WatchExpiredError, watch_client, watch_object

#: How often the transcript is read again when the task itself has not changed.
WATCH_REREAD_SECONDS: Final = 2.0


class _Follower:
    """What ``watch`` has printed so far, and what it prints next."""

    def __init__(self, session: Session, name: str) -> None:
        self.session = session
        self.name = name
        self.seen: set[str] = set()
        self.state: tuple[TaskState, str | None] | None = None
        self.rows: dict[str, tuple[TaskState, str | None]] = {}

    def say(self, text: str) -> None:
        render.out(render.watch_line(now(), text))

    async def messages(self, *, show: bool = True) -> None:
        for said in await self.session.conversation(self.name):
            if said.message.message_id in self.seen:
                continue
            self.seen.add(said.message.message_id)
            if show:
                self.say(render.message_text(said.message, pending=False))

    def changes(self, obj: Obj) -> bool:
        """Print what changed in the task; True once it has ended."""
        status = status_of(obj)
        for row in status.sub_tasks:
            self._row(row)
        state = (state_of(obj), status.sub_state)
        if state != self.state:
            self.state = state
            text = f"{self.name}: {render.state_text(*state)}"
            if state[0].is_terminal and status.message:
                text += f" - {status.message}"
            self.say(text)
            if status.sub_state == SubState.AWAITING_APPROVAL:
                for pending in undecided(status.approvals):
                    self.say(render.waiting_call(pending))
        return state[0].is_terminal

    def _row(self, row: SubTaskRow) -> None:
        now = (row.state, row.sub_state)
        if self.rows.get(row.task_id) != now:
            if row.task_id in self.rows or self.state is not None:
                self.say(render.row_change(row))
            self.rows[row.task_id] = now


async def run(session: Session, args: argparse.Namespace, _: str | None) -> int:
    obj = await session.visible(args.task)
    follower = _Follower(session, args.task)
    conversation = await session.conversation(args.task)
    for said in conversation[-args.history :] if args.history else []:
        follower.say(render.message_text(said.message, pending=said.pending))
    await follower.messages(show=False)
    if follower.changes(obj):
        return 0
    events: asyncio.Queue[Obj | BaseException | None] = asyncio.Queue()
    producer = asyncio.create_task(_follow(session, obj, events))
    try:
        while True:
            try:
                async with asyncio.timeout(WATCH_REREAD_SECONDS):
                    item = await events.get()
            except TimeoutError:
                await follower.messages()
                continue
            if isinstance(item, BaseException):
                raise item
            if item is None:
                raise HarnessError(f"the task {args.task} was deleted")
            if role_of(item, session.participant) is None:
                raise TaskNotFoundError(args.task)
            await follower.messages()
            if follower.changes(item):
                return 0
    finally:
        producer.cancel()
        await asyncio.gather(producer, return_exceptions=True)


async def _follow(
    session: Session, obj: Obj, events: asyncio.Queue[Obj | BaseException | None]
) -> None:
    """Every committed version of the task, into ``events``; None when it is deleted."""
    name = name_of(obj)
    version = str(obj["metadata"]["resourceVersion"])
    api = watch_client(session.api)
    try:
        while True:
            try:
                async for event in watch_object(
                    api, session.namespace, PLURAL, name, resource_version=version
                ):
                    if event.type == "DELETED":
                        await events.put(None)
                        return
                    version = event.resource_version
                    await events.put(event.object)
            except WatchExpiredError:
                fresh = await session.tasks.get(name)
                version = str(fresh["metadata"]["resourceVersion"])
                await events.put(fresh)
    except TaskNotFoundError:
        await events.put(None)
    except Exception as exc:  # handed to the printing loop, which reports it
        await events.put(exc)
    finally:
        await api.close()
