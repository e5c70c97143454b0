"""Who may do what to a task, decided before anything is written, with the SDK's error types.

The operator checks the same rules again when it takes a message (it records a refused one in
the journal), so these checks are what keeps a refusal from ever reaching the cluster, and what
lets a client hear the refusal as an A2A error instead of a note in the history. Each check
takes the task as the request read it once (a typed
:class:`~tiny_harness.kube.participant_view.ParticipantView`), and each refusal carries its code
(:mod:`tiny_harness.core.reason_codes`):

- a caller who is not on a task is told it does not exist (the store's reads are scoped);
- a watcher may not complete or cancel a task;
- nothing is sent to a task that has ended: "the task is in a terminal state (TASK_STATE_...)";
- a task envelope that sets a server-controlled field (lifecycle, model, reasoning_effort) is
  refused whole, and on a first message no task is created.
"""

from __future__ import annotations

from typing import Final

from a2a.server.context import ServerCallContext
from a2a.types import Message, TaskState
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from pydantic import ValidationError

from tiny_harness.a2a_gateway.identity import participant_of
from tiny_harness.core.a2a_task import state_to_a2a
from tiny_harness.core.errors import TerminalTaskError
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.speakers import parent_sender, refuse_ending
from tiny_harness.core.task import TEXT_MAX, Participant, Role, TaskSpec, invalid_task_error
from tiny_harness.kube.participant_view import ParticipantView


def caller(context: ServerCallContext) -> str:
    """The participant making the call. The gateway's middleware refuses anonymous calls, so
    this only fails when the handler is used without it."""
    participant = participant_of(context)
    if participant is None:
        raise coded(
            InvalidRequestError, ReasonCode.UNAUTHENTICATED, "the call names no participant"
        )
    return participant


def refuse_if_ended(
    task: ParticipantView, error: type[A2AError] = UnsupportedOperationError
) -> None:
    """Refuse with ``error`` (code ``task_ended``) when the task has ended for good, naming
    its state; a failed conversation has not (the operator's rule,
    :attr:`.participant_view.ParticipantView.ended_for_good`)."""
    if task.ended_for_good:
        ended = TerminalTaskError(TaskState.Name(state_to_a2a(task.state)))
        raise coded(error, ReasonCode.TASK_ENDED, str(ended))


def require_ending_role(task: ParticipantView, participant: str, action: str) -> None:
    """Refuse a participant who may not ``action`` (complete, cancel) the task, by the
    operator's own rule (:func:`tiny_harness.core.speakers.refuse_ending`); someone not on the
    task is told it does not exist, as for every other call."""
    spec = task.spec
    if spec is None or (spec.role_of(participant) is None and participant != parent_sender(spec)):
        raise coded(TaskNotFoundError, ReasonCode.TASK_NOT_FOUND, f"task {task.name!r} not found")
    refused = refuse_ending(spec, participant, action)
    if refused is not None:
        raise coded(
            UnsupportedOperationError,
            ReasonCode.ROLE_REFUSED,
            f"{refused}; ask its assignee or reporter",
        )


def validate_status_filter(raw: object) -> None:
    """Refuse a ``ListTasks`` status filter that is not a task state.

    ``raw`` is the value as the client sent it (None when it sent none): the SDK's lenient
    parse turns an unknown state into "no filter", which would answer with every task.
    """
    if raw is None or raw == "":
        return
    if isinstance(raw, str) and (raw in _STATE_NAMES or (raw.isdigit() and int(raw) in _STATES)):
        return
    if isinstance(raw, int) and not isinstance(raw, bool) and raw in _STATES:
        return
    names = sorted(_STATE_NAMES - {"TASK_STATE_UNSPECIFIED"})
    raise coded(
        InvalidParamsError,
        ReasonCode.INVALID_PARAMS,
        f"status: {raw!r} is not a task state; use one of {', '.join(names)}",
    )


_STATE_NAMES: Final = frozenset(TaskState.keys())
_STATES: Final = frozenset(TaskState.values())


def first_task_spec(envelope: TaskSpec | None, sender: str, message: Message) -> TaskSpec:
    """The spec of the task a first message creates.

    The sender always ends up on the task: as its assignee when nobody else is named, and as a
    reporter when the envelope names participants without them (they asked for the work, and
    keep access to it). Without an envelope the goal is the message's text.
    """
    if envelope is None:
        text = "\n".join(p.text for p in message.parts if p.HasField("text")).strip()
        return TaskSpec(
            goal=text[:TEXT_MAX] or f"A conversation started by {sender}.",
            participants=(Participant(id=sender, role=Role.ASSIGNEE),),
        )
    if not envelope.participants:
        participants: tuple[Participant, ...] = (Participant(id=sender, role=Role.ASSIGNEE),)
    elif envelope.role_of(sender) is None:
        participants = (*envelope.participants, Participant(id=sender, role=Role.REPORTER))
    else:
        return envelope
    try:
        return TaskSpec.model_validate({**dict(envelope), "participants": participants})
    except ValidationError as exc:
        problem = str(invalid_task_error(exc))
        raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, problem) from None
