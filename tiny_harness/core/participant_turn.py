"""The turn of a participant task: its assignee's answer completes it, with no model call.

``create_task_for_participant`` puts a question to a person as a child task assigned to them.
Such a task parks awaiting their answer from the start; the message that answers it is taken
by a turn like any other (so it is journaled, replayed after a crash, and in the history), but
the turn asks no model: it ends the task in COMPLETED with the answer as its status text,
which the parent reads as the child's result. Only the assignee answers: the decision refuses
anyone else's words before a turn starts (``core.speakers.refuse_answer``), and this loop takes
the assignee's message alone even if another arrived meanwhile.
"""

from __future__ import annotations

from tiny_harness.core.llm import ChatMessage
from tiny_harness.core.speakers import refuse_answer
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.tools import TurnTools
from tiny_harness.core.turn import DrainEntry, OutcomeKind, TurnHost, TurnInput, TurnOutcome


def answer_text(sender: str, answer: str) -> str:
    """The participant task's status text once answered: what the parent's model reads."""
    return f"answered by {sender}: {answer}"


class AnsweringLoop:
    """Runs the turns of participant tasks (see the module docstring)."""

    async def run_turn(
        self, host: TurnHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome:
        """Take the answer, if it has come (``tools`` are for the model: none is called)."""
        ref = turn.ref
        entry_id = ref.drain(0)
        recorded = next(
            (e for e in turn.journal if isinstance(e, DrainEntry) and e.id == entry_id), None
        )
        if recorded is None:
            inbound = [
                m
                for m in await host.drain()
                if m.sub_task is None
                and m.sender is not None
                and refuse_answer(turn.task, m.sender) is None
            ][:1]
            if inbound:
                recorded = DrainEntry(id=entry_id, messages=tuple(inbound))
                await host.checkpoint(recorded)
        history = list(turn.history)
        if recorded is None:
            outcome = TurnOutcome(
                kind=OutcomeKind.WAITING_FOR_ANSWER,
                state=TaskState.INPUT_REQUIRED,
                sub_state=SubState.AWAITING_ANSWER,
                text=turn.task.goal,
                message_id=f"{ref.prefix}/end",
                history=tuple(history),
            )
        else:
            answer = recorded.messages[0]
            history.append(ChatMessage(role="user", content=answer.content))
            outcome = TurnOutcome(
                kind=OutcomeKind.COMPLETED,
                state=TaskState.COMPLETED,
                text=answer_text(str(answer.sender), answer.content),
                message_id=f"{ref.prefix}/end",
                history=tuple(history),
            )
        await host.end_turn(outcome)
        return outcome
