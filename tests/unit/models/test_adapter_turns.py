"""A turn through each adapter: text, tool calls and their results, model choice and usage."""

from __future__ import annotations

import json

import pytest
from adapter_kit import KINDS, PATHS, Kind, MakeAdapter

from tiny_harness.core.llm import ChatMessage, LLMRequest, ToolCall, ToolSpec
from tiny_harness.testing.model_script import ScriptedToolCall, TextTurn, ToolCallsTurn
from tiny_harness.testing.model_server import ScriptedModelServer

LIST_FILES = ToolSpec(
    name="list_files",
    description="List the files in a directory.",
    parameters={"type": "object", "properties": {"path": {"type": "string"}}},
)


def ask(text: str, **fields: object) -> LLMRequest:
    return LLMRequest.model_validate(
        {"system": "You are terse.", "messages": [ChatMessage(role="user", content=text)], **fields}
    )


@pytest.mark.parametrize("kind", KINDS)
async def test_a_text_reply_comes_back_with_model_and_usage(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([TextTurn(text="Hello there.", input_tokens=12, output_tokens=3)])

    response = await adapter.complete(ask("hi"))

    assert response.text == "Hello there."
    assert response.tool_calls == ()
    assert response.model == "model-default"
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)


@pytest.mark.parametrize("kind", KINDS)
async def test_cached_input_tokens_are_a_part_of_the_input_whatever_the_wire_format(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    """OpenAI counts cached tokens inside the input; Anthropic apart from it. Either way the
    response says 100 in, of which 80 cached."""
    adapter = await make_adapter(kind)
    server.script([TextTurn(text="Hi.", input_tokens=100, output_tokens=5, cached_input_tokens=80)])

    response = await adapter.complete(ask("hi"))

    assert response.usage.input_tokens == 100
    assert response.usage.cached_input_tokens == 80
    assert response.usage.output_tokens == 5


@pytest.mark.parametrize("kind", KINDS)
async def test_requests_go_to_the_configured_base_url_and_endpoint(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)

    await adapter.complete(ask("hi"))

    assert [r.path for r in server.requests] == [PATHS[kind]]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_request_model_wins_over_the_default(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, models=["model-default", "model-big"])

    unset = await adapter.complete(ask("hi"))
    chosen = await adapter.complete(ask("hi", model="model-big"))

    assert adapter.default_model == "model-default"
    assert [r.body["model"] for r in server.requests] == ["model-default", "model-big"]
    assert (unset.model, chosen.model) == ("model-default", "model-big")


@pytest.mark.parametrize("kind", KINDS)
async def test_the_system_prompt_and_tools_reach_the_provider(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)

    await adapter.complete(ask("hi", tools=(LIST_FILES,)))

    body = server.requests[0].body
    if kind == "responses":
        assert body["instructions"] == "You are terse."
        assert body["tools"][0]["name"] == "list_files"
        assert body["tools"][0]["parameters"] == LIST_FILES.parameters
    elif kind == "chat":
        assert body["messages"][0] == {"role": "system", "content": "You are terse."}
        assert body["tools"][0]["function"]["name"] == "list_files"
        assert body["tools"][0]["function"]["parameters"] == LIST_FILES.parameters
    else:
        assert body["system"] == "You are terse."
        assert body["tools"][0]["name"] == "list_files"
        assert body["tools"][0]["input_schema"] == LIST_FILES.parameters


@pytest.mark.parametrize("kind", KINDS)
async def test_a_tool_call_comes_back_with_its_id_and_raw_json_arguments(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script(
        [
            ToolCallsTurn(
                text="Let me look.",
                calls=[
                    ScriptedToolCall(id="call_a", name="list_files", arguments={"path": "src"}),
                    ScriptedToolCall(id="call_b", name="list_files", arguments={"path": "doc"}),
                ],
            )
        ]
    )

    response = await adapter.complete(ask("what is here?", tools=(LIST_FILES,)))

    assert response.text == "Let me look."
    assert [(c.id, c.name) for c in response.tool_calls] == [
        ("call_a", "list_files"),
        ("call_b", "list_files"),
    ]
    assert [json.loads(c.arguments_json) for c in response.tool_calls] == [
        {"path": "src"},
        {"path": "doc"},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_the_next_request_carries_the_tool_call_and_its_result(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script(
        [
            ToolCallsTurn(calls=[ScriptedToolCall(name="list_files", arguments={"path": "."})]),
            TextTurn(text="There are two files."),
        ]
    )
    first = await adapter.complete(ask("what is here?", tools=(LIST_FILES,)))
    call = first.tool_calls[0]
    history = (
        ChatMessage(role="user", content="what is here?"),
        ChatMessage(role="assistant", content=first.text, tool_calls=first.tool_calls),
        ChatMessage(role="tool", content="a.py b.py", tool_call_id=call.id),
    )

    second = await adapter.complete(LLMRequest(messages=history, tools=(LIST_FILES,)))

    assert second.text == "There are two files."
    body = server.requests[1].body
    if kind == "responses":
        assert body["input"][1:] == [
            {
                "type": "function_call",
                "call_id": call.id,
                "name": "list_files",
                "arguments": call.arguments_json,
            },
            {"type": "function_call_output", "call_id": call.id, "output": "a.py b.py"},
        ]
    elif kind == "chat":
        assert body["messages"][1] == {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call.id,
                    "type": "function",
                    "function": {"name": "list_files", "arguments": call.arguments_json},
                }
            ],
        }
        assert body["messages"][2] == {
            "role": "tool",
            "tool_call_id": call.id,
            "content": "a.py b.py",
        }
    else:
        assert body["messages"][1] == {
            "role": "assistant",
            "content": [
                {"type": "tool_use", "id": call.id, "name": "list_files", "input": {"path": "."}}
            ],
        }
        assert body["messages"][2] == {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": call.id, "content": "a.py b.py"}],
        }


async def test_anthropic_gets_parallel_tool_results_in_one_user_message_with_errors_flagged(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("messages")
    history = (
        ChatMessage(role="user", content="look"),
        ChatMessage(
            role="assistant",
            tool_calls=(
                ToolCall(id="t1", name="list_files", arguments_json='{"path": "a"}'),
                ToolCall(id="t2", name="list_files", arguments_json='{"path": "b"}'),
            ),
        ),
        ChatMessage(role="tool", content="x.py", tool_call_id="t1"),
        ChatMessage(role="tool", content="no such directory", tool_call_id="t2", is_error=True),
        ChatMessage(role="user", content="and now?"),
    )

    await adapter.complete(LLMRequest(messages=history))

    messages = server.requests[0].body["messages"]
    assert [m["role"] for m in messages] == ["user", "assistant", "user"]
    assert messages[2]["content"] == [
        {"type": "tool_result", "tool_use_id": "t1", "content": "x.py"},
        {
            "type": "tool_result",
            "tool_use_id": "t2",
            "content": "no such directory",
            "is_error": True,
        },
        {"type": "text", "text": "and now?"},
    ]


@pytest.mark.parametrize("kind", KINDS)
async def test_an_exhausted_script_still_answers_with_plain_text(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)

    response = await adapter.complete(ask("anyone there?"))

    assert response.text == "Done."
    assert response.tool_calls == ()
