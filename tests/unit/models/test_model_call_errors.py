"""Every failed model call is classified: a condition reason, the setting to fix, and a message
that names it, whichever of the three APIs the adapter speaks. No message carries the key."""

from __future__ import annotations

from collections.abc import Awaitable

import pytest
from adapter_kit import KINDS, TEST_KEY, Kind, MakeAdapter, provider_of, settings_section

from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.models import (
    MODEL_CALL_REASONS,
    ModelCallError,
    ModelRequestRejectedError,
    ModelUnavailableError,
    build_adapter,
    parse_provider_settings,
)
from tiny_harness.testing.model_script import ErrorTurn, TextTurn
from tiny_harness.testing.model_server import ScriptedModelServer

HI = LLMRequest(messages=(ChatMessage(role="user", content="hi"),))


def key_env(kind: Kind) -> str:
    return "ANTHROPIC_API_KEY" if kind == "messages" else "OPENAI_API_KEY"


async def failure(call: Awaitable[object]) -> ModelCallError:
    """The error an awaited call raised, for tests that inspect more than its type."""
    with pytest.raises(ModelCallError) as caught:
        await call
    return caught.value


def test_the_reasons_are_the_documented_five() -> None:
    assert {
        "ModelUnauthorized",
        "ModelNotFound",
        "ContextTooLong",
        "ModelRequestInvalid",
        "ModelUnavailable",
    } == MODEL_CALL_REASONS


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [401, 403])
async def test_a_refused_key_is_unauthorized_and_names_the_key_variable(
    kind: Kind, status: int, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=status, message=f"Incorrect API key provided: {TEST_KEY}")])

    error = await failure(adapter.complete(HI))

    assert isinstance(error, ModelRequestRejectedError)
    assert (error.reason, error.setting, error.status) == (
        "ModelUnauthorized",
        key_env(kind),
        status,
    )
    assert error.permanent
    assert f"check {key_env(kind)}" in str(error)
    assert TEST_KEY not in str(error)
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unknown_model_is_not_found_and_names_the_model_setting(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=404, message="The model `gpt-nope` does not exist")])

    error = await failure(adapter.complete(HI))

    prefix = provider_of(kind)
    assert isinstance(error, ModelRequestRejectedError)
    assert (error.reason, error.setting) == ("ModelNotFound", f"{prefix}.model")
    assert error.permanent
    assert "The model `gpt-nope` does not exist" in str(error)
    assert f"check {prefix}.model and {prefix}.base_url" in str(error)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [400, 409, 413, 422])
async def test_another_refusal_is_an_invalid_request_with_the_providers_words(
    kind: Kind, status: int, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=status, message="tools[0].name: must match ^[a-z_]+$")])

    error = await failure(adapter.complete(HI))

    assert isinstance(error, ModelRequestRejectedError)
    assert (error.reason, error.setting, error.status) == ("ModelRequestInvalid", None, status)
    assert error.permanent
    assert "tools[0].name: must match ^[a-z_]+$" in str(error)
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_conversation_too_long_for_the_window_says_so_in_every_api(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=400, context_too_long=True)])

    error = await failure(adapter.complete(HI))

    prefix = provider_of(kind)
    assert isinstance(error, ModelRequestRejectedError)
    assert (error.reason, error.setting, error.status) == ("ContextTooLong", f"{prefix}.model", 400)
    assert error.permanent
    message = str(error)
    assert "the conversation no longer fits the model's context window" in message
    assert f"choose a model with a larger window (/model, or {prefix}.model)" in message
    assert "lower the context the task carries" in message
    assert len(server.requests) == 1


@pytest.mark.parametrize(
    ("message", "code"),
    [
        pytest.param("Invalid 'input': too many tokens.", "context_length_exceeded", id="code"),
        pytest.param(
            "This model's MAXIMUM CONTEXT LENGTH is 4096 tokens. However, you requested 9000.",
            None,
            id="vllm-wording-any-case",
        ),
        pytest.param("Request exceeds the Context Window.", None, id="context-window"),
        pytest.param(
            "input length and `max_tokens` exceed context limit: 199759 + 8192 > 200000",
            None,
            id="anthropic-max-tokens",
        ),
        pytest.param("Prompt is too long: 250000 tokens > 200000 maximum", None, id="anthropic"),
    ],
)
async def test_context_overflow_is_recognised_by_code_or_wording(
    message: str, code: str | None, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat")
    server.script([ErrorTurn(status=400, message=message, code=code)])

    error = await failure(adapter.complete(HI))

    assert error.reason == "ContextTooLong"


@pytest.mark.parametrize("kind", KINDS)
async def test_a_spent_retry_budget_is_unavailable_and_names_max_retries(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, max_retries=1)
    server.script([ErrorTurn(status=503, message="overloaded")] * 2)

    error = await failure(adapter.complete(HI))

    prefix = provider_of(kind)
    assert isinstance(error, ModelUnavailableError)
    assert (error.reason, error.setting, error.status) == (
        "ModelUnavailable",
        f"{prefix}.max_retries",
        503,
    )
    assert not error.permanent
    assert "last failure: HTTP 503: overloaded" in str(error)
    assert f"raise {prefix}.max_retries or {prefix}.timeout_seconds" in str(error)


async def test_a_spent_budget_of_timeouts_is_unavailable_without_a_status(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("responses", max_retries=1, timeout_seconds=0.2)
    server.script([TextTurn(text="late", delay_seconds=2)] * 2)

    error = await failure(adapter.complete(HI))

    assert (error.reason, error.status, error.attempts) == ("ModelUnavailable", None, 2)
    assert "last failure: timed out" in str(error)


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize(
    "turns",
    [
        pytest.param([ErrorTurn(status=400, message=f"bad key {TEST_KEY}")], id="400"),
        pytest.param([ErrorTurn(status=404, message=f"no model for {TEST_KEY}")], id="404"),
        pytest.param(
            [ErrorTurn(status=400, message=f"prompt is too long for {TEST_KEY}")], id="context"
        ),
        pytest.param([ErrorTurn(status=503, message=f"down for {TEST_KEY}")] * 2, id="503"),
    ],
)
async def test_no_message_repeats_a_key_the_provider_echoed(
    kind: Kind, turns: list[ErrorTurn], server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, max_retries=1)
    server.script(turns)

    error = await failure(adapter.complete(HI))

    assert TEST_KEY not in str(error)
    assert "[redacted]" in str(error)


async def test_a_key_of_any_shape_is_scrubbed_when_the_provider_echoes_it(
    server: ScriptedModelServer,
) -> None:
    # A proxy's token looks nothing like an OpenAI key, so only knowing the key catches it.
    proxy_token = "proxy-token-7f3a9c2e51"
    settings = parse_provider_settings("openai", settings_section("chat", server))
    adapter = build_adapter(settings, api_key=proxy_token)
    server.script([ErrorTurn(status=400, message=f"token {proxy_token} lacks scope chat")])
    try:
        error = await failure(adapter.complete(HI))
    finally:
        await adapter.aclose()

    assert proxy_token not in str(error)
    assert "token [redacted] lacks scope chat" in str(error)


async def test_a_long_provider_message_is_cut_short(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat")
    server.script([ErrorTurn(status=400, message="x" * 5000)])

    error = await failure(adapter.complete(HI))

    assert len(str(error)) < 500
    assert str(error).endswith("…")
