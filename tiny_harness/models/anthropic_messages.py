"""Anthropic Messages behind the model port (``client.messages.create``).

Two differences from OpenAI shape the mapping: tool results travel as ``tool_result`` blocks
inside a *user* message, and roles must alternate, so consecutive entries of the same role
(several tool results, or a tool result followed by a user note) are merged into one message.
"""

from __future__ import annotations

import json
from typing import Any, Literal

import anthropic
from anthropic import AsyncAnthropic
from anthropic.types import (
    AssistantMessageParam,
    ContentBlockParam,
    DocumentBlockParam,
    ImageBlockParam,
    Message,
    MessageParam,
    ToolParam,
    ToolResultBlockParam,
    UserMessageParam,
)

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.json_bounds import ARGUMENTS_CHARS, loads
from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall, ToolSpec, Usage
from tiny_harness.models.base import EMPTY_MESSAGE, Body, RetryingAdapter, blank
from tiny_harness.models.files import not_given, text_of
from tiny_harness.models.retry import CallContext, RetryPolicy, SdkErrors

#: The API requires ``max_tokens``; used when neither the request nor the settings set one.
DEFAULT_MAX_OUTPUT_TOKENS = 8192


class AnthropicMessagesAdapter(RetryingAdapter[AsyncAnthropic, Message]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` over the Messages API."""

    default_context = CallContext("anthropic", "ANTHROPIC_API_KEY", "anthropic")
    path = "/v1/messages"
    raw_type = Message
    errors = SdkErrors(
        anthropic.APIStatusError, anthropic.APIConnectionError, anthropic.APITimeoutError
    )

    def __init__(
        self,
        client: AsyncAnthropic,
        *,
        default_model: str,
        max_output_tokens: int = DEFAULT_MAX_OUTPUT_TOKENS,
        retry_policy: RetryPolicy | None = None,
        context: CallContext | None = None,
    ) -> None:
        super().__init__(
            client, default_model=default_model, retry_policy=retry_policy, context=context
        )
        self._max_output_tokens = max_output_tokens

    def _parse(self, raw: Message) -> LLMResponse:
        return parse_message(raw)

    def _body(self, request: LLMRequest) -> Body:
        # Effort goes in `output_config` and nothing else changes with it (no `thinking`
        # block): see docs/design/model-adapters.md. Unset keys stay out of the body, so a
        # request without an effort is byte-identical to one without the feature.
        # Keys in the order the SDK's own `create` sends them.
        body: Body = {
            "max_tokens": request.max_output_tokens or self._max_output_tokens,
            "messages": anthropic_messages(request.messages),
            "model": request.model or self._default_model,
        }
        if request.reasoning_effort is not None:
            body["output_config"] = {"effort": request.reasoning_effort}
        if request.system:
            body["system"] = request.system
        if request.tools:
            body["tools"] = [tool_param(tool) for tool in request.tools]
        return body


def anthropic_messages(messages: tuple[ChatMessage, ...]) -> list[MessageParam]:
    out: list[MessageParam] = []
    role: Literal["user", "assistant"] | None = None
    blocks: list[ContentBlockParam] = []
    for message in messages:
        this_role: Literal["user", "assistant"] = (
            "assistant" if message.role == "assistant" else "user"
        )
        if this_role != role and role is not None:
            out.append(_message(role, blocks))
            blocks = []
        role = this_role
        blocks.extend(_blocks(message))
    if role is not None:
        out.append(_message(role, blocks))
    return out


def _message(role: Literal["user", "assistant"], blocks: list[ContentBlockParam]) -> MessageParam:
    # Blank text never makes a block (see `blank`), so a message of nothing but blank text has
    # none left; the API refuses an empty content list, so it says that it was empty.
    if not blocks:
        blocks = [{"type": "text", "text": EMPTY_MESSAGE}]
    # A lone text block goes as a plain string, the simplest form and the one people write.
    only = blocks[0] if len(blocks) == 1 else None
    content: str | list[ContentBlockParam] = (
        only["text"] if only is not None and only["type"] == "text" else blocks
    )
    if role == "user":
        user: UserMessageParam = {"role": "user", "content": content}
        return user
    assistant: AssistantMessageParam = {"role": "assistant", "content": content}
    return assistant


def _blocks(message: ChatMessage) -> list[ContentBlockParam]:
    if message.role == "tool":
        result: ToolResultBlockParam = {
            "type": "tool_result",
            "tool_use_id": message.tool_call_id or "",
            "content": message.content,
        }
        if message.is_error:
            result["is_error"] = True
        return [result]
    blocks: list[ContentBlockParam] = []
    if not blank(message.content):
        blocks.append({"type": "text", "text": message.content})
    blocks.extend(file_block(file) for file in message.files)
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}
        for call in message.tool_calls
    )
    return blocks


def file_block(file: Attachment) -> ContentBlockParam:
    """A file as an Anthropic block: an image or a (PDF) document, from its bytes or its URL;
    a text file as text; a file no model is given, as the note that says so."""
    if file.unread is not None:
        return {"type": "text", "text": not_given(file, file.unread)}
    if file.kind == "image":
        image: ImageBlockParam = {
            "type": "image",
            "source": {"type": "url", "url": file.url}
            if file.url is not None
            else {
                "type": "base64",
                "media_type": _image_type(file.media_type),
                "data": file.data or "",
            },
        }
        return image
    if file.kind == "pdf":
        document: DocumentBlockParam = {
            "type": "document",
            "source": {"type": "url", "url": file.url}
            if file.url is not None
            else {"type": "base64", "media_type": "application/pdf", "data": file.data or ""},
        }
        if file.name:
            document["title"] = file.name
        return document
    return {"type": "text", "text": text_of(file)}


def _image_type(media_type: str) -> Literal["image/jpeg", "image/png", "image/gif", "image/webp"]:
    base = media_type.split(";", 1)[0].strip().lower()
    if base == "image/jpeg":
        return "image/jpeg"
    if base == "image/gif":
        return "image/gif"
    if base == "image/webp":
        return "image/webp"
    return "image/png"


def _tool_input(call: ToolCall) -> dict[str, object]:
    # Anthropic takes the arguments as an object. Text that is not a JSON object (a botched
    # call replayed from history) is kept, under one key, rather than dropped.
    try:
        parsed: Any = loads(call.arguments_json or "{}", max_chars=ARGUMENTS_CHARS)
    except ValueError:  # not JSON, or past a bound (core/json_bounds.py)
        parsed = None
    if isinstance(parsed, dict):
        return parsed
    return {"raw_arguments": call.arguments_json}


def tool_param(tool: ToolSpec) -> ToolParam:
    return {
        "name": tool.name,
        "description": tool.description,
        "input_schema": dict(tool.parameters),
    }


def parse_message(message: Message) -> LLMResponse:
    text = "".join(block.text for block in message.content if block.type == "text")
    calls = tuple(
        ToolCall(id=block.id, name=block.name, arguments_json=json.dumps(block.input))
        for block in message.content
        if block.type == "tool_use"
    )
    usage = message.usage
    cached = usage.cache_read_input_tokens or 0
    return LLMResponse(
        text=text,
        tool_calls=calls,
        model=message.model,
        # Anthropic counts cache reads and writes apart from input_tokens; every one of them
        # was input the model read, so the input is their sum, as the other providers count it.
        usage=Usage(
            input_tokens=usage.input_tokens + cached + (usage.cache_creation_input_tokens or 0),
            output_tokens=message.usage.output_tokens,
            cached_input_tokens=cached,
        ),
    )
