"""Transient provider failures are retried within a bounded budget; the rest fail typed."""

from __future__ import annotations

import time

import pytest
from adapter_kit import KINDS, TEST_KEY, Kind, MakeAdapter

from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.models import ModelRequestRejectedError, ModelUnavailableError, RetryPolicy
from tiny_harness.testing.model_script import ErrorTurn, TextTurn
from tiny_harness.testing.model_server import ScriptedModelServer

HI = LLMRequest(messages=(ChatMessage(role="user", content="hi"),))


@pytest.mark.parametrize("kind", KINDS)
async def test_a_rate_limit_is_retried_and_the_next_answer_returned(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=429), TextTurn(text="after the wait")])

    response = await adapter.complete(HI)

    assert response.text == "after the wait"
    assert len(server.requests) == 2
    assert server.requests[0].raw_body == server.requests[1].raw_body


@pytest.mark.parametrize("kind", KINDS)
@pytest.mark.parametrize("status", [500, 502, 503, 529])
async def test_a_server_error_is_retried(
    kind: Kind, status: int, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=status), TextTurn(text="recovered")])

    response = await adapter.complete(HI)

    assert response.text == "recovered"
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_retries_stop_at_the_budget_with_a_typed_error(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, max_retries=2)
    server.script([ErrorTurn(status=503, message="overloaded")] * 5)

    with pytest.raises(ModelUnavailableError, match="gave up after 3 attempt") as caught:
        await adapter.complete(HI)

    assert (caught.value.status, caught.value.attempts) == (503, 3)
    assert "max_retries" in str(caught.value)
    assert len(server.requests) == 3


@pytest.mark.parametrize("kind", KINDS)
async def test_a_slow_answer_times_out_and_is_retried(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind, timeout_seconds=0.2)
    server.script([TextTurn(text="too late", delay_seconds=2), TextTurn(text="in time")])

    response = await adapter.complete(HI)

    assert response.text == "in time"
    assert len(server.requests) == 2


@pytest.mark.parametrize("kind", KINDS)
async def test_a_bad_request_is_not_retried(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=400, message="messages: must not be empty")])

    with pytest.raises(ModelRequestRejectedError, match="must not be empty") as caught:
        await adapter.complete(HI)

    assert caught.value.status == 400
    assert len(server.requests) == 1


@pytest.mark.parametrize("kind", KINDS)
async def test_a_refused_key_names_the_variable_and_never_echoes_the_key(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=401, message=f"Incorrect API key provided: {TEST_KEY}")])

    with pytest.raises(ModelRequestRejectedError) as caught:
        await adapter.complete(HI)

    env = "ANTHROPIC_API_KEY" if kind == "messages" else "OPENAI_API_KEY"
    assert env in str(caught.value)
    assert TEST_KEY not in str(caught.value)


@pytest.mark.parametrize("kind", KINDS)
async def test_an_unknown_model_points_at_the_model_and_base_url_settings(
    kind: Kind, server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter(kind)
    server.script([ErrorTurn(status=404, message="model not found")])

    with pytest.raises(ModelRequestRejectedError, match=r"\.model and .*\.base_url"):
        await adapter.complete(HI)


async def test_a_servers_retry_after_is_honoured(
    server: ScriptedModelServer, make_adapter: MakeAdapter
) -> None:
    adapter = await make_adapter("chat")
    server.script([ErrorTurn(status=429, retry_after_seconds=0.3), TextTurn(text="ok")])

    started = time.monotonic()
    await adapter.complete(HI)

    assert time.monotonic() - started >= 0.3


def test_backoff_grows_and_is_capped_and_caps_retry_after() -> None:
    policy = RetryPolicy(max_retries=5, initial_backoff_seconds=1.0, max_backoff_seconds=4.0)

    waits = [policy.backoff(n) for n in range(5)]

    assert 0.5 <= waits[0] <= 1.0
    assert 1.0 <= waits[1] <= 2.0
    assert all(2.0 <= w <= 4.0 for w in waits[2:])
    assert policy.backoff(0, retry_after=60) == 4.0
