"""The scripted model server itself: recording, control over HTTP, and the subprocess entry."""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import aiohttp
import pytest
from adapter_kit import TEST_KEY, MakeAdapter
from openai import AsyncOpenAI
from pydantic import ValidationError

from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.testing.model_script import (
    ErrorTurn,
    ModelServerControl,
    ScriptedToolCall,
    TextTurn,
    ToolCallsTurn,
    parse_turns,
)
from tiny_harness.testing.model_server import ScriptedModelServer
from tiny_harness.testing.model_wire import CONTEXT_TOO_LONG_MESSAGES

HI = LLMRequest(messages=(ChatMessage(role="user", content="hi"),))


async def test_it_listens_on_loopback_only(server: ScriptedModelServer) -> None:
    assert server.base_url.startswith("http://127.0.0.1:")


async def test_credentials_are_never_recorded(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    for kind in ("responses", "messages"):
        await (await make_adapter(kind)).complete(HI)

    for recorded in server.requests:
        assert not {"authorization", "x-api-key"} & recorded.headers.keys()
        assert TEST_KEY not in json.dumps(dict(recorded.headers))
    assert "anthropic-version" in server.requests[1].headers


async def test_turns_pushed_over_http_are_played_and_requests_read_back(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    control = ModelServerControl(server.base_url)
    adapter = await make_adapter("chat")
    await control.script(
        [ToolCallsTurn(calls=[ScriptedToolCall(name="ls")]), {"type": "text", "text": "two"}]
    )

    first = await adapter.complete(HI)
    second = await adapter.complete(HI)

    assert first.tool_calls[0].name == "ls"
    assert second.text == "two"
    recorded = await control.requests()
    assert recorded == server.requests
    await control.reset()
    assert await control.requests() == []


async def test_an_invalid_script_is_refused_with_the_reason(server: ScriptedModelServer) -> None:
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.base_url}/_script", json=[{"type": "error"}]) as response,
    ):
        assert response.status == 400
        assert "status" in (await response.json())["error"]
    assert server.remaining_turns == 0


async def test_it_runs_as_a_subprocess_that_prints_its_url(tmp_path: Path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"turns": [{"type": "text", "text": "from the file"}]}))
    process = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "tiny_harness.testing.model_server",
        "--port",
        "0",
        "--script",
        str(script),
        stdout=asyncio.subprocess.PIPE,
    )
    try:
        assert process.stdout is not None
        url = (await asyncio.wait_for(process.stdout.readline(), timeout=20)).decode().strip()
        control = ModelServerControl(url)
        await control.script([TextTurn(text="pushed later")])
        async with AsyncOpenAI(base_url=f"{url}/v1", api_key=TEST_KEY, max_retries=0) as client:
            replies = [
                (await client.responses.create(model="m", input="hi")).output_text for _ in range(3)
            ]

        assert url.startswith("http://127.0.0.1:")
        assert replies == ["from the file", "pushed later", "Done."]
        assert [r.body["input"] for r in await control.requests()] == ["hi"] * 3
    finally:
        process.terminate()
        assert await asyncio.wait_for(process.wait(), timeout=10) == 0


@pytest.mark.parametrize("arguments", ['{"path": "a"}', "not json"])
async def test_raw_argument_text_is_passed_through_to_openai_clients(
    arguments: str, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("responses")
    server.script([ToolCallsTurn(calls=[ScriptedToolCall(name="ls", arguments=arguments)])])

    response = await adapter.complete(HI)

    assert response.tool_calls[0].arguments_json == arguments


async def post_model_request(server: ScriptedModelServer, path: str) -> tuple[int, Any, Any]:
    """Status, headers and JSON body of one raw request, to check the wire shape itself."""
    async with (
        aiohttp.ClientSession() as session,
        session.post(f"{server.base_url}{path}", json={"model": "m"}) as response,
    ):
        return response.status, response.headers, await response.json()


@pytest.mark.parametrize(
    ("path", "expected"),
    [
        pytest.param(
            "/v1/chat/completions",
            {
                "error": {
                    "message": CONTEXT_TOO_LONG_MESSAGES["chat"],
                    "type": "invalid_request_error",
                    "param": "messages",
                    "code": "context_length_exceeded",
                }
            },
            id="chat",
        ),
        pytest.param(
            "/v1/responses",
            {
                "error": {
                    "message": CONTEXT_TOO_LONG_MESSAGES["responses"],
                    "type": "invalid_request_error",
                    "param": "input",
                    "code": "context_length_exceeded",
                }
            },
            id="responses",
        ),
        pytest.param(
            "/v1/messages",
            {
                "type": "error",
                "error": {
                    "type": "invalid_request_error",
                    "message": "prompt is too long: 250000 tokens > 200000 maximum",
                },
            },
            id="messages",
        ),
    ],
)
async def test_context_too_long_is_answered_in_each_providers_own_shape(
    path: str, expected: dict[str, Any], server: ScriptedModelServer
) -> None:
    server.script([ErrorTurn(status=400, context_too_long=True)])

    status, _, body = await post_model_request(server, path)

    assert (status, body) == (400, expected)


def test_context_too_long_must_be_a_400() -> None:
    with pytest.raises(ValidationError, match="set status to 400"):
        ErrorTurn(status=413, context_too_long=True)


async def test_an_error_turn_sets_the_openai_code_and_extra_headers(
    server: ScriptedModelServer,
) -> None:
    date = "Wed, 21 Oct 2015 07:28:00 GMT"
    server.script(
        [ErrorTurn(status=429, code="rate_limit_exceeded", headers={"retry-after": date})]
    )

    status, headers, body = await post_model_request(server, "/v1/chat/completions")

    assert (status, body["error"]["code"], headers["retry-after"]) == (
        429,
        "rate_limit_exceeded",
        date,
    )
    assert "retry-after-ms" not in headers


def test_a_script_written_before_the_new_fields_still_parses_and_new_ones_round_trip() -> None:
    old = parse_turns([{"type": "error", "status": 503, "retry_after_seconds": 1}])
    new = ErrorTurn(status=400, code="x", headers={"a": "b"}, context_too_long=True)

    assert old == [ErrorTurn(status=503, retry_after_seconds=1)]
    assert parse_turns([new.model_dump(mode="json")]) == [new]


async def test_a_turn_with_when_waits_for_a_request_that_contains_its_text(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    """Two tasks calling at once: each gets the turn meant for it, whichever calls first."""
    server.script([TextTurn(text="for the child", when="Count."), TextTurn(text="for the lead")])
    adapter = await make_adapter("responses")

    lead = await adapter.complete(HI)
    child = await adapter.complete(
        LLMRequest(messages=(ChatMessage(role="user", content="Count."),))
    )
    after = await adapter.complete(HI)

    assert (lead.text, child.text) == ("for the lead", "for the child")
    assert after.text == "Done."  # the script has run out
