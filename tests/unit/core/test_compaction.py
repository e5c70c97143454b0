"""Compaction: an over-budget history is summarised through the same model and continues as the
summary plus the recent tail, never parting a tool call from its results."""

from __future__ import annotations

import base64

from hypothesis import given
from hypothesis import strategies as st

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.compaction import (
    CHARS_PER_TOKEN,
    IMAGE_TOKENS,
    NOTE_TOKENS,
    SUMMARY_PREFIX,
    SUMMARY_SYSTEM,
    URL_PDF_TOKENS,
    FixedContextWindow,
    compacted_history,
    estimate_file_tokens,
    estimate_message_tokens,
    estimate_tokens,
    summary_request,
    tail_start,
)
from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.loop_config import LoopConfig
from tiny_harness.core.turn import CompactionEntry, TaskSettings, TurnInput

from .conftest import MemoryHost, ScriptedModel, conversation, reply


def user(text: str) -> ChatMessage:
    return ChatMessage(role="user", content=text)


def assistant(text: str, *call_ids: str) -> ChatMessage:
    return ChatMessage(
        role="assistant",
        content=text,
        tool_calls=tuple(ToolCall(id=c, name="search") for c in call_ids),
    )


def result(call_id: str, text: str) -> ChatMessage:
    return ChatMessage(role="tool", content=text, tool_call_id=call_id)


def long_history(exchanges: int) -> list[ChatMessage]:
    history: list[ChatMessage] = []
    for i in range(exchanges):
        history += [
            user(f"question {i} " + "x" * 400),
            assistant(f"looking {i}", f"c{i}a", f"c{i}b"),
            result(f"c{i}a", "r" * 400),
            result(f"c{i}b", "s" * 400),
            assistant(f"answer {i} " + "y" * 400),
        ]
    return history


def test_tokens_are_estimated_as_characters_over_four() -> None:
    assert CHARS_PER_TOKEN == 4
    assert estimate_tokens("") == 0
    assert estimate_tokens("abcd") == 1
    assert estimate_tokens("abcde") == 2


def test_the_tail_never_starts_on_a_tool_result() -> None:
    history = [user("q"), assistant("", "c1", "c2"), result("c1", "a" * 40), result("c2", "b")]
    # A budget that fits only the last result must take the whole exchange with its call.
    start = tail_start(history, tail_budget=estimate_message_tokens(history[-1]))
    assert history[start].role == "assistant"
    assert start == 1


@st.composite
def histories(draw: st.DrawFn) -> list[ChatMessage]:
    history: list[ChatMessage] = []
    for i in range(draw(st.integers(1, 12))):
        kind = draw(st.sampled_from(["user", "reply", "tools"]))
        text = "z" * draw(st.integers(0, 300))
        if kind == "user":
            history.append(user(text))
        elif kind == "reply":
            history.append(assistant(text))
        else:
            ids = [f"c{i}-{j}" for j in range(draw(st.integers(1, 3)))]
            history.append(assistant(text, *ids))
            history += [result(c, text) for c in ids]
    return history


@given(histories(), st.integers(0, 600))
def test_no_split_parts_a_tool_call_from_its_results(
    history: list[ChatMessage], budget: int
) -> None:
    start = tail_start(history, budget)
    assert 0 <= start < len(history)
    assert history[start].role != "tool"
    kept_ids = {c.id for m in history[start:] for c in m.tool_calls}
    for m in history[start:]:
        if m.role == "tool":
            assert m.tool_call_id in kept_ids


def test_compacted_history_is_the_summary_then_the_tail() -> None:
    history = long_history(3)
    compacted = compacted_history(history, 5, "they asked three questions")
    assert compacted[0] == user(f"{SUMMARY_PREFIX}\nthey asked three questions")
    assert list(compacted[1:]) == history[5:]


def test_the_summary_request_fits_the_budget_and_uses_the_task_settings() -> None:
    request = summary_request(
        long_history(20), budget=500, model="m", reasoning_effort="low", max_output_tokens=300
    )
    assert request.system == SUMMARY_SYSTEM
    assert request.tools == ()
    assert (request.model, request.reasoning_effort, request.max_output_tokens) == ("m", "low", 300)
    transcript = request.messages[0].content
    assert transcript.startswith("[... the oldest part is omitted ...]")
    assert len(transcript) <= 500 * CHARS_PER_TOKEN + 64
    assert "answer 19" in transcript


async def test_an_over_budget_history_is_summarised_and_the_model_sees_summary_and_tail() -> None:
    summaries: list[LLMRequest] = []

    def summarise(request: LLMRequest) -> LLMResponse:
        summaries.append(request)
        return reply("Alice asked about flights; three searches ran.")

    model = ScriptedModel(summarise, reply("Here is the plan."))
    loop = CoreLoop(model, FixedContextWindow(3_000), config=LoopConfig(reserve_tokens=200))
    history = (*long_history(6), user("And the hotel?"))
    host = MemoryHost(settings=TaskSettings(model="big", reasoning_effort="medium"))
    turn = TurnInput(task_id="t1", turn=4, task=conversation(), history=history)
    outcome = await loop.run_turn(host, turn)

    [summary] = summaries
    assert (summary.model, summary.reasoning_effort) == ("big", "medium")
    assert "question 0" in summary.messages[0].content

    sent = model.requests[1].messages
    assert sent[0].content.startswith(SUMMARY_PREFIX)
    assert "three searches ran" in sent[0].content
    assert sent[-1] == user("And the hotel?")
    tail = list(sent[1:])
    assert tail == list(history[len(history) - len(tail) :])
    assert tail[0].role != "tool"

    [entry] = [e for e in host.journal if isinstance(e, CompactionEntry)]
    assert entry.id == "t1/turn-4/compact-0"
    assert outcome.history[0] == sent[0]

    # Replaying the turn re-applies the saved summary; the model is not asked to summarise again.
    replay_model = ScriptedModel()
    again = await CoreLoop(
        replay_model, FixedContextWindow(3_000), config=LoopConfig(reserve_tokens=200)
    ).run_turn(MemoryHost(), turn.model_copy(update={"journal": tuple(host.journal)}))
    assert replay_model.requests == []
    assert again.history == outcome.history


async def test_a_history_within_budget_is_sent_as_it_is() -> None:
    model = ScriptedModel(reply("ok"))
    history = (*long_history(2), user("next"))
    loop = CoreLoop(model, FixedContextWindow(100_000))
    await loop.run_turn(
        MemoryHost(), TurnInput(task_id="t1", turn=0, task=conversation(), history=history)
    )
    assert len(model.requests) == 1
    assert model.requests[0].messages == history


def test_a_messages_files_count_toward_its_estimate_erring_high() -> None:
    text_file = Attachment(
        media_type="text/plain", name="n.txt", data=base64.b64encode(b"x" * 4000).decode()
    )
    image = Attachment(media_type="image/png", name="c.png", data="iVBORw0KGgo=")
    pdf = Attachment(
        media_type="application/pdf", name="s.pdf", data=base64.b64encode(b"%" * 40_000).decode()
    )
    archive = Attachment(media_type="application/zip", name="a.zip", data="UEs=")
    plain = estimate_message_tokens(ChatMessage(role="user", content="see"))

    def with_file(file: Attachment) -> int:
        return estimate_message_tokens(ChatMessage(role="user", content="see", files=(file,)))

    assert with_file(text_file) - plain == 1000
    assert with_file(image) - plain == IMAGE_TOKENS
    assert with_file(pdf) - plain == 10_000
    assert with_file(archive) - plain == NOTE_TOKENS
    assert (
        estimate_file_tokens(Attachment(media_type="application/pdf", url="https://x.test/s.pdf"))
        == URL_PDF_TOKENS
    )
