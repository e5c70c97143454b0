"""One turn of the core loop as data: its input, its journal, its outcome, and the host it runs in.

The operator must be able to SIGKILL a turn at any moment and run it again without repeating a
side effect. So the loop never keeps progress only in memory: every step that reaches outside
the process (a model call, a tool call, a spawned sub-task, messages taken from the inbox, a
compaction) is recorded as a small JSON-serialisable :data:`JournalEntry` under a deterministic
id, and handed to the host to checkpoint before the loop moves on. Run again with the journal
saved so far, the loop replays those entries instead of doing the steps again.

Ids name the step by its place in the turn, never by time or chance::

    t1/turn-3/drain-0             messages taken from the inbox before model call 0
    t1/turn-3/compact-0           the history compacted before model call 0
    t1/turn-3/model-0             model call 0 of the turn
    t1/turn-3/tool-0-call_abc     the turn's first tool call (the model's call id at the end)

A spawn intent carries its tool call's id, so a host can create the child idempotently (for
example by deriving the child's name from it).

The host is whatever runs the loop: the kopf operator in production, a plain in-memory fake in
unit tests. :class:`TurnHost` is everything the loop asks of it.
"""

from __future__ import annotations

from collections.abc import Sequence
from enum import StrEnum
from typing import Annotated, Literal, NamedTuple, Protocol

from pydantic import BaseModel, ConfigDict, Field, TypeAdapter

from tiny_harness.core.agent import AgentChoice
from tiny_harness.core.approval import Decision, Gates, PendingApproval, Requirement
from tiny_harness.core.artifact_index import ArtifactChunk, ArtifactRow
from tiny_harness.core.attachments import Attachment
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.llm import ChatMessage, LLMResponse, Usage
from tiny_harness.core.plan import Plan
from tiny_harness.core.reach import Reach
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import (
    Budget,
    Effort,
    Lifecycle,
    SubTaskRow,
    TaskExtension,
    TaskUsage,
)


class _Data(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class TaskSettings(_Data):
    """The model settings a task's model calls use now; ``None`` means the default."""

    model: str | None = None
    reasoning_effort: Effort | None = None


class InboundMessage(_Data):
    """Something that arrived for the task while it was working, as :meth:`TurnHost.drain`
    hands it out.

    Either a participant's message (``sender`` set) or a sub-task's news (``sub_task`` set: the
    child's row as it is now, with the child's result or status text as ``content``). The host
    keeps handing an item out until it sees the item's ``id`` in a checkpointed
    :class:`DrainEntry`, so a crash between the two never loses it.
    """

    id: str = Field(min_length=1, description="Unique per task; the host acknowledges by id.")
    content: str = ""
    sender: str | None = Field(default=None, description="The participant who sent it.")
    sub_task: SubTaskRow | None = Field(
        default=None, description="Set for a sub-task's news: the child's row as it is now."
    )
    files: tuple[Attachment, ...] = Field(
        default=(), description="A participant's files, given to the model beside ``content``."
    )

    def said(self) -> ChatMessage:
        """A participant's message as the model is given it: its text and its files (every
        place that puts a message in a history asks here, so none drops the files)."""
        return ChatMessage(role="user", content=self.content, files=self.files)


class SpawnIntent(_Data):
    """A child task to create. The host creates it (once per ``id``) and returns its task id.

    The host copies the parent's model and reasoning effort into a child on this harness.
    """

    id: str = Field(description="The deterministic id of the step asking; the idempotency key.")
    parent_task_id: str
    goal: str = Field(min_length=1)
    description: str = ""
    lifecycle: Lifecycle = Lifecycle.DELEGATED
    step: str | None = Field(default=None, description="The plan step the child is linked from.")
    agent: str | None = Field(
        default=None, description="The remote agent (HarnessAgent) to run it; None: this one."
    )
    assignee: str | None = Field(
        default=None,
        description="A participant task's person: its assignee, whose answer completes it.",
    )


class ReplyIntent(_Data):
    """A message for one of the task's sub-tasks (the answer to its question). The host sends
    it once per ``id``: a reply whose entry was not yet checkpointed is asked for again after a
    crash, and must not reach the sub-task twice."""

    id: str = Field(description="The deterministic id of the step asking; the message's id.")
    task_id: str = Field(min_length=1, description="The sub-task it goes to.")
    text: str = Field(min_length=1)


# -- the journal ----------------------------------------------------------------------------------


class ModelEntry(_Data):
    """A model call and its response. ``read_sub_tasks`` names the sub-tasks whose news this
    call was the first to see, so the host can clear their ``result_unread``."""

    kind: Literal["model"] = "model"
    id: str
    response: LLMResponse
    read_sub_tasks: tuple[str, ...] = ()


class ToolEntry(_Data):
    """A tool call and the result the model gets. For an intrinsic, the change it made: the new
    ``plan``, the ``spawned`` child's row, the ``question`` that parks the task, or the
    ``artifact`` chunk it published (whose parts are kept here, and only here)."""

    kind: Literal["tool"] = "tool"
    id: str
    call_id: str
    name: str
    content: str
    is_error: bool = False
    plan: Plan | None = None
    spawned: SubTaskRow | None = None
    question: str | None = None
    artifact: ArtifactChunk | None = None

    def message(self) -> ChatMessage:
        return ChatMessage(
            role="tool", content=self.content, tool_call_id=self.call_id, is_error=self.is_error
        )


class AwaitEntry(_Data):
    """A tool call that needs approval, parked in the tool step's place (``id``) instead of
    its result: what the model asked, what the call needs, and when its timeout acts (the
    clock read once, here, so a replay parks it with the same deadline)."""

    kind: Literal["await"] = "await"
    id: str
    #: The call's id in its park (unique there: ``core.approval.distinct_call_ids``).
    call_id: str
    name: str
    arguments_json: str = "{}"
    requirement: Requirement
    expires_at: str
    #: The park the call waits in (``core.approval.new_park``); empty in an older journal.
    park: str = ""
    #: The model's id of the call, when it differs from ``call_id``: its result answers it.
    model_call_id: str | None = None


class DecidedCall(_Data):
    """A parked call with its decision, as the next turn takes it: the call as the model
    asked it (from its :class:`AwaitEntry`) and what was decided."""

    call_id: str
    name: str
    arguments_json: str = "{}"
    decision: Decision
    #: The model's id of the call, when the harness gave it another: its result answers it.
    model_call_id: str | None = None
    #: For a call mirrored from a remote task: the park there the relayed decision names.
    relay_park: str | None = None

    @property
    def answers(self) -> str:
        """The id the call's result is given under: the model's own."""
        return self.model_call_id or self.call_id


class RemoteReply(_Data):
    """A message a remote agent said (an agent message or an artifact's text), once."""

    id: str = Field(description="Its id here: the remote message's, prefixed (remote:, artifact:).")
    text: str


class RemoteSentEntry(_Data):
    """What a sub-task on a remote agent sent it: the A2A message (its id is the drain's, so a
    resend after a crash is the same message), the remote task it went to, and the status
    message the remote task showed before (its answer is a different one, or an end)."""

    kind: Literal["remote_sent"] = "remote_sent"
    id: str
    message_id: str
    task_id: str = Field(description="The remote task's id, on its agent.")
    context_id: str = ""
    before: str = Field(default="", description="The remote status message id before the send.")


class RemoteStatusEntry(_Data):
    """The remote task as last seen: its state, sub-state and status message, and what its
    agent said since the previous such entry."""

    kind: Literal["remote_status"] = "remote_status"
    id: str
    state: TaskState
    sub_state: str | None = None
    message_id: str = ""
    text: str = ""
    replies: tuple[RemoteReply, ...] = ()


class RemoteArtifactEntry(_Data):
    """A chunk of a remote task's artifact, kept as an artifact of the sub-task that mirrors
    it: its parts are here, as a publish's are in its tool entry, and the sub-task's index
    names this entry (``core/artifact_index.py``). ``digest`` is the artifact's content as of this
    chunk, so a poll that shows the same artifact again keeps nothing twice."""

    kind: Literal["remote_artifact"] = "remote_artifact"
    id: str
    artifact: ArtifactChunk
    digest: str


class RemoteRef(_Data):
    """Where a task's conversation with its remote agent stands after its earlier turns: the
    remote task (None: none yet, the brief creates it), and its last status seen."""

    task_id: str | None = None
    context_id: str = ""
    message_id: str = ""
    state: TaskState | None = None
    sub_state: str | None = None
    text: str = ""
    said: tuple[str, ...] = Field(
        default=(), description="The ids of what the remote agent said, mirrored already."
    )
    artifacts: dict[str, str] = Field(
        default_factory=dict,
        description="The remote artifacts kept already: each one's content digest, by its id.",
    )


class DrainEntry(_Data):
    """Messages and sub-task news taken from the inbox at one drain point (never empty)."""

    kind: Literal["drain"] = "drain"
    id: str
    messages: tuple[InboundMessage, ...]


class CompactionEntry(_Data):
    """The first ``replaced`` history messages were replaced by ``summary``."""

    kind: Literal["compaction"] = "compaction"
    id: str
    summary: str
    replaced: int = Field(ge=1)
    usage: Usage = Usage()


JournalEntry = Annotated[
    ModelEntry
    | ToolEntry
    | AwaitEntry
    | DrainEntry
    | CompactionEntry
    | RemoteSentEntry
    | RemoteStatusEntry
    | RemoteArtifactEntry,
    Field(discriminator="kind"),
]

_JOURNAL: TypeAdapter[tuple[JournalEntry, ...]] = TypeAdapter(tuple[JournalEntry, ...])


def dump_journal(entries: Sequence[JournalEntry]) -> str:
    """The journal as JSON text, to store in the Kubernetes API."""
    return _JOURNAL.dump_json(tuple(entries)).decode()


def load_journal(text: str | bytes) -> tuple[JournalEntry, ...]:
    """A journal from its JSON text (the inverse of :func:`dump_journal`)."""
    return _JOURNAL.validate_json(text)


class TurnRef(NamedTuple):
    """Which turn of which task: the prefix of every id the turn uses."""

    task_id: str
    turn: int

    @property
    def prefix(self) -> str:
        return f"{self.task_id}/turn-{self.turn}"

    def model(self, index: int) -> str:
        return f"{self.prefix}/model-{index}"

    def tool(self, index: int, call_id: str) -> str:
        return f"{self.prefix}/tool-{index}-{call_id}"

    def drain(self, index: int) -> str:
        return f"{self.prefix}/drain-{index}"

    def compaction(self, index: int) -> str:
        return f"{self.prefix}/compact-{index}"


class JournalMismatchError(HarnessError):
    """A saved journal does not follow the path the turn takes when replayed.

    It means the code or the turn's input changed since the journal was written.
    """

    def __init__(self, turn: str, position: int, expected: str, found: str) -> None:
        super().__init__(
            f"the journal of {turn} does not match the turn at entry {position}: expected "
            f"{expected}, found {found}. Start the turn again from the same input, or discard "
            "its journal to re-run it from the beginning (which repeats the steps it recorded)"
        )
        self.turn = turn
        self.position = position
        self.expected = expected
        self.found = found


# -- input and outcome ----------------------------------------------------------------------------


class TurnInput(_Data):
    """What the host gives the loop to run one turn."""

    task_id: str = Field(min_length=1)
    turn: int = Field(ge=0, description="The turn number; part of every id in the turn.")
    task: TaskExtension = Field(description="The task as it stood when the turn started.")
    history: tuple[ChatMessage, ...] = Field(
        default=(), description="The model history as persisted by the previous turn."
    )
    journal: tuple[JournalEntry, ...] = Field(
        default=(), description="Entries already checkpointed for this turn (empty on a first run)."
    )
    budget: Budget | None = Field(
        default=None, description="The most the task may use; None: no limit."
    )
    used: TaskUsage = Field(
        default_factory=TaskUsage,
        description="What the task (its sub-tasks included) had used when the turn started.",
    )
    agents: tuple[AgentChoice, ...] = Field(
        default=(), description="The remote agents spawn_subtask may hand work to."
    )
    remote: RemoteRef | None = Field(
        default=None,
        description="For a task on a remote agent: its conversation there, as of the turn's start.",
    )
    gates: Gates = Field(
        default_factory=Gates, description="Which calls wait for a participant's approval."
    )
    decided: tuple[DecidedCall, ...] = Field(
        default=(),
        description="The calls an earlier turn parked, each with its decision: this turn runs "
        "(or answers) them before anything else.",
    )
    reach: Reach = Field(
        default_factory=Reach,
        description="Whom the model may create a task for besides the task's participants, "
        "and where the task stands in its tree (core/reach.py).",
    )

    @property
    def ref(self) -> TurnRef:
        return TurnRef(self.task_id, self.turn)


class OutcomeKind(StrEnum):
    """How a turn ended."""

    COMPLETED = "completed"
    WAITING_FOR_MESSAGE = "waiting_for_message"
    WAITING_FOR_ANSWER = "waiting_for_answer"
    WAITING_FOR_SUBTASKS = "waiting_for_subtasks"
    MAX_MODEL_CALLS = "max_model_calls"
    OVER_BUDGET = "over_budget"  # parked until the budget is raised
    BUDGET_EXCEEDED = "budget_exceeded"  # failed: the budget says so
    REMOTE_ENDED = "remote_ended"  # the remote agent's task ended other than completed
    WAITING_FOR_APPROVAL = "waiting_for_approval"  # calls wait for a participant's decision


class TurnOutcome(_Data):
    """The end of a turn: the state the task settles in, and everything the host persists."""

    kind: OutcomeKind
    state: TaskState
    sub_state: SubState | None = None
    text: str = Field(default="", description="The status message: the agent's reply.")
    message_id: str = Field(
        default="",
        description="The status message's id: the reply's own entry id when the text is the "
        "model's reply as the history holds it, else an id for this turn's end.",
    )
    history: tuple[ChatMessage, ...] = Field(description="The whole history after the turn.")
    plan: Plan | None = None
    sub_tasks: tuple[SubTaskRow, ...] = ()
    model_calls: int = 0
    usage: Usage = Usage()
    approvals: tuple[PendingApproval, ...] = Field(
        default=(), description="The calls that wait for a decision (WAITING_FOR_APPROVAL)."
    )
    artifacts: tuple[ArtifactRow, ...] | None = Field(
        default=None,
        description="The task's artifact index after the turn, when the turn published a "
        "chunk (None: unchanged).",
    )


# -- the host -------------------------------------------------------------------------------------


class TurnHost(Protocol):
    """What the loop asks of whatever runs it. Every operation is async and may do I/O."""

    async def settings(self) -> TaskSettings:
        """The task's model and effort now. Read before each model request, so a ``/model``
        that lands mid-turn applies from the next request."""
        ...

    async def drain(self) -> Sequence[InboundMessage]:
        """New participant messages and sub-task news, oldest first.

        Called at each drain point: before each model call, and once more before the turn
        settles. Items stay pending until their ids appear in a checkpointed :class:`DrainEntry`.
        """
        ...

    async def checkpoint(self, entry: JournalEntry) -> None:
        """Durably record ``entry`` in this turn's journal before the loop goes on.

        The loop treats a failure here as fatal for the turn; the host re-runs the turn later
        with the entries it did record.
        """
        ...

    async def spawn(self, intent: SpawnIntent) -> str:
        """Create the child task ``intent`` describes and return its task id.

        Must be idempotent by ``intent.id``: a spawn whose entry was not yet checkpointed is
        asked for again after a crash, and must return the same child.
        """
        ...

    async def reply(self, intent: ReplyIntent) -> str | None:
        """Send the sub-task ``intent.task_id`` the message; None when it went, else why not
        (for the model: the sub-task takes no messages from this task, say). Idempotent by
        ``intent.id``."""
        ...

    async def end_turn(self, outcome: TurnOutcome) -> None:
        """Settle the task as ``outcome`` says and persist its history, plan and sub-task rows;
        the turn's journal may then be dropped. Called once, last; must be idempotent, as a
        crash right after it replays the turn and calls it again with the same outcome."""
        ...


def max_calls_text(limit: int) -> str:
    """What participants read when a turn stops at ``max_model_calls``."""
    return (
        f"This turn stopped after {limit} model calls, the most one turn may make "
        "(max_model_calls). Send a message to let the agent continue."
    )
