"""What a task holds besides its status, as an A2A client reads it: its history and artifacts.

Neither is kept on the task. The history is the turn journals folded into the transcript,
followed by the messages sent but not yet taken by a turn
(``docs/design/messages-and-history.md``); a message or a record that cannot be parsed is
left out of it, and flagged (``kube/unreadable.py``). The artifacts are the task's index of
them (``status.artifacts``) read with their chunks from the records of the turns the index
names, those alone.
"""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Callable, Collection

from a2a.types import Artifact, Message

from tiny_harness.a2a_gateway.artifacts import whole
from tiny_harness.a2a_gateway.rendering import history_message, pending_message
from tiny_harness.core.artifact_index import ArtifactChunk, chunks_of, turns_of
from tiny_harness.kube.journal import TurnRecords
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.participant_view import ParticipantView, conversation

#: Where an artifact's chunk is: its turn and its journal entry.
ChunkKey = tuple[int, str]


class TaskContents:
    """The history and artifacts of the tasks ``lookup`` finds, from their records
    (``turns``) and messages (``messages``)."""

    def __init__(
        self,
        turns: TurnRecords,
        messages: HarnessMessages,
        lookup: Callable[[str], Awaitable[ParticipantView | None]],
    ) -> None:
        self._turns = turns
        self._messages = messages
        self._lookup = lookup

    async def history(self, task: ParticipantView) -> list[Message]:
        """The conversation as a participant sees it (:func:`.participant_view.conversation`),
        as A2A messages: a pending message keeps every part it was sent with."""
        name, context_id = task.name, task.context_id
        records, sent = await asyncio.gather(
            self._turns.for_task(task.obj), self._messages.for_task(task.obj)
        )
        return [
            pending_message(name, context_id, said.sent)
            if said.sent is not None
            else history_message(name, context_id, said.message)
            for said in conversation(records, sent, task.spec)
        ]

    async def artifacts(self, task: ParticipantView) -> list[Artifact]:
        """The task's artifacts, each whole: its index read with the chunks from the records
        of the turns it names, those alone."""
        rows = task.status.artifacts
        if not rows:
            return []
        return whole(rows, await self._chunks_of(task, turns_of(rows)))

    async def artifact_chunks(
        self, task_id: str, turns: Collection[int]
    ) -> dict[ChunkKey, ArtifactChunk]:
        """The artifact chunks journaled in ``turns`` of the task of that name now, by where
        the index says they are (none once the task is gone)."""
        task = await self._lookup(task_id)
        return {} if task is None else await self._chunks_of(task, turns)

    async def _chunks_of(
        self, task: ParticipantView, turns: Collection[int]
    ) -> dict[ChunkKey, ArtifactChunk]:
        found: dict[ChunkKey, ArtifactChunk] = {}
        for record in await self._turns.for_task(task.obj, turns=turns):
            found.update(chunks_of(record.entries, record.turn))
        return found
