"""The actions the decision tables answer with: one next step each, as plain data.

:func:`~tiny_harness.core.decide.decide` answers a pass of a task's worker with one
:data:`Action`, and :func:`~tiny_harness.core.decide.decide_during_turn` a change seen while a
turn runs with one :data:`DuringTurn`; the table that says which is in
:mod:`tiny_harness.core.decide`, and the operator carries each out (``operator/worker.py``,
``operator/endings.py``, ``operator/supervisor.py``). An action says *what* to do and carries
what is needed to do it (a message id, a number of seconds, a typed reason), never *whether*.
"""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum

from tiny_harness.core.states import TaskState

# -- between turns: decide ------------------------------------------------------------------------


@dataclass(frozen=True)
class Nothing:
    """Nothing to do until something changes."""


@dataclass(frozen=True)
class Initialise:
    """Accept (or reject) the new task and write its first status."""


@dataclass(frozen=True)
class AwaitRecords:
    """The status names a turn whose record this replica has not seen yet: wait for its event
    rather than act on a view that would take a message twice."""


@dataclass(frozen=True)
class WaitForLease:
    """Another replica runs a turn; look again when its lease would expire."""

    seconds: float


@dataclass(frozen=True)
class Refuse:
    """Record the message as taken and refused, with the reason its sender will see."""

    message_id: str
    reason: str


@dataclass(frozen=True)
class Acknowledge:
    """Record the message as taken: what it asked for is already so."""

    message_id: str


@dataclass(frozen=True)
class ApplyControl:
    """Complete or cancel the task, as a participant (or the parent) asked."""

    message_id: str


@dataclass(frozen=True)
class ApplyDecision:
    """Record the participant's decision on a call that waits for approval (again, when it
    was already recorded as it is: nothing changes but the answer to this message)."""

    message_id: str


@dataclass(frozen=True)
class TimeOutApprovals:
    """Decide the calls whose timeout has passed as their policy says (reject by default)."""


@dataclass(frozen=True)
class RunCommand:
    """Run the ``/command`` (no model call, no state change)."""

    message_id: str


@dataclass(frozen=True)
class RunTurn:
    """Run turn ``turn``; ``resume`` continues an open turn from its journal."""

    turn: int
    resume: bool


@dataclass(frozen=True)
class Park:
    """A conversation submitted without a message waits for one, without a model call;
    ``overdue``: the first message its creator announced did not come in time (the status
    text says so)."""

    overdue: bool = False


@dataclass(frozen=True)
class AwaitFirstMessage:
    """A new conversation whose announced first message has not been seen stays SUBMITTED;
    look again when the wait's bound runs out (the message's own event comes sooner)."""

    seconds: float


@dataclass(frozen=True)
class SyncRows:
    """Write the sub-task rows as the children now are."""


@dataclass(frozen=True)
class FailPastDeadline:
    """The task has worked for its whole activeDeadlineSeconds: fail it (DeadlineExceeded)."""


@dataclass(frozen=True)
class IdleEnded:
    """A conversation waited its whole idle timeout for its next message: end it as onIdle
    says (complete, when nothing holds it open; else cancel)."""

    complete: bool


@dataclass(frozen=True)
class EndWithParent:
    """The task's parent has ended and this task has not: cancel it (and its remote task,
    and so its own children), whatever the crash that lost the parent's cancel."""

    parent: str
    state: TaskState


@dataclass(frozen=True)
class GiveUpTurn:
    """The open turn has been started
    :data:`~tiny_harness.core.decide.MAX_TURN_ATTEMPTS` times and never finished: fail the
    task (TurnNotFinished) instead of asking the model again for the same step."""

    attempts: int


@dataclass(frozen=True)
class InputTimedOut:
    """No participant answered within inputTimeoutSeconds: fail the task (InputTimeout), or
    complete it when ``complete`` (onTimeout) and no sub-task holds it open."""

    complete: bool


@dataclass(frozen=True)
class WaitForInput:
    """Look again when the input timeout will have run out."""

    seconds: float


@dataclass(frozen=True)
class Collect:
    """Delete the ended task: its time to live after the end has passed."""


@dataclass(frozen=True)
class WaitToCollect:
    """Look again when the ended task's time to live will have passed."""

    seconds: float


Action = (
    Nothing
    | Initialise
    | AwaitRecords
    | WaitForLease
    | Refuse
    | Acknowledge
    | ApplyControl
    | ApplyDecision
    | TimeOutApprovals
    | RunCommand
    | RunTurn
    | Park
    | AwaitFirstMessage
    | SyncRows
    | Collect
    | WaitToCollect
    | FailPastDeadline
    | GiveUpTurn
    | EndWithParent
    | IdleEnded
    | InputTimedOut
    | WaitForInput
)


# -- while a turn runs: decide_during_turn --------------------------------------------------------


class CutReason(StrEnum):
    """Why a running turn is cut. The first reason given wins; later ones change nothing."""

    #: This replica can no longer be sure it holds the runner lease: another may run the turn.
    LEASE = "lease"
    #: The task has worked its whole activeDeadlineSeconds.
    DEADLINE = "deadline"
    #: A participant's (or the parent's) complete or cancel, to be applied by the next pass.
    CONTROL = "control"
    #: The task was deleted: nothing of the turn is to be written.
    GONE = "gone"
    #: The task's parent has ended: the next pass cancels this task (row 4a).
    PARENT = "parent"


@dataclass(frozen=True)
class CutTurn:
    reason: CutReason


@dataclass(frozen=True)
class RunCommandNow:
    """Run the command beside the turn, under its fence; the turn's model call goes on."""

    message_id: str


@dataclass(frozen=True)
class SyncRowsNow:
    """Write the sub-task rows as the children now are, under the turn's lease."""


@dataclass(frozen=True)
class KeepGoing:
    """Nothing for the running turn to do until something changes."""


DuringTurn = CutTurn | RunCommandNow | SyncRowsNow | KeepGoing
