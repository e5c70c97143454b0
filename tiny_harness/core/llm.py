"""The model port: what the core loop asks of a model, whatever the provider.

Adapters in :mod:`tiny_harness.models` implement :class:`ModelAdapter` over the official SDKs;
the loop and its tests only ever see these plain types.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from contextvars import ContextVar
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.task import Effort


class _LLMModel(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")


class ToolSpec(_LLMModel):
    """A tool the model may call: its name, what it does, and a JSON Schema for its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = Field(
        default_factory=lambda: {"type": "object", "properties": {}}
    )


class ToolCall(_LLMModel):
    """One call the model asked for. ``arguments_json`` is the raw text the model produced."""

    id: str
    name: str
    arguments_json: str = "{}"


class ChatMessage(_LLMModel):
    """One entry of the history the model sees.

    ``assistant`` entries may carry tool calls; ``tool`` entries answer one call by its id.
    """

    role: Literal["user", "assistant", "tool"]
    content: str = ""
    files: tuple[Attachment, ...] = Field(
        default=(), description="A user entry's files, which each adapter gives in its form."
    )
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    is_error: bool = False


class LLMRequest(_LLMModel):
    """A request to a model. ``model`` and ``reasoning_effort`` come from the task's settings;
    an unset model means the adapter's default and an unset effort means the provider's."""

    system: str = ""
    messages: tuple[ChatMessage, ...] = ()
    tools: tuple[ToolSpec, ...] = ()
    model: str | None = None
    reasoning_effort: Effort | None = None
    max_output_tokens: int | None = None


class Usage(_LLMModel):
    input_tokens: int = 0
    output_tokens: int = 0
    #: Of the input tokens, those the provider served from its prompt cache (when it says).
    cached_input_tokens: int = 0


class LLMResponse(_LLMModel):
    """What the model answered: text, tool calls, the model that answered, and token usage."""

    text: str = ""
    tool_calls: tuple[ToolCall, ...] = ()
    model: str = ""
    usage: Usage = Usage()


class ModelAdapter(Protocol):
    """A provider behind one call. Implementations retry transient errors themselves."""

    @property
    def default_model(self) -> str: ...

    async def complete(self, request: LLMRequest) -> LLMResponse: ...


class RetryNotice(_LLMModel):
    """A model call failed transiently and is about to be retried after ``delay_seconds``.

    ``attempt`` is the number of the retry about to happen (1-based) out of ``budget``
    retries; ``reason`` is short text for a person, such as ``HTTP 503: overloaded`` or
    ``timed out``, never carrying an API key.
    """

    attempt: int = Field(ge=1)
    budget: int = Field(ge=0)
    reason: str
    delay_seconds: float = Field(ge=0)

    @property
    def summary(self) -> str:
        """The line a participant sees while the call backs off."""
        return f"retrying ({self.attempt} of {self.budget}): {self.reason}"


RetryObserver = Callable[[RetryNotice], Awaitable[None]]

#: Who to tell when a model call is about to be retried; None tells no one.
#:
#: The host that runs a turn sets it (and resets it after) so a participant sees
#: "retrying (n of N): reason" while a model call backs off, instead of a turn that seems to
#: hang. A context variable rather than an adapter argument because the adapter is shared by
#: every task while the observer belongs to one turn; each asyncio task sees its own value.
retry_observer: ContextVar[RetryObserver | None] = ContextVar("retry_observer", default=None)
