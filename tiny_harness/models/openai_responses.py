"""The OpenAI Responses API behind the model port (``client.responses.create``).

Stateless on purpose: every call sends the whole history as ``input`` items, so a restarted
operator can replay a turn from the task's own record without a ``previous_response_id``.
"""

from __future__ import annotations

import openai
from openai import AsyncOpenAI
from openai.types.responses import (
    FunctionToolParam,
    Response,
    ResponseInputItemParam,
    ResponseInputMessageContentListParam,
)

from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall, ToolSpec, Usage
from tiny_harness.models.base import EMPTY_MESSAGE, Body, RetryingAdapter, blank
from tiny_harness.models.files import not_given, text_of
from tiny_harness.models.retry import CallContext, SdkErrors

#: The OpenAI SDK's exceptions (shared with the Chat Completions adapter).
OPENAI_ERRORS = SdkErrors(openai.APIStatusError, openai.APIConnectionError, openai.APITimeoutError)


class OpenAIResponsesAdapter(RetryingAdapter[AsyncOpenAI, Response]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` over the Responses API."""

    default_context = CallContext("openai responses", "OPENAI_API_KEY", "openai")
    path = "/responses"
    raw_type = Response
    errors = OPENAI_ERRORS

    def _parse(self, raw: Response) -> LLMResponse:
        return parse_response(raw)

    def _body(self, request: LLMRequest) -> Body:
        # Optional keys are left out when unset, so a request without an effort is
        # byte-identical to one from before efforts existed.
        body: Body = {
            "model": request.model or self._default_model,
            "input": input_items(request.messages),
        }
        if request.system:
            body["instructions"] = request.system
        if request.max_output_tokens:
            body["max_output_tokens"] = request.max_output_tokens
        if request.reasoning_effort is not None:
            body["reasoning"] = {"effort": request.reasoning_effort}
        if request.tools:
            body["tools"] = [function_tool(tool) for tool in request.tools]
        return body


def input_items(messages: tuple[ChatMessage, ...]) -> list[ResponseInputItemParam]:
    """The history as Responses input items: tool calls and their results are items of their
    own, linked by ``call_id``, rather than parts of a message."""
    items: list[ResponseInputItemParam] = []
    for message in messages:
        if message.role == "tool":
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": message.tool_call_id or "",
                    "output": message.content,
                }
            )
            continue
        if message.files:
            items.append({"role": "user", "content": input_content(message)})
            continue
        # Blank text is no message item beside tool calls, and a placeholder without them.
        if not blank(message.content):
            items.append({"role": message.role, "content": message.content})
        elif not message.tool_calls:
            items.append({"role": message.role, "content": EMPTY_MESSAGE})
        items.extend(
            {
                "type": "function_call",
                "call_id": call.id,
                "name": call.name,
                "arguments": call.arguments_json,
            }
            for call in message.tool_calls
        )
    return items


def input_content(message: ChatMessage) -> ResponseInputMessageContentListParam:
    """A user message with files as Responses content: its text, then each file as an image
    input (bytes as a ``data:`` URL, or the URL), a file input (a PDF) or text."""
    content: ResponseInputMessageContentListParam = [
        {"type": "input_text", "text": message.content or EMPTY_MESSAGE}
    ]
    for file in message.files:
        if file.unread is not None:
            content.append({"type": "input_text", "text": not_given(file, file.unread)})
        elif file.kind == "image":
            content.append(
                {"type": "input_image", "image_url": file.url or file.data_url(), "detail": "auto"}
            )
        elif file.kind == "pdf" and file.url is not None:
            content.append({"type": "input_file", "file_url": file.url})
        elif file.kind == "pdf":
            content.append(
                {"type": "input_file", "filename": file.label, "file_data": file.data_url()}
            )
        else:
            content.append({"type": "input_text", "text": text_of(file)})
    return content


def function_tool(tool: ToolSpec) -> FunctionToolParam:
    # strict=False: strict mode demands schemas with every property required and
    # additionalProperties false, which tool authors do not write.
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": dict(tool.parameters),
        "strict": False,
    }


def parse_response(response: Response) -> LLMResponse:
    calls = tuple(
        ToolCall(id=item.call_id, name=item.name, arguments_json=item.arguments or "{}")
        for item in response.output
        if item.type == "function_call"
    )
    usage = response.usage
    return LLMResponse(
        text=response.output_text,
        tool_calls=calls,
        model=response.model,
        usage=Usage(
            input_tokens=usage.input_tokens if usage else 0,
            output_tokens=usage.output_tokens if usage else 0,
            cached_input_tokens=(
                usage.input_tokens_details.cached_tokens
                if usage and usage.input_tokens_details
                else 0
            ),
        ),
    )
