"""OpenAI Chat Completions behind the model port (``client.chat.completions.create``).

The Responses API is OpenAI's own first choice, but Chat Completions is what OpenAI-compatible
servers (vLLM, Ollama, llama.cpp) speak, so it is the adapter for a local model.
"""

from __future__ import annotations

from openai import AsyncOpenAI
from openai.types.chat import (
    ChatCompletion,
    ChatCompletionAssistantMessageParam,
    ChatCompletionContentPartParam,
    ChatCompletionFunctionToolParam,
    ChatCompletionMessageParam,
)

from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall, ToolSpec, Usage
from tiny_harness.models.base import EMPTY_MESSAGE, Body, RetryingAdapter, blank
from tiny_harness.models.files import not_given, text_of
from tiny_harness.models.openai_responses import OPENAI_ERRORS
from tiny_harness.models.retry import CallContext


class OpenAIChatAdapter(RetryingAdapter[AsyncOpenAI, ChatCompletion]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` over Chat Completions."""

    default_context = CallContext("openai chat", "OPENAI_API_KEY", "openai")
    path = "/chat/completions"
    raw_type = ChatCompletion
    errors = OPENAI_ERRORS

    def _parse(self, raw: ChatCompletion) -> LLMResponse:
        return parse_completion(raw)

    def _body(self, request: LLMRequest) -> Body:
        # Unset keys stay out of the body, so an unset effort changes no byte of it.
        body: Body = {
            "model": request.model or self._default_model,
            "messages": chat_messages(request.system, request.messages),
        }
        if request.tools:
            body["tools"] = [function_tool(tool) for tool in request.tools]
        if request.max_output_tokens:
            body["max_completion_tokens"] = request.max_output_tokens
        if request.reasoning_effort is not None:
            body["reasoning_effort"] = request.reasoning_effort
        return body


def chat_messages(
    system: str, messages: tuple[ChatMessage, ...]
) -> list[ChatCompletionMessageParam]:
    # The `system` role rather than `developer`: OpenAI accepts both, local servers only `system`.
    out: list[ChatCompletionMessageParam] = (
        [{"role": "system", "content": system}] if system else []
    )
    for message in messages:
        if message.role == "user" and message.files:
            out.append({"role": "user", "content": user_parts(message)})
        elif message.role == "user":
            out.append({"role": "user", "content": _said(message.content)})
        elif message.role == "tool":
            out.append(
                {
                    "role": "tool",
                    "tool_call_id": message.tool_call_id or "",
                    "content": message.content,
                }
            )
        else:
            out.append(_assistant(message))
    return out


def user_parts(message: ChatMessage) -> list[ChatCompletionContentPartParam]:
    """A user message with files as Chat Completions parts: its text, then each file as an
    image (bytes as a ``data:`` URL, or the URL), a file (a PDF, as bytes) or text."""
    parts: list[ChatCompletionContentPartParam] = [{"type": "text", "text": _said(message.content)}]
    for file in message.files:
        if file.unread is not None:
            parts.append({"type": "text", "text": not_given(file, file.unread)})
        elif file.kind == "image":
            parts.append({"type": "image_url", "image_url": {"url": file.url or file.data_url()}})
        elif file.kind == "pdf" and file.url is not None:
            why = "Chat Completions takes a PDF only as its bytes, and this one was sent as a URL"
            parts.append({"type": "text", "text": not_given(file, why)})
        elif file.kind == "pdf":
            parts.append(
                {"type": "file", "file": {"filename": file.label, "file_data": file.data_url()}}
            )
        else:
            parts.append({"type": "text", "text": text_of(file)})
    return parts


def _said(content: str) -> str:
    """The content of a message without tool calls: blank text is sent as a placeholder."""
    return EMPTY_MESSAGE if blank(content) else content


def _assistant(message: ChatMessage) -> ChatCompletionAssistantMessageParam:
    if not message.tool_calls:
        return {"role": "assistant", "content": _said(message.content)}
    return {
        "role": "assistant",
        # null rather than blank text beside tool calls, as the API itself returns it.
        "content": None if blank(message.content) else message.content,
        "tool_calls": [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments_json},
            }
            for call in message.tool_calls
        ],
    }


def function_tool(tool: ToolSpec) -> ChatCompletionFunctionToolParam:
    return {
        "type": "function",
        "function": {
            "name": tool.name,
            "description": tool.description,
            "parameters": dict(tool.parameters),
        },
    }


def parse_completion(completion: ChatCompletion) -> LLMResponse:
    reported = completion.usage
    details = reported.prompt_tokens_details if reported else None
    usage = Usage(
        input_tokens=reported.prompt_tokens if reported else 0,
        output_tokens=reported.completion_tokens if reported else 0,
        cached_input_tokens=(details.cached_tokens or 0) if details else 0,
    )
    if not completion.choices:
        return LLMResponse(model=completion.model, usage=usage)
    message = completion.choices[0].message
    calls = tuple(
        ToolCall(id=call.id, name=call.function.name, arguments_json=call.function.arguments)
        for call in message.tool_calls or ()
        # Custom (free-text) tools are never offered, so only function calls can come back.
        if call.type == "function"
    )
    return LLMResponse(
        text=message.content or "", tool_calls=calls, model=completion.model, usage=usage
    )
