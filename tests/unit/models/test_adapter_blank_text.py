"""Blank text (empty or only whitespace) never reaches a provider as a text block.

Anthropic refuses one (and a message with no content at all) with a 400, and the history is
sent again on every call, so a single blank message would fail every later call of its
conversation. Every adapter leaves blank text out beside tool calls and sends a message with
nothing else as a placeholder.
"""

from __future__ import annotations

from typing import Any

import pytest
from adapter_kit import KINDS, Kind, MakeAdapter

from tiny_harness.core.llm import ChatMessage, LLMRequest, ToolCall
from tiny_harness.models.base import EMPTY_MESSAGE
from tiny_harness.testing.model_server import ScriptedModelServer

BLANKS = ["", "  \n\t"]
CALL = ToolCall(id="t1", name="list_files", arguments_json='{"path": "."}')


def texts(kind: Kind, body: dict[str, Any]) -> list[str]:
    """Every text the body carries as a message's content or a text block (tool results
    apart), in order."""
    if kind == "responses":
        return [item["content"] for item in body["input"] if "content" in item]
    if kind == "chat":
        return [
            m["content"]
            for m in body["messages"]
            if m["role"] != "tool" and isinstance(m["content"], str)
        ]
    out: list[str] = []
    for message in body["messages"]:
        content = message["content"]
        if isinstance(content, str):
            out.append(content)
        else:
            out.extend(block["text"] for block in content if block["type"] == "text")
    return out


async def sent(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter, *history: ChatMessage
) -> dict[str, Any]:
    adapter = await make_adapter(kind)
    await adapter.complete(LLMRequest(messages=history))
    body: dict[str, Any] = server.requests[-1].body
    return body


@pytest.mark.parametrize("blank", BLANKS, ids=["empty", "whitespace"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_blank_user_message_is_sent_as_the_placeholder(
    kind: Kind, blank: str, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    body = await sent(
        kind,
        server,
        make_adapter,
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content="Hello."),
        ChatMessage(role="user", content=blank),
    )

    assert texts(kind, body) == ["hi", "Hello.", EMPTY_MESSAGE]


@pytest.mark.parametrize("blank", BLANKS, ids=["empty", "whitespace"])
@pytest.mark.parametrize("kind", KINDS)
async def test_a_blank_reply_without_tool_calls_is_sent_as_the_placeholder(
    kind: Kind, blank: str, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    body = await sent(
        kind,
        server,
        make_adapter,
        ChatMessage(role="user", content="hi"),
        ChatMessage(role="assistant", content=blank),
        ChatMessage(role="user", content="Are you there?"),
    )

    assert texts(kind, body) == ["hi", EMPTY_MESSAGE, "Are you there?"]


@pytest.mark.parametrize("blank", BLANKS, ids=["empty", "whitespace"])
@pytest.mark.parametrize("kind", KINDS)
async def test_blank_text_beside_tool_calls_is_left_out(
    kind: Kind, blank: str, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    body = await sent(
        kind,
        server,
        make_adapter,
        ChatMessage(role="user", content="look"),
        ChatMessage(role="assistant", content=blank, tool_calls=(CALL,)),
        ChatMessage(role="tool", content="a.py", tool_call_id="t1"),
    )

    assert texts(kind, body) == ["look"]
    if kind == "chat":
        assert body["messages"][1]["content"] is None
    elif kind == "messages":
        assert [b["type"] for b in body["messages"][1]["content"]] == ["tool_use"]


async def test_anthropic_leaves_a_blank_note_out_of_a_message_that_has_tool_results(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    """Merged into the tool result's user message, the blank note has company: no placeholder."""
    body = await sent(
        "messages",
        server,
        make_adapter,
        ChatMessage(role="user", content="look"),
        ChatMessage(role="assistant", tool_calls=(CALL,)),
        ChatMessage(role="tool", content="a.py", tool_call_id="t1"),
        ChatMessage(role="user", content=" "),
    )

    assert body["messages"][2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "a.py"}
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_text_that_says_something_is_sent_as_it_is_whitespace_and_all(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    body = await sent(
        kind,
        server,
        make_adapter,
        ChatMessage(role="user", content="  indented\n"),
        ChatMessage(role="assistant", content=" ok ", tool_calls=(CALL,)),
        ChatMessage(role="tool", content="a.py", tool_call_id="t1"),
    )

    assert texts(kind, body) == ["  indented\n", " ok "]
