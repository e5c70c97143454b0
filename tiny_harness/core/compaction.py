"""Compaction: keep a long-running task's history inside the model's context window.

A task's history grows with every turn; a conversation can outlive any context window. Before
each model call the loop estimates the request's size, and when it exceeds the budget (the
model's window minus a reserve for the answer) it asks the same model, with the task's own
model and effort, to summarise the older part of the history, then keeps the summary and the
recent tail. The split never falls between an assistant's tool calls and their results, since
providers refuse a tool result whose call is missing.

Tokens are estimated, not counted: about four characters per token (:data:`CHARS_PER_TOKEN`),
plus a few tokens per message. That is close for English prose and code and needs no tokenizer
for every provider; the reserve absorbs the error. A model's window comes from a
:class:`ContextWindows` (the model catalog is one), so the budget follows ``/model``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Protocol

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.llm import ChatMessage, LLMRequest, ModelAdapter, ToolSpec, Usage
from tiny_harness.core.task import Effort

#: The estimate's ratio: one token for about four characters.
CHARS_PER_TOKEN: Final = 4
#: What a message costs beyond its text (role, separators), in tokens.
MESSAGE_OVERHEAD_TOKENS: Final = 4

SUMMARY_PREFIX: Final = "Summary of the earlier part of this task's history:"

SUMMARY_SYSTEM: Final = (
    "You compact the working history of an agent so it can go on with its task. Summarise the "
    "transcript you are given: the participants' requests and answers, decisions made, facts "
    "and tool results that still matter, sub-task ids and what they are for, the state of the "
    "plan, and open questions. Be specific (names, ids, numbers) and brief. Write plain prose; "
    "do not address the user and do not call tools."
)


class ContextWindows(Protocol):
    """Where a model's context window comes from (the model catalog implements it)."""

    def context_window(self, model: str) -> int: ...


@dataclass(frozen=True)
class FixedContextWindow:
    """The same window for every model: for tests, and for a deployment with one model."""

    tokens: int

    def context_window(self, model: str) -> int:
        return self.tokens


def estimate_tokens(text: str) -> int:
    """Estimated tokens of ``text``: ``ceil(len / CHARS_PER_TOKEN)``."""
    return -(-len(text) // CHARS_PER_TOKEN)


def estimate_message_tokens(message: ChatMessage) -> int:
    chars = len(message.content)
    for call in message.tool_calls:
        chars += len(call.name) + len(call.arguments_json) + len(call.id)
    files = sum(estimate_file_tokens(f) for f in message.files)
    return -(-chars // CHARS_PER_TOKEN) + files + MESSAGE_OVERHEAD_TOKENS


#: What one image costs at most at a provider's default detail (Anthropic counts about
#: width x height / 750, capped near this; OpenAI's high detail comes to about 1,100): an
#: estimate that errs high, so compaction runs before a window is passed, never after.
IMAGE_TOKENS: Final = 1600
#: A PDF at a URL, whose size is not known here: a few pages' worth.
URL_PDF_TOKENS: Final = 4 * IMAGE_TOKENS
#: The note that stands for a file a model is not given.
NOTE_TOKENS: Final = 64


def estimate_file_tokens(file: Attachment) -> int:
    """Estimated tokens a file costs the model it is given to (``core/attachments.py`` says
    in which form): an image at most :data:`IMAGE_TOKENS`, a text file its text, a PDF its
    bytes as text (its pages are read as text and images), a file not given its note."""
    if file.unread is not None:
        return NOTE_TOKENS
    if file.kind == "image":
        return IMAGE_TOKENS
    if file.kind == "text":
        return estimate_tokens(file.text())
    if file.data is None:
        return URL_PDF_TOKENS
    return max(IMAGE_TOKENS, -(-file.size // CHARS_PER_TOKEN))


def estimate_history_tokens(history: Sequence[ChatMessage]) -> int:
    return sum(estimate_message_tokens(m) for m in history)


def estimate_tools_tokens(tools: Sequence[ToolSpec]) -> int:
    return estimate_tokens(json.dumps([t.model_dump(mode="json") for t in tools]))


def estimate_request_tokens(request: LLMRequest) -> int:
    """Estimated input tokens of a whole request: system prompt, history and tool specs."""
    return (
        estimate_tokens(request.system)
        + estimate_history_tokens(request.messages)
        + estimate_tools_tokens(request.tools)
    )


def tail_start(history: Sequence[ChatMessage], tail_budget: int) -> int:
    """Where the kept tail begins: the longest tail within ``tail_budget`` tokens that starts on
    a message other than a tool result, so no tool result is parted from its call.

    At least the last exchange is kept, even over budget. 0 means there is nothing to summarise.
    """
    n = len(history)
    start, used = n, 0
    while start > 0:
        cost = estimate_message_tokens(history[start - 1])
        if used + cost > tail_budget:
            break
        used += cost
        start -= 1
    while start < n and history[start].role == "tool":
        start += 1
    if start == n:
        # Not even the last message fits: keep the last one, with its tool call if it is a result.
        start = n - 1
        while start > 0 and history[start].role == "tool":
            start -= 1
    return max(start, 0)


def render_transcript(messages: Sequence[ChatMessage]) -> str:
    """The messages as plain text for the summary request."""
    lines: list[str] = []
    for m in messages:
        if m.role == "tool":
            tag = "TOOL ERROR" if m.is_error else "TOOL RESULT"
            lines.append(f"{tag} ({m.tool_call_id}): {m.content}")
            continue
        lines.append(f"{m.role.upper()}: {m.content}")
        lines.extend(f"  [called {c.name}({c.arguments_json}) as {c.id}]" for c in m.tool_calls)
    return "\n".join(lines)


def summary_request(
    older: Sequence[ChatMessage],
    *,
    budget: int,
    model: str | None,
    reasoning_effort: Effort | None,
    max_output_tokens: int,
) -> LLMRequest:
    """The request that summarises ``older``; a transcript over ``budget`` keeps its end."""
    transcript = render_transcript(older)
    limit = max(budget - estimate_tokens(SUMMARY_SYSTEM), 1) * CHARS_PER_TOKEN
    if len(transcript) > limit:
        transcript = "[... the oldest part is omitted ...]\n" + transcript[-limit:]
    return LLMRequest(
        system=SUMMARY_SYSTEM,
        messages=(ChatMessage(role="user", content=transcript),),
        model=model,
        reasoning_effort=reasoning_effort,
        max_output_tokens=max_output_tokens,
    )


def compacted_history(
    history: Sequence[ChatMessage], replaced: int, summary: str
) -> tuple[ChatMessage, ...]:
    """``history`` with its first ``replaced`` messages replaced by the summary note."""
    note = ChatMessage(role="user", content=f"{SUMMARY_PREFIX}\n{summary}")
    return (note, *history[replaced:])


@dataclass(frozen=True)
class Compaction:
    """A summary of the first ``replaced`` messages of a history."""

    summary: str
    replaced: int
    usage: Usage


async def compact(
    history: Sequence[ChatMessage],
    *,
    adapter: ModelAdapter,
    history_budget: int,
    model: str | None,
    reasoning_effort: Effort | None,
    summary_budget: int | None = None,
    keep_fraction: float = 0.5,
    summary_max_tokens: int = 2048,
) -> Compaction | None:
    """Summarise the older part of ``history`` so that the rest fits ``history_budget``.

    The tail keeps up to ``keep_fraction`` of the budget; the summary gets the remainder.
    ``summary_budget`` bounds the summary request (no tools, a short prompt), by default the
    history budget. ``None`` when there is nothing older than the tail to summarise.
    """
    start = tail_start(history, int(history_budget * keep_fraction))
    if start <= 0:
        return None
    request = summary_request(
        history[:start],
        budget=summary_budget if summary_budget is not None else history_budget,
        model=model,
        reasoning_effort=reasoning_effort,
        max_output_tokens=summary_max_tokens,
    )
    response = await adapter.complete(request)
    return Compaction(summary=response.text, replaced=start, usage=response.usage)
