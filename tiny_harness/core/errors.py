"""Typed errors raised by the domain, each with a message a user can act on.

Hosts translate them at their boundary (an A2A error, a kubectl-style message, a Kubernetes
condition); the domain never knows which.
"""

from collections.abc import Sequence


class HarnessError(Exception):
    """Base of every error tiny-harness raises on purpose."""


class InvalidTaskError(HarnessError, ValueError):
    """Task content that cannot be accepted; ``field`` names what to fix."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class ServerControlledFieldError(HarnessError):
    """An envelope tried to set a field only the server may set (lifecycle, model, effort)."""

    def __init__(self, fields: Sequence[str]) -> None:
        names = ", ".join(sorted(fields))
        super().__init__(
            f"the task envelope sets server-controlled field(s) {names}; remove them "
            "(use /model or /effort to change the model settings)"
        )
        self.fields = tuple(sorted(fields))


class PlanError(HarnessError, ValueError):
    """A plan or a plan operation that cannot be applied."""


class PlanCycleError(PlanError):
    """The plan's dependencies form a cycle; ``cycle`` lists it, first step repeated at the end."""

    def __init__(self, cycle: Sequence[str]) -> None:
        super().__init__("the plan has a dependency cycle: " + " -> ".join(cycle))
        self.cycle = tuple(cycle)


class InvalidEnvelopeError(HarnessError, ValueError):
    """An event envelope (a control message) that cannot be accepted; nothing was applied."""

    def __init__(self, problem: str) -> None:
        super().__init__(
            f"invalid event envelope: {problem}; "
            'a completion is {"kind": "control", "action": "complete"} and nothing else'
        )
        self.problem = problem


class InvalidExtensionError(HarnessError, ValueError):
    """Extension data (status metadata, card params) not in its documented shape.

    ``field`` names the offending value, starting from the metadata key or the card extension.
    """

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.reason = message


class TerminalTaskError(HarnessError):
    """The task has ended; nothing more may be sent to it."""

    def __init__(self, state: str) -> None:
        super().__init__(f"the task is in a terminal state ({state})")
        self.state = state


class TaskNotFoundError(HarnessError):
    """The task does not exist, or the caller may not know that it does."""

    def __init__(self, task_id: str) -> None:
        super().__init__(f"task {task_id!r} not found")
        self.task_id = task_id


class NotPermittedError(HarnessError):
    """The caller is on the task but their role does not allow this action."""


class ConfigError(HarnessError):
    """Invalid configuration; ``key`` names the setting to fix."""

    def __init__(self, key: str, message: str) -> None:
        super().__init__(f"{key}: {message}")
        self.key = key
