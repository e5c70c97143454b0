"""The OpenAI Responses API behind the model port (``client.responses.create``).

Stateless on purpose: every call sends the whole history as ``input`` items, so a restarted
operator can replay a turn from the task's own record without a ``previous_response_id``.
"""

from __future__ import annotations

from openai import AsyncOpenAI, omit
from openai.types.responses import FunctionToolParam, Response, ResponseInputItemParam

from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall, ToolSpec, Usage
from tiny_harness.models.base import RetryingAdapter
from tiny_harness.models.retry import CallContext
from tiny_harness.models.tool_params import ToolParams

TOOLS: ToolParams[FunctionToolParam] = ToolParams()


class OpenAIResponsesAdapter(RetryingAdapter[AsyncOpenAI, Response]):
    """A :class:`~tiny_harness.core.llm.ModelAdapter` over the Responses API."""

    default_context = CallContext("openai responses", "OPENAI_API_KEY", "openai")

    def _parse(self, raw: Response) -> LLMResponse:
        return parse_response(raw)

    async def _create(self, request: LLMRequest) -> Response:
        # Every optional parameter is `omit` when unset, so the SDK leaves the key out of the
        # body entirely: a request without an effort is byte-identical to one from before
        # efforts existed.
        effort = request.reasoning_effort
        return await self._client.responses.create(
            model=request.model or self._default_model,
            instructions=request.system or omit,
            input=input_items(request.messages),
            max_output_tokens=request.max_output_tokens or omit,
            reasoning={"effort": effort} if effort is not None else omit,
            extra_body=TOOLS.body(request.tools, function_tool),
        )


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
        if message.content or not message.tool_calls:
            items.append({"role": message.role, "content": message.content})
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
        ),
    )
