"""The three wire formats the scripted model server answers in, one turn at a time.

The adapters speak OpenAI Responses, OpenAI Chat Completions and Anthropic Messages through the
providers' own SDKs; a scripted turn (:mod:`tiny_harness.testing.model_script`) is written here
as each provider's answer would be, non-streaming: a reply with text and tool calls and its
usage (:func:`reply_body`), or an error in that provider's shape, its context-overflow error
included (:func:`error_response`). Nothing here knows the script or the server's state.
"""

from __future__ import annotations

import json
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Final, Literal

from aiohttp import web

from tiny_harness.testing.model_script import ErrorTurn

#: Which wire format a request came in (the endpoint it hit).
Flavor = Literal["responses", "chat", "messages"]


@dataclass(frozen=True)
class WireCall:
    """One tool call of an answer, its arguments as JSON text."""

    id: str
    name: str
    arguments: str


def reply_body(
    flavor: Flavor,
    serial: int,
    model: str,
    text: str,
    calls: list[WireCall],
    usage: tuple[int, int, int],
) -> dict[str, Any]:
    """An answer with ``text`` and ``calls`` in the wire format of ``flavor``; ``usage`` is
    (input tokens, output tokens, cached input tokens) and ``serial`` makes its ids unique."""
    if flavor == "responses":
        return _responses_body(serial, model, text, calls, usage)
    if flavor == "chat":
        return _chat_body(serial, model, text, calls, usage)
    return _messages_body(serial, model, text, calls, usage)


def _responses_body(
    serial: int, model: str, text: str, calls: list[WireCall], usage: tuple[int, int, int]
) -> dict[str, Any]:
    output: list[dict[str, Any]] = []
    if text or not calls:
        output.append(
            {
                "type": "message",
                "id": f"msg_{serial}",
                "role": "assistant",
                "status": "completed",
                "content": [{"type": "output_text", "text": text, "annotations": []}],
            }
        )
    output.extend(
        {
            "type": "function_call",
            "id": f"fc_{call.id}",
            "call_id": call.id,
            "name": call.name,
            "arguments": call.arguments,
            "status": "completed",
        }
        for call in calls
    )
    return {
        "id": f"resp_{serial}",
        "object": "response",
        "created_at": int(time.time()),
        "status": "completed",
        "model": model,
        "output": output,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
        "usage": {
            "input_tokens": usage[0],
            "input_tokens_details": {"cached_tokens": usage[2], "cache_write_tokens": 0},
            "output_tokens": usage[1],
            "output_tokens_details": {"reasoning_tokens": 0},
            "total_tokens": usage[0] + usage[1],
        },
    }


def _chat_body(
    serial: int, model: str, text: str, calls: list[WireCall], usage: tuple[int, int, int]
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": text if text or not calls else None}
    if calls:
        message["tool_calls"] = [
            {
                "id": call.id,
                "type": "function",
                "function": {"name": call.name, "arguments": call.arguments},
            }
            for call in calls
        ]
    return {
        "id": f"chatcmpl-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": model,
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls" if calls else "stop",
                "logprobs": None,
                "message": message,
            }
        ],
        "usage": {
            "prompt_tokens": usage[0],
            "completion_tokens": usage[1],
            "total_tokens": usage[0] + usage[1],
            "prompt_tokens_details": {"cached_tokens": usage[2]},
        },
    }


def _messages_body(
    serial: int, model: str, text: str, calls: list[WireCall], usage: tuple[int, int, int]
) -> dict[str, Any]:
    content: list[dict[str, Any]] = []
    if text or not calls:
        content.append({"type": "text", "text": text})
    for call in calls:
        try:
            arguments = json.loads(call.arguments)
        except ValueError:
            arguments = {"raw_arguments": call.arguments}
        content.append({"type": "tool_use", "id": call.id, "name": call.name, "input": arguments})
    return {
        "id": f"msg_{serial}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": content,
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        # Anthropic counts cache reads apart from input_tokens (the uncached part).
        "usage": {
            "input_tokens": max(usage[0] - usage[2], 0),
            "output_tokens": usage[1],
            "cache_read_input_tokens": usage[2],
        },
    }


_ANTHROPIC_ERROR_TYPES: Final = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    529: "overloaded_error",
}


#: Each provider's own words for a conversation longer than the model's context window.
CONTEXT_TOO_LONG_MESSAGES: Final[Mapping[Flavor, str]] = {
    "responses": "Your input exceeds the context window of this model. Please adjust your input "
    "and try again.",
    "chat": "This model's maximum context length is 128000 tokens. However, your messages "
    "resulted in 250000 tokens. Please reduce the length of the messages.",
    "messages": "prompt is too long: 250000 tokens > 200000 maximum",
}


def error_response(flavor: Flavor, turn: ErrorTurn) -> web.Response:
    """The scripted error as the provider of ``flavor`` would answer it."""
    headers: dict[str, str] = {}
    if turn.retry_after_seconds is not None:
        headers["retry-after-ms"] = str(int(turn.retry_after_seconds * 1000))
        headers["retry-after"] = str(turn.retry_after_seconds)
    headers.update(turn.headers)
    if turn.context_too_long:
        return web.json_response(_context_too_long_body(flavor), status=400, headers=headers)
    if flavor == "messages":
        kind = _ANTHROPIC_ERROR_TYPES.get(turn.status, "api_error")
        body: dict[str, Any] = {"type": "error", "error": {"type": kind, "message": turn.message}}
    else:
        kind = "rate_limit_exceeded" if turn.status == 429 else "scripted_error"
        body = {"error": {"message": turn.message, "type": kind, "param": None, "code": turn.code}}
    return web.json_response(body, status=turn.status, headers=headers)


def _context_too_long_body(flavor: Flavor) -> dict[str, Any]:
    message = CONTEXT_TOO_LONG_MESSAGES[flavor]
    if flavor == "messages":
        return {"type": "error", "error": {"type": "invalid_request_error", "message": message}}
    return {
        "error": {
            "message": message,
            "type": "invalid_request_error",
            "param": "input" if flavor == "responses" else "messages",
            "code": "context_length_exceeded",
        }
    }
