"""A question an agent put to a person, as the TUI shows it: a pure module.

A participant task (lifecycle ``participant``, made by ``create_task_for_participant``) is a
question that one person's answer completes. Whoever opens it must see at once whether the
question is theirs to answer and what to do about it, so every screen that shows one (the
tree's badge, the details, the composer's placeholder) reads it from one :class:`Question`.
"""

from __future__ import annotations

from dataclasses import dataclass

#: What the composer says when nothing more particular applies.
COMPOSER_PLACEHOLDER = "Say something, or / for commands"


@dataclass(frozen=True)
class Question:
    """A participant task as the screens show it: the question, whom it asks, whether that is
    the viewer, whether it still waits for the answer, and how it ended."""

    text: str
    #: Who answers it: the task's assignees (one, as ``create_task_for_participant`` makes it).
    asks: tuple[str, ...]
    mine: bool
    waiting: bool
    #: The status text the task ended with ("answered by carol: ..."), once it has ended.
    ending: str | None

    @property
    def whom(self) -> str:
        return " or ".join(self.asks) or "its assignee"

    @property
    def badge(self) -> str:
        """The mark beside the task wherever it is listed (the web UI says the same)."""
        return "question for you" if self.mine else f"asks {self.whom}"

    @property
    def title(self) -> str:
        return "Question for you" if self.mine else f"Question for {self.whom}"

    def guidance(self) -> str:
        """What the viewer can do about it now, or how it ended."""
        if self.ending is not None:
            return self.ending
        if not self.waiting:
            return "Taking your answer…" if self.mine else f"Taking {self.whom}'s answer…"
        if self.mine:
            return "Your answer completes this task: type it below and press enter."
        return (
            f"This task waits for {self.whom}'s answer: only theirs completes it, and a "
            "message from you does not answer it."
        )

    def placeholder(self) -> str:
        """The composer's placeholder: the assignee's answer, or a reminder to anyone else."""
        if not self.waiting:
            return COMPOSER_PLACEHOLDER
        if self.mine:
            return "Your answer (enter sends it and completes the task)"
        return f"Only {self.whom}'s answer completes this task; / for commands"
