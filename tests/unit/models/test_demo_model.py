"""The demo model (models/demo.py), through the operator's own OpenAI adapter and SDK: it
answers, says it is a demo, and names what to configure instead."""

from __future__ import annotations

from tiny_harness.core.llm import ChatMessage, LLMRequest
from tiny_harness.models import build_adapter, parse_provider_settings
from tiny_harness.models.demo import MODEL, DemoModel


async def test_the_demo_answers_through_the_real_adapter_and_says_what_it_is() -> None:
    async with DemoModel() as demo:
        adapter = build_adapter(
            parse_provider_settings("openai", demo.settings()),
            environ={"TINY_HARNESS_DEMO_KEY": "x"},
        )
        try:
            reply = await adapter.complete(
                LLMRequest(messages=(ChatMessage(role="user", content="Plan the release."),))
            )
        finally:
            await adapter.aclose()
    assert reply.model == MODEL
    assert reply.text.startswith("Done.")
    assert "demo model" in reply.text
    assert '"Plan the release."' in reply.text
    assert "OPENAI_API_KEY" in reply.text
    assert reply.usage.output_tokens > 0
