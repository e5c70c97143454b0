"""A task's artifacts as an A2A client sees them: ``Task.artifacts`` and the
``TaskArtifactUpdateEvent`` of each chunk a stream has not shown yet.

The task's status holds the artifacts' index (``status.artifacts``, :mod:`.core.artifact_index`);
their parts are in the turn records, in the entries the index names. So a reader reads the
records of those turns alone (:meth:`.contents.TaskContents.artifacts`), whatever the length of the
conversation, and renders them here.

**Streams.** The index changes when a turn that published ends (the operator's one status
writer), so a stream tells each change's new chunks (:func:`.core.artifact_index.new_chunks`) as
artifact updates *before* that change's status update: ``append`` when the chunk adds to what
the stream showed of the artifact, ``last_chunk`` when it is the artifact's last chunk as of
that change (a later turn may append again). An artifact update carries no event id of its own
(no ``version``): the status update after it carries the change's, so a client that lost the
connection among them resumes from the change before, and is sent each artifact that changed
since as a whole (``append`` false), never a chunk twice
(:meth:`ArtifactFollower.whole_updates`).
"""

from __future__ import annotations

import logging
from collections.abc import Awaitable, Callable, Collection, Mapping, Sequence

from a2a.types import Artifact, Part, TaskArtifactUpdateEvent

from tiny_harness.core.artifact_index import (
    ArtifactChunk,
    ArtifactPart,
    ArtifactRow,
    assemble,
    new_chunks,
)

log = logging.getLogger(__name__)

#: Reads the chunks journaled in the given turns of a task, by (turn, entry).
ChunkReader = Callable[[str, Collection[int]], Awaitable[Mapping[tuple[int, str], ArtifactChunk]]]


def part_to_a2a(part: ArtifactPart) -> Part:
    """One artifact part as an A2A part: a text, a JSON object, or a file's bytes."""
    if part.text is not None:
        return Part(text=part.text)
    if part.data is not None:
        out = Part(media_type="application/json")
        out.data.struct_value.update(part.data)
        return out
    assert part.file is not None
    return Part(raw=part.file.raw(), filename=part.file.name, media_type=part.file.media_type)


def artifact_to_a2a(row: ArtifactRow, parts: Sequence[ArtifactPart]) -> Artifact:
    return Artifact(
        artifact_id=row.artifact_id,
        name=row.name,
        description=row.description,
        parts=[part_to_a2a(p) for p in parts],
    )


def whole(
    rows: Sequence[ArtifactRow], chunks: Mapping[tuple[int, str], ArtifactChunk]
) -> list[Artifact]:
    """The artifacts of ``rows``, each whole; one whose chunk is missing (its record gone or
    unreadable) is left out and logged, never shown with a hole."""
    out = []
    for row in rows:
        parts = assemble(row, chunks)
        if parts is None:
            log.warning("artifact %s (%s) misses a chunk in its records", row.name, row.artifact_id)
            continue
        out.append(artifact_to_a2a(row, parts))
    return out


def _event(
    task_id: str, context_id: str, artifact: Artifact, *, append: bool, last: bool
) -> TaskArtifactUpdateEvent:
    return TaskArtifactUpdateEvent(
        task_id=task_id,
        context_id=context_id,
        artifact=artifact,
        append=append,
        last_chunk=last,
    )


class ArtifactFollower:
    """What one stream has shown of a task's artifacts, and the updates for what it has not.

    ``shown`` is the index the stream's first event showed (the task's, or on a resume, the
    index as of the client's version)."""

    def __init__(
        self, read: ChunkReader, task_id: str, context_id: str, shown: Sequence[ArtifactRow]
    ) -> None:
        self._read = read
        self.task_id = task_id
        self.context_id = context_id
        self.shown: tuple[ArtifactRow, ...] = tuple(shown)

    async def updates(self, index: Sequence[ArtifactRow]) -> list[TaskArtifactUpdateEvent]:
        """One update per chunk of ``index`` not shown yet, in order (none read when none)."""
        fresh = new_chunks(self.shown, index)
        self.shown = tuple(index)
        if not fresh:
            return []
        chunks = await self._read(self.task_id, {p.ref.turn for p in fresh})
        events = []
        for published in fresh:
            chunk = chunks.get((published.ref.turn, published.ref.entry))
            if chunk is None:
                log.warning(
                    "artifact %s: chunk %s is not in its record",
                    published.row.name,
                    published.ref.entry,
                )
                continue
            artifact = artifact_to_a2a(published.row, chunk.parts)
            events.append(
                _event(
                    self.task_id,
                    self.context_id,
                    artifact,
                    append=published.append,
                    last=published.last,
                )
            )
        return events

    async def whole_updates(self, index: Sequence[ArtifactRow]) -> list[TaskArtifactUpdateEvent]:
        """On a resume: each artifact of ``index`` that differs from what was shown, whole
        (``append`` false replaces what the client holds), so no chunk is shown twice however
        far into a change's updates the client had read."""
        changed = [r for r in index if r not in self.shown]
        self.shown = tuple(index)
        if not changed:
            return []
        turns = {ref.turn for row in changed for ref in row.chunks}
        chunks = await self._read(self.task_id, turns)
        return [
            _event(self.task_id, self.context_id, artifact, append=False, last=True)
            for artifact in whole(changed, chunks)
        ]
