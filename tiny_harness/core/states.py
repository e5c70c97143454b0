"""Task states, named as A2A's ``TaskState`` enum names them, and the sub-states we add.

The A2A state is the authoritative state of a task; the sub-state only refines
``TASK_STATE_INPUT_REQUIRED`` and is a free string on the wire so later values stay additive.
"""

from enum import StrEnum
from typing import Final


class TaskState(StrEnum):
    """The A2A task states, spelled as the protocol's enum value names."""

    SUBMITTED = "TASK_STATE_SUBMITTED"
    WORKING = "TASK_STATE_WORKING"
    INPUT_REQUIRED = "TASK_STATE_INPUT_REQUIRED"
    AUTH_REQUIRED = "TASK_STATE_AUTH_REQUIRED"
    COMPLETED = "TASK_STATE_COMPLETED"
    CANCELED = "TASK_STATE_CANCELED"
    FAILED = "TASK_STATE_FAILED"
    REJECTED = "TASK_STATE_REJECTED"

    @property
    def is_terminal(self) -> bool:
        return self in TERMINAL_STATES


TERMINAL_STATES: Final = frozenset(
    {TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED, TaskState.REJECTED}
)


class SubState(StrEnum):
    """The documented sub-states of ``TASK_STATE_INPUT_REQUIRED``.

    Readers must treat any other value as plain input-required: the field is a free string.
    """

    AWAITING_NEXT_MESSAGE = "awaiting-next-message"
    AWAITING_ANSWER = "awaiting-answer"
    AWAITING_BUDGET = "awaiting-budget"
    AWAITING_APPROVAL = "awaiting-approval"
