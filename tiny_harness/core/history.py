"""The conversation as stored: turn records, the model history they fold into, and the
transcript participants read.

A task's turns are stored one record each (see ``docs/design/messages-and-history.md``). A
record holds the turn's journal entries (what the loop checkpointed, plus the host's own
notices such as command replies) and, once the turn has ended, the change it made to the model
history. Folding the records in order gives both views of the conversation:

- the model history (:func:`model_history`), which the next turn starts from;
- the transcript (:func:`transcript`): the user and agent messages with their A2A ids, which
  GetTask returns and ``kubectl harness get`` prints.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from typing import Annotated, Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.compaction import compacted_history
from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.prompt import sub_task_note
from tiny_harness.core.turn import (
    AwaitEntry,
    CompactionEntry,
    DrainEntry,
    ModelEntry,
    RemoteArtifactEntry,
    RemoteSentEntry,
    RemoteStatusEntry,
    ToolEntry,
)


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class NoticeEntry(_Data):
    """An agent message the host sends itself, outside the model: a command's reply, a refused
    completion, a control outcome. ``message_id`` is its stable A2A id."""

    kind: Literal["notice"] = "notice"
    id: str
    text: str
    metadata: Mapping[str, Any] = Field(default_factory=dict)


class AckEntry(_Data):
    """Inbox messages the host consumed itself (commands, controls, refused messages), so the
    loop never sees them. ``sender`` and ``text`` keep them in the transcript."""

    kind: Literal["ack"] = "ack"
    id: str
    message_id: str
    sender: str | None = None
    text: str = ""


RecordEntry = Annotated[
    ModelEntry
    | ToolEntry
    | AwaitEntry
    | DrainEntry
    | CompactionEntry
    | NoticeEntry
    | AckEntry
    | RemoteSentEntry
    | RemoteStatusEntry
    | RemoteArtifactEntry,
    Field(discriminator="kind"),
]
ENTRIES: TypeAdapter[tuple[RecordEntry, ...]] = TypeAdapter(tuple[RecordEntry, ...])


class FromDrain(_Data):
    """A participant's message in a turn's history delta, stored as where it is already: the
    ``index``-th message of the same turn's drain entry ``drain``. The delta holds what the
    model was given, and a participant's message is given to it exactly as drained, so it is
    journaled once, in the drain, rather than twice in one turn (:func:`by_reference`)."""

    drain: str
    index: int = Field(ge=0)


class HistoryDelta(_Data):
    """How a turn changed the model history: keep the first ``keep`` messages, then append.
    As journaled, a message may be a :class:`FromDrain`; :func:`resolved` puts it back."""

    keep: int = Field(ge=0)
    messages: tuple[ChatMessage | FromDrain, ...] = ()


def _as_given(entry: DrainEntry, index: int) -> ChatMessage | None:
    message = entry.messages[index]
    if message.sub_task is not None:
        return None
    return message.said()


def by_reference(delta: HistoryDelta, drains: Iterable[DrainEntry]) -> HistoryDelta:
    """``delta`` with each participant message that one of the turn's ``drains`` holds, as
    given to the model, replaced by a reference to it (each drained message referred to at
    most once, in order)."""
    waiting: dict[ChatMessage, list[FromDrain]] = {}
    for entry in drains:
        for index in range(len(entry.messages)):
            given = _as_given(entry, index)
            if given is not None:
                waiting.setdefault(given, []).append(FromDrain(drain=entry.id, index=index))
    if not waiting:
        return delta
    out: list[ChatMessage | FromDrain] = []
    for message in delta.messages:
        user = isinstance(message, ChatMessage) and message.role == "user"
        refs = waiting.get(message) if user else None  # type: ignore[arg-type]
        out.append(refs.pop(0) if refs else message)
    return HistoryDelta(keep=delta.keep, messages=tuple(out))


def resolved(delta: HistoryDelta, drains: Mapping[str, DrainEntry]) -> HistoryDelta:
    """``delta`` with every :class:`FromDrain` put back from the turn's drain entries (by id).
    A reference to a drain the turn does not hold is a record that was never whole: it says
    so (``ValueError``) rather than give the model a history with a hole in it."""
    out: list[ChatMessage | FromDrain] = []
    for message in delta.messages:
        if isinstance(message, ChatMessage):
            out.append(message)
            continue
        entry = drains.get(message.drain)
        given = (
            _as_given(entry, message.index)
            if entry is not None and message.index < len(entry.messages)
            else None
        )
        if given is None:
            raise ValueError(f"the history refers to drain {message.drain!r}, which is not there")
        out.append(given)
    return HistoryDelta(keep=delta.keep, messages=tuple(out))


def history_delta(before: Sequence[ChatMessage], after: Sequence[ChatMessage]) -> HistoryDelta:
    """The smallest delta that turns ``before`` into ``after``.

    Without compaction it is just the new messages; after a compaction (which replaces the
    head with a summary) it is the compacted history, which the context budget bounds.
    """
    keep = 0
    for old, new in zip(before, after, strict=False):
        if old != new:
            break
        keep += 1
    return HistoryDelta(keep=keep, messages=tuple(after[keep:]))


def apply_delta(history: Sequence[ChatMessage], delta: HistoryDelta) -> tuple[ChatMessage, ...]:
    """The history after the delta (one with its references :func:`resolved`)."""
    added = tuple(m for m in delta.messages if isinstance(m, ChatMessage))
    if len(added) != len(delta.messages):
        raise ValueError("a history delta's drained messages must be resolved before it is applied")
    return (*history[: delta.keep], *added)


class _Chunk(Protocol):
    @property
    def entries(self) -> Sequence[object]: ...
    @property
    def history(self) -> HistoryDelta | None: ...


def after_turn(history: Sequence[ChatMessage], chunks: Iterable[_Chunk]) -> tuple[ChatMessage, ...]:
    """The model history after an ended turn, from its records in chunk order: its delta, in
    as many consecutive pieces as it took, each participant's message read back from the
    turn's drain entries, where it is stored (:func:`by_reference`)."""
    chunks = list(chunks)
    drains = {e.id: e for c in chunks for e in c.entries if isinstance(e, DrainEntry)}
    out = tuple(history)
    for chunk in chunks:
        if chunk.history is not None:
            out = apply_delta(out, resolved(chunk.history, drains))
    return out


def model_history(deltas: Iterable[HistoryDelta]) -> tuple[ChatMessage, ...]:
    """The model history after every turn whose delta is given, in turn order."""
    history: tuple[ChatMessage, ...] = ()
    for delta in deltas:
        history = apply_delta(history, delta)
    return history


class TranscriptMessage(_Data):
    """One message of the conversation as participants see it."""

    role: Literal["user", "agent"]
    message_id: str
    text: str
    sender: str | None = None
    metadata: Mapping[str, Any] = Field(default_factory=dict)
    files: tuple[Attachment, ...] = ()


def transcript(entries: Iterable[RecordEntry]) -> list[TranscriptMessage]:
    """The participants' and the agent's messages, in the order the records hold them."""
    out: list[TranscriptMessage] = []
    for entry in entries:
        if isinstance(entry, DrainEntry):
            for message in entry.messages:
                if message.sub_task is None:
                    out.append(
                        TranscriptMessage(
                            role="user",
                            message_id=message.id,
                            text=message.content,
                            sender=message.sender,
                            files=message.files,
                        )
                    )
        elif isinstance(entry, ModelEntry):
            if entry.response.text:
                out.append(
                    TranscriptMessage(role="agent", message_id=entry.id, text=entry.response.text)
                )
        elif isinstance(entry, NoticeEntry):
            out.append(
                TranscriptMessage(
                    role="agent", message_id=entry.id, text=entry.text, metadata=entry.metadata
                )
            )
        elif isinstance(entry, RemoteStatusEntry):
            # What a remote agent said, mirrored: its messages are the agent's here.
            out.extend(
                TranscriptMessage(role="agent", message_id=reply.id, text=reply.text)
                for reply in entry.replies
            )
        elif isinstance(entry, AckEntry):
            out.append(
                TranscriptMessage(
                    role="user", message_id=entry.message_id, text=entry.text, sender=entry.sender
                )
            )
    return out


def acknowledged(entries: Iterable[RecordEntry]) -> set[str]:
    """The ids of every inbox message these entries consumed."""
    ids: set[str] = set()
    for entry in entries:
        if isinstance(entry, DrainEntry):
            ids.update(m.id for m in entry.messages)
        elif isinstance(entry, AckEntry):
            ids.add(entry.message_id)
    return ids


def replay_history(
    history: Sequence[ChatMessage], entries: Iterable[RecordEntry]
) -> tuple[ChatMessage, ...]:
    """The model history after a turn that was cut before it ended, rebuilt from its journal.

    It adds what the loop adds for each entry; a tool call whose result was never recorded gets
    an error result saying the turn was cut, so the next request is well-formed for every
    provider (an assistant tool call must be answered).
    """
    out = list(history)
    unanswered: list[str] = []

    def close_calls() -> None:
        for call_id in unanswered:
            out.append(
                ChatMessage(
                    role="tool",
                    content="Error: the turn was cut before this call finished.",
                    tool_call_id=call_id,
                    is_error=True,
                )
            )
        unanswered.clear()

    for entry in entries:
        if isinstance(entry, DrainEntry):
            close_calls()
            for message in entry.messages:
                if message.sub_task is None:
                    out.append(message.said())
                else:
                    out.append(sub_task_note(message.sub_task, message.content))
        elif isinstance(entry, CompactionEntry):
            out = list(compacted_history(out, entry.replaced, entry.summary))
        elif isinstance(entry, ModelEntry):
            close_calls()
            response = entry.response
            out.append(
                ChatMessage(role="assistant", content=response.text, tool_calls=response.tool_calls)
            )
            unanswered = [c.id for c in response.tool_calls]
        elif isinstance(entry, ToolEntry):
            out.append(entry.message())
            if entry.call_id in unanswered:
                unanswered.remove(entry.call_id)
        elif isinstance(entry, RemoteStatusEntry):
            out.extend(ChatMessage(role="assistant", content=r.text) for r in entry.replies)
    close_calls()
    return tuple(out)
