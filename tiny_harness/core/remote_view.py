"""A remote task as its sub-task here mirrors it: the fold of what a remote agent sends.

A sub-task on a remote agent is a conversation with that agent's A2A task. Whatever the agent
sends back (the task, status updates, messages, artifacts, over a stream or a poll) is folded
here into one view: the remote task's state, sub-state and status message, and each thing the
agent said, once. The follower (``operator/remote.py``) journals the view as it changes and
ends the sub-task's turn when :func:`RemoteView.answered` says the remote task has answered
what was sent.

**When has the remote task answered?** When it has ended, or when it waits for input again
with a status message other than the one it showed before our message was sent (the message id
is recorded beside the send, ``RemoteSentEntry.before``). A stream or a poll that starts with
the task as it was before our message (still waiting, old message) is therefore not mistaken
for the answer, whether it is the first look or a look after a restart.

Pure: no I/O, tested without a network.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any

from a2a.helpers.proto_helpers import get_data_parts
from a2a.types import Artifact, Message, Part, Role, StreamResponse, Task, TaskStatus

from tiny_harness.core.a2a_task import state_from_a2a
from tiny_harness.core.artifact_index import (
    ArtifactChunk,
    ArtifactFile,
    ArtifactPart,
    ArtifactRow,
    ChunkRef,
    apply_chunk,
    local_entry_id,
    refuse_publish,
)
from tiny_harness.core.attachments import OPAQUE_TYPE
from tiny_harness.core.errors import InvalidTaskError
from tiny_harness.core.extensions import KAGENT_HITL_EXT_URI
from tiny_harness.core.sizes import ARTIFACT_CHUNK_BYTES, entry_text
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.status_ext import metadata_dict, sub_state_of
from tiny_harness.core.turn import (
    RemoteArtifactEntry,
    RemoteRef,
    RemoteReply,
    RemoteSentEntry,
    RemoteStatusEntry,
)

_WAITING = frozenset({TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED})


def _text(parts: Iterable[object]) -> str:
    return "\n".join(str(getattr(p, "text", "")) for p in parts if getattr(p, "text", "")).strip()


def kagent_request(message: Message) -> dict[str, Any] | None:
    """The ``tool_approval_request`` of kagent's hitl extension a status message carries
    (``metadata[uri]`` with the URI among its ``extensions``), or None."""
    if KAGENT_HITL_EXT_URI not in message.extensions:
        return None
    found = metadata_dict(message.metadata).get(KAGENT_HITL_EXT_URI)
    if not isinstance(found, dict) or found.get("type") != "tool_approval_request":
        return None
    return found


def reply_id(message_id: str) -> str:
    """The id a remote agent's message has here (in the history, and as a status message)."""
    return f"remote:{message_id}"


def artifact_parts(parts: Iterable[Part]) -> tuple[ArtifactPart, ...]:
    """A remote artifact's parts as the sub-task keeps them: text, a JSON object (any other
    JSON value under ``value``), a file's bytes, and a file's URL as a line of text."""
    out: list[ArtifactPart] = []
    for part in parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(ArtifactPart(text=part.text))
        elif kind == "data":
            value = get_data_parts([part])[0]
            out.append(ArtifactPart(data=value if isinstance(value, dict) else {"value": value}))
        elif kind == "raw":
            data = base64.b64encode(part.raw).decode()
            media = part.media_type or OPAQUE_TYPE
            out.append(
                ArtifactPart(file=ArtifactFile(name=part.filename, media_type=media, data=data))
            )
        elif kind == "url":
            out.append(ArtifactPart(text=f"{part.filename or 'file'}: {part.url}"))
    return tuple(out)


def content_digest(before: str, parts: Iterable[ArtifactPart]) -> str:
    """An artifact's content after ``parts`` were added to what ``before`` digests ("" for a
    new or replaced artifact): equal digests, equal content, so a poll that shows an artifact
    again is recognised and kept once."""
    body = json.dumps([p.model_dump(mode="json", exclude_none=True) for p in parts], sort_keys=True)
    return hashlib.sha256(f"{before}\0{body}".encode()).hexdigest()[:32]


@dataclass
class RemoteView:
    """The remote task as seen so far. ``replies`` are what its agent said since the view was
    made (each once, by id); ``seen`` holds every id ever folded."""

    task_id: str | None = None
    context_id: str = ""
    state: TaskState | None = None
    sub_state: str | None = None
    message_id: str = ""
    text: str = ""
    replies: list[RemoteReply] = field(default_factory=list)
    seen: set[str] = field(default_factory=set)
    #: The remote artifacts kept: each one's content digest, by its remote id.
    digests: dict[str, str] = field(default_factory=dict)
    #: Chunks of remote artifacts folded but not journaled yet, with their digests.
    chunks: list[tuple[ArtifactChunk, str]] = field(default_factory=list)

    @classmethod
    def of(cls, ref: RemoteRef | None) -> RemoteView:
        ref = ref or RemoteRef()
        view = cls(
            task_id=ref.task_id,
            context_id=ref.context_id,
            state=ref.state,
            sub_state=ref.sub_state,
            message_id=ref.message_id,
            text=ref.text,
        )
        view.seen.update(ref.said)
        view.digests.update(ref.artifacts)
        if ref.message_id:
            view.seen.add(ref.message_id)
        return view

    # -- folding ---------------------------------------------------------------------------

    def take(self, event: StreamResponse) -> bool:
        """Fold one stream event (or polled task); True when what a participant sees changed."""
        before = self.key()
        if event.HasField("task"):
            self.take_task(event.task)
        elif event.HasField("status_update"):
            update = event.status_update
            self._ids(update.task_id, update.context_id)
            self._status(update.status, sub_state_of(update.metadata))
        elif event.HasField("message"):
            self._ids(event.message.task_id, event.message.context_id)
            self._said(event.message)
            if not event.message.task_id:
                # An answer with no task at all: the exchange is over, and this is its result.
                self.state = TaskState.COMPLETED
                self.message_id = reply_id(event.message.message_id)
                self.text = entry_text(_text(event.message.parts), "remote reply")
        elif event.HasField("artifact_update"):
            update = event.artifact_update
            self._ids(update.task_id, update.context_id)
            self._artifact(update.artifact, append=update.append)
        return self.key() != before

    def take_task(self, task: Task) -> None:
        self._ids(task.id, task.context_id)
        for message in task.history:
            if message.role == Role.ROLE_AGENT:
                self._said(message)
        for artifact in task.artifacts:
            self._artifact(artifact)
        self._status(task.status, sub_state_of(task.metadata))

    def take_entry(self, entry: RemoteSentEntry | RemoteStatusEntry | RemoteArtifactEntry) -> None:
        """What this turn's journal already recorded (a resumed turn starts from it)."""
        if isinstance(entry, RemoteSentEntry):
            self._ids(entry.task_id, entry.context_id)
            return
        if isinstance(entry, RemoteArtifactEntry):
            self.digests[entry.artifact.artifact_id] = entry.digest
            return
        self.state, self.sub_state = entry.state, entry.sub_state
        self.message_id, self.text = entry.message_id, entry.text
        for reply in entry.replies:
            if reply.id not in self.seen:
                self.seen.add(reply.id)
                self.replies.append(reply)

    def _ids(self, task_id: str, context_id: str) -> None:
        if task_id and self.task_id is None:
            self.task_id = task_id
        if context_id and not self.context_id:
            self.context_id = context_id

    def _status(self, status: TaskStatus, sub_state: str | None) -> None:
        try:
            self.state = state_from_a2a(status.state)
        except InvalidTaskError:
            return  # an unknown state tells us nothing; keep the last one
        self.sub_state = sub_state
        if status.HasField("message") and kagent_request(status.message) is not None:
            # kagent's hitl extension says "these calls wait for approval" in the message.
            self.sub_state = SubState.AWAITING_APPROVAL.value
        if status.HasField("message"):
            message = status.message
            self._said(message)
            self.message_id = reply_id(message.message_id) if message.message_id else ""
            self.text = entry_text(_text(message.parts), "remote reply")
        elif self.state.is_terminal:
            # Ended without a status message: its result is what it said last (an artifact,
            # say), not the text of an earlier status (a question it asked before).
            self.text = ""

    def _said(self, message: Message) -> None:
        text = _text(message.parts)
        rid = reply_id(message.message_id)
        if text and message.message_id and rid not in self.seen:
            self.seen.add(rid)
            # Bounded before it is journaled: a long reply is cut, never refused by etcd.
            self.replies.append(RemoteReply(id=rid, text=entry_text(text, "remote reply")))

    def _artifact(self, artifact: Artifact, *, append: bool = False) -> None:
        text = _text(artifact.parts)
        rid = f"artifact:{artifact.artifact_id}"
        if text and artifact.artifact_id and rid not in self.seen:
            self.seen.add(rid)
            self.replies.append(RemoteReply(id=rid, text=entry_text(text, "remote artifact")))
        self._keep(artifact, append)

    def _keep(self, artifact: Artifact, append: bool) -> None:
        """Keep the artifact (a chunk of it) as the sub-task's own, once: an update that adds
        to one kept already is a chunk appended to it; a whole artifact (a poll's, a replaced
        one) is kept again only when its content changed. A chunk past one journal entry's
        bound is not kept, and the model is told so in place of it."""
        parts = artifact_parts(artifact.parts)
        key = artifact.artifact_id
        if not parts or not key:
            return
        kept = self.digests.get(key)
        append = append and kept is not None
        digest = content_digest(kept if append and kept is not None else "", parts)
        if digest == kept:
            return
        self.digests[key] = digest
        size = sum(p.size for p in parts)
        name = artifact.name or key
        if size > ARTIFACT_CHUNK_BYTES:
            note = (
                f"The agent's artifact {name!r} sent {size:,} bytes at once, more than this "
                f"installation keeps in one piece ({ARTIFACT_CHUNK_BYTES:,} bytes): it was not "
                "kept."
            )
            self.replies.append(RemoteReply(id=f"artifact-too-large:{key}:{digest}", text=note))
            return
        chunk = ArtifactChunk(
            artifact_id=key,
            name=name[:128],
            description=artifact.description[:1024],
            parts=parts,
            append=append,
            size=size,
        )
        self.chunks.append((chunk, digest))

    # -- reading ---------------------------------------------------------------------------

    def key(self) -> tuple[TaskState | None, str | None, str, int]:
        return self.state, self.sub_state, self.message_id, len(self.replies)

    def answered(self, before: str | frozenset[str]) -> bool:
        """Has the remote task answered a message sent when its status message was
        ``before`` (or one of them: a relay of decisions also waits past each decision's own
        reply, ``operator/relay.py``)? (See the module docstring.)"""
        if self.state is None:
            return False
        if self.state.is_terminal:
            return True
        shown = before if isinstance(before, frozenset) else frozenset({before})
        return self.state in _WAITING and self.message_id not in shown

    def entry(self, entry_id: str, replies_from: int) -> RemoteStatusEntry:
        """The view as a journal entry, with the replies from index ``replies_from`` on."""
        assert self.state is not None
        return RemoteStatusEntry(
            id=entry_id,
            state=self.state,
            sub_state=self.sub_state,
            message_id=self.message_id,
            text=self.text,
            replies=tuple(self.replies[replies_from:]),
        )

    @property
    def mirrored_sub_state(self) -> SubState | None:
        """The sub-state the sub-task shows: the remote's own when it is one of ours; for a
        remote task waiting for input without one, a question (awaiting-answer)."""
        if self.state not in _WAITING:
            return None
        try:
            return SubState(self.sub_state) if self.sub_state else SubState.AWAITING_ANSWER
        except ValueError:
            return SubState.AWAITING_ANSWER

    @property
    def result(self) -> str:
        """The text the sub-task shows: the remote status message, else what it said last."""
        if self.text:
            return self.text
        return self.replies[-1].text if self.replies else ""


def remote_ref_of(entries: Iterable[object]) -> RemoteRef | None:
    """Where a task's remote conversation stands, from its journal entries in order (None:
    nothing was sent yet)."""
    ref: RemoteRef | None = None
    for entry in entries:
        if isinstance(entry, RemoteSentEntry):
            if ref is None:
                ref = RemoteRef(task_id=entry.task_id, context_id=entry.context_id)
        elif isinstance(entry, RemoteArtifactEntry) and ref is not None:
            kept = {**ref.artifacts, entry.artifact.artifact_id: entry.digest}
            ref = ref.model_copy(update={"artifacts": kept})
        elif isinstance(entry, RemoteStatusEntry) and ref is not None:
            ref = ref.model_copy(
                update={
                    "state": entry.state,
                    "sub_state": entry.sub_state,
                    "message_id": entry.message_id,
                    "text": entry.text,
                    "said": (*ref.said, *(r.id for r in entry.replies)),
                }
            )
    return ref


def kept_artifacts(
    rows: Sequence[ArtifactRow], kept: Iterable[RemoteArtifactEntry], turn: int
) -> tuple[ArtifactRow, ...]:
    """The sub-task's artifact index with the remote chunks this turn kept; a chunk past the
    task's bounds (``core/artifact_index.refuse_publish``) is left out of the index, as a publish
    past them would be refused."""
    out = tuple(rows)
    for entry in kept:
        chunk = entry.artifact
        if refuse_publish(out, chunk.name, chunk.size, chunk.append) is not None:
            continue
        ref = ChunkRef(turn=turn, entry=local_entry_id(entry.id), size=chunk.size)
        out = apply_chunk(out, chunk, ref)
    return out
