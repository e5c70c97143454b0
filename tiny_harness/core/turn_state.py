"""The state of one turn as it runs, shared by its steps and rebuilt identically on replay.

The loop (:mod:`tiny_harness.core.loop`) runs a turn's steps in order: drain points, model calls
(:mod:`tiny_harness.core.model_steps`) and tool calls (:mod:`tiny_harness.core.tool_steps`).
Each step reads and changes the same few things: the history the model sees, the task as the
turn has changed it (its plan, its sub-task rows, its artifacts), the counters that give every
step its id, and the usage so far. They are kept here, in one object the steps share, and only
ever changed from a step's journal entry, so a replayed turn arrives at the same state.
"""

from __future__ import annotations

from tiny_harness.core.intrinsics import with_row
from tiny_harness.core.llm import ChatMessage, Usage
from tiny_harness.core.replay import Replay
from tiny_harness.core.task import SubTaskRow, TaskUsage
from tiny_harness.core.turn import AwaitEntry, TurnInput


class TurnState:
    """What the steps of one turn have made of it so far."""

    def __init__(self, turn: TurnInput) -> None:
        self.ref = turn.ref
        self.task = turn.task
        self.history: list[ChatMessage] = list(turn.history)
        self.replay = Replay(self.ref, turn.journal)
        self.model_calls = 0
        self.tool_index = 0
        self.drain_index = 0
        #: Sub-tasks whose result the history shows and the next model call reads.
        self.pending_reads: list[str] = []
        #: The questions this turn's ``ask_participant`` calls asked.
        self.questions: list[str] = []
        #: The calls of this turn parked for approval.
        self.awaiting: list[AwaitEntry] = []
        self.input_tokens = 0
        self.output_tokens = 0
        self.published = False
        #: The index already holds this turn's chunks: the turn's end was written, and this is
        #: its replay after a crash (the status is written at a turn's end and only then).
        self.indexed = any(
            ref.turn == turn.turn for row in turn.task.artifacts for ref in row.chunks
        )

    def put_row(self, row: SubTaskRow) -> None:
        self.task = with_row(self.task, row)

    def count(self, usage: Usage) -> None:
        self.input_tokens += usage.input_tokens
        self.output_tokens += usage.output_tokens

    @property
    def usage(self) -> Usage:
        return Usage(input_tokens=self.input_tokens, output_tokens=self.output_tokens)

    def used_with(self, before: TaskUsage) -> TaskUsage:
        """What the task has used: ``before`` the turn, and this turn so far."""
        return before + TaskUsage(
            model_calls=self.model_calls,
            input_tokens=self.input_tokens,
            output_tokens=self.output_tokens,
        )

    def has_input(self) -> bool:
        if not self.history:
            return False
        last = self.history[-1]
        return not (last.role == "assistant" and not last.tool_calls)

    def last_reply(self) -> str:
        for message in reversed(self.history):
            if message.role == "assistant":
                return message.content
        return ""
