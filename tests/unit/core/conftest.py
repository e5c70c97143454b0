"""Plain fakes for the core loop's unit tests: a scripted model and an in-memory host.

The loop's logic is pure apart from its two ports, so these stand-ins are all it needs: the
model plays scripted responses and records every request, and the host keeps the journal, the
inbox and the children in memory, following the :class:`~tiny_harness.core.turn.TurnHost`
contract (items stay in the inbox until a checkpointed drain entry names them; spawning is
idempotent by intent id). Tests import them with ``from .conftest import ...``.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Awaitable, Callable, Sequence
from typing import Any

import pytest

from tiny_harness.core.llm import LLMRequest, LLMResponse, ToolCall, Usage
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, SubTaskRow, TaskExtension
from tiny_harness.core.turn import (
    DrainEntry,
    InboundMessage,
    JournalEntry,
    ReplyIntent,
    SpawnIntent,
    TaskSettings,
    TurnOutcome,
)

#: A scripted step: a response, or a function of the request (which may wait, or raise).
Step = LLMResponse | Callable[[LLMRequest], Awaitable[LLMResponse] | LLMResponse]


def reply(text: str) -> LLMResponse:
    """A response with text and no tool call: the turn may end."""
    return LLMResponse(text=text, model="fake-model", usage=Usage(input_tokens=10, output_tokens=5))


def calls(*tool_calls: tuple[str, dict[str, Any] | str], text: str = "") -> LLMResponse:
    """A response asking for tool calls, each ``(name, arguments)``; ids are ``call-<n>``."""
    built = tuple(
        ToolCall(
            id=f"call-{i}",
            name=name,
            arguments_json=args if isinstance(args, str) else json.dumps(args),
        )
        for i, (name, args) in enumerate(tool_calls)
    )
    return LLMResponse(text=text, tool_calls=built, model="fake-model")


class ScriptedModel:
    """A ModelAdapter that plays a script and records the requests it was sent."""

    default_model = "fake-model"

    def __init__(self, *script: Step) -> None:
        self.script = list(script)
        self.requests: list[LLMRequest] = []

    def then(self, *script: Step) -> ScriptedModel:
        self.script.extend(script)
        return self

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.requests.append(request)
        if not self.script:
            raise AssertionError(
                f"the model was called {len(self.requests)} times, more than scripted"
            )
        step = self.script.pop(0)
        if isinstance(step, LLMResponse):
            return step
        result = step(request)
        if isinstance(result, LLMResponse):
            return result
        return await result


class HostCrashed(Exception):
    """The fake host 'dies' (as a SIGKILLed operator would) instead of checkpointing."""


class MemoryHost:
    """A TurnHost in memory, recording everything the loop asked of it."""

    def __init__(
        self,
        *,
        settings: TaskSettings | None = None,
        journal: Sequence[JournalEntry] = (),
        crash_after: int | None = None,
    ) -> None:
        self.current_settings = settings or TaskSettings()
        self.journal: list[JournalEntry] = list(journal)
        self.crash_after = crash_after
        self.inbox: list[InboundMessage] = []
        self.acked: set[str] = set()
        self.children: dict[str, str] = {}
        self.spawn_requests: list[SpawnIntent] = []
        self.replies: list[ReplyIntent] = []
        #: What reply() answers: None (sent), or why not.
        self.reply_refusal: str | None = None
        self.outcomes: list[TurnOutcome] = []
        self.drains = 0

    # -- test helpers --

    def send(self, content: str, sender: str = "alice") -> InboundMessage:
        message = InboundMessage(id=f"msg-{len(self.inbox)}", content=content, sender=sender)
        self.inbox.append(message)
        return message

    def sub_task_news(self, row: SubTaskRow, result: str) -> InboundMessage:
        message = InboundMessage(id=f"news-{len(self.inbox)}", content=result, sub_task=row)
        self.inbox.append(message)
        return message

    @property
    def outcome(self) -> TurnOutcome:
        assert len(self.outcomes) == 1, f"end_turn was called {len(self.outcomes)} times"
        return self.outcomes[0]

    # -- the TurnHost protocol --

    async def settings(self) -> TaskSettings:
        return self.current_settings

    async def drain(self) -> Sequence[InboundMessage]:
        self.drains += 1
        return [m for m in self.inbox if m.id not in self.acked]

    async def checkpoint(self, entry: JournalEntry) -> None:
        if self.crash_after is not None and len(self.journal) >= self.crash_after:
            raise HostCrashed(f"killed before checkpointing {entry.id}")
        self.journal.append(entry)
        if isinstance(entry, DrainEntry):
            self.acked.update(m.id for m in entry.messages)

    async def spawn(self, intent: SpawnIntent) -> str:
        self.spawn_requests.append(intent)
        if intent.id not in self.children:
            self.children[intent.id] = f"{intent.parent_task_id}-child-{len(self.children) + 1}"
        return self.children[intent.id]

    async def reply(self, intent: ReplyIntent) -> str | None:
        self.replies.append(intent)
        return self.reply_refusal

    async def end_turn(self, outcome: TurnOutcome) -> None:
        self.outcomes.append(outcome)


def conversation(goal: str = "Help alice plan a trip", **fields: Any) -> TaskExtension:
    return TaskExtension(goal=goal, lifecycle=Lifecycle.CONVERSATION, **fields)


def delegated(goal: str = "Summarise the quarterly report", **fields: Any) -> TaskExtension:
    return TaskExtension(goal=goal, lifecycle=Lifecycle.DELEGATED, **fields)


def child_row(task_id: str, state: TaskState, *, unread: bool = False) -> SubTaskRow:
    return SubTaskRow(task_id=task_id, goal=f"goal of {task_id}", state=state, result_unread=unread)


@pytest.fixture
def host() -> MemoryHost:
    return MemoryHost()


@pytest.fixture
def gate() -> asyncio.Event:
    """An event a scripted step can wait on, to hold the loop mid-turn."""
    return asyncio.Event()
