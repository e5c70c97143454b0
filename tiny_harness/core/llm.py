"""The model port: what the core loop asks of a model, whatever the provider.

Adapters in :mod:`tiny_harness.models` implement :class:`ModelAdapter` over the official SDKs;
the loop and its tests only ever see these plain types.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Literal, Protocol

from pydantic import BaseModel, ConfigDict, Field

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
