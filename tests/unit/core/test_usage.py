"""What a task has used, summed from its journals (``core/usage.py``)."""

from __future__ import annotations

from dataclasses import dataclass, field

from tiny_harness.core.history import RecordEntry
from tiny_harness.core.llm import LLMResponse, ToolCall, Usage
from tiny_harness.core.task import TaskUsage
from tiny_harness.core.turn import CompactionEntry, ModelEntry, ToolEntry
from tiny_harness.core.usage import total, usage_of


@dataclass
class Record:
    turn: int
    entries: list[RecordEntry] = field(default_factory=list)


def call(entry_id: str, tokens_in: int, tokens_out: int, tools: int = 0) -> ModelEntry:
    calls = tuple(ToolCall(id=f"{entry_id}-t{i}", name="look") for i in range(tools))
    usage = Usage(
        input_tokens=tokens_in, output_tokens=tokens_out, cached_input_tokens=tokens_in // 2
    )
    response = LLMResponse(text="ok", tool_calls=calls, usage=usage)
    return ModelEntry(id=entry_id, response=response)


def test_every_model_call_and_tool_call_is_counted_once_however_often_a_turn_resumed() -> None:
    first = call("t/turn-1/model-0", 100, 10, tools=1)
    tool = ToolEntry(id="t/turn-1/tool-0", call_id="t0", name="look", content="seen")
    again = [first, tool]  # the same entries in the record of the resumed attempt
    records = [
        Record(1, [first, tool]),
        Record(1, again),
        Record(2, [call("t/turn-2/model-0", 200, 20)]),
        Record(2, [CompactionEntry(id="t/turn-2/compact-0", summary="s", replaced=2,
                                   usage=Usage(input_tokens=50, output_tokens=5))]),
    ]  # fmt: skip

    used = usage_of(records)

    assert used == TaskUsage(
        model_calls=3, input_tokens=350, output_tokens=35, cached_input_tokens=150, tool_calls=1
    )
    assert used.text() == "3 model calls, 350 tokens in (150 cached), 35 out, 1 tool call"


def test_a_total_adds_the_sub_tasks_and_treats_none_as_nothing() -> None:
    own = TaskUsage(model_calls=1, input_tokens=10, output_tokens=1)
    assert total(own, None) == own
    assert total(None, own) == own
    assert total(own, own).input_tokens == 20
