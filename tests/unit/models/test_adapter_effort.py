"""Reasoning effort reaches each provider under its own parameter, and only when it is set."""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

import pytest
from adapter_kit import KINDS, TEST_KEY, Kind, MakeAdapter
from anthropic import AsyncAnthropic
from openai import AsyncOpenAI

from tiny_harness.core.llm import ChatMessage, LLMRequest, ToolSpec
from tiny_harness.core.task import EFFORTS, Effort
from tiny_harness.testing.model_server import ScriptedModelServer

TOOL = ToolSpec(name="read_file", description="Read a file.")
SCHEMA: dict[str, object] = {"type": "object", "properties": {}}

EXPECTED_EFFORT_FIELD: dict[Kind, Callable[[Effort], dict[str, Any]]] = {
    "responses": lambda v: {"reasoning": {"effort": v}},
    "chat": lambda v: {"reasoning_effort": v},
    "messages": lambda v: {"output_config": {"effort": v}},
}


def request(effort: Effort | None = None) -> LLMRequest:
    fields: dict[str, Any] = {
        "system": "You are terse.",
        "messages": [ChatMessage(role="user", content="hi")],
        "tools": [TOOL],
    }
    if effort is not None:
        fields["reasoning_effort"] = effort
    return LLMRequest.model_validate(fields)


async def call_sdk_without_effort(kind: Kind, server: ScriptedModelServer) -> None:
    """The same request written by hand against the SDK, as it was before efforts existed."""
    if kind == "messages":
        anthropic = AsyncAnthropic(base_url=server.anthropic_base_url, api_key=TEST_KEY)
        async with anthropic:
            await anthropic.messages.create(
                model="model-default",
                max_tokens=8192,
                system="You are terse.",
                messages=[{"role": "user", "content": "hi"}],
                tools=[
                    {"name": "read_file", "description": "Read a file.", "input_schema": SCHEMA}
                ],
            )
        return
    openai = AsyncOpenAI(base_url=server.openai_base_url, api_key=TEST_KEY)
    async with openai:
        call: Awaitable[object]
        if kind == "responses":
            call = openai.responses.create(
                model="model-default",
                instructions="You are terse.",
                input=[{"role": "user", "content": "hi"}],
                tools=[
                    {
                        "type": "function",
                        "name": "read_file",
                        "description": "Read a file.",
                        "parameters": SCHEMA,
                        "strict": False,
                    }
                ],
            )
        else:
            call = openai.chat.completions.create(
                model="model-default",
                messages=[
                    {"role": "system", "content": "You are terse."},
                    {"role": "user", "content": "hi"},
                ],
                tools=[
                    {
                        "type": "function",
                        "function": {
                            "name": "read_file",
                            "description": "Read a file.",
                            "parameters": SCHEMA,
                        },
                    }
                ],
            )
        await call


@pytest.mark.parametrize("effort", EFFORTS)
@pytest.mark.parametrize("kind", KINDS)
async def test_a_set_effort_adds_exactly_the_providers_effort_parameter(
    kind: Kind, effort: Effort, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)

    await adapter.complete(request())
    await adapter.complete(request(effort))

    unset, with_effort = (r.body for r in server.requests)
    assert with_effort == {**unset, **EXPECTED_EFFORT_FIELD[kind](effort)}


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unset_effort_sends_a_body_byte_identical_to_one_built_without_the_field(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)

    await adapter.complete(request())
    await call_sdk_without_effort(kind, server)

    through_adapter, by_hand = (r.raw_body for r in server.requests)
    assert through_adapter == by_hand
    assert not {"reasoning", "reasoning_effort", "output_config"} & server.requests[0].body.keys()


@pytest.mark.parametrize("kind", KINDS)
async def test_the_configured_default_effort_is_not_sent_by_the_adapter_itself(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    # The default effort is applied once, by ModelCatalog.settings_for, so a request that
    # says nothing must reach the provider saying nothing.
    adapter = await make_adapter(kind, reasoning_effort="high")

    await adapter.complete(request())

    assert not {"reasoning", "reasoning_effort", "output_config"} & server.requests[0].body.keys()
