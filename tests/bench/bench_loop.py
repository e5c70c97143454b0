"""The core loop's own overhead per turn, with a model that answers instantly and no HTTP.

Run it as ``python tests/bench/bench_loop.py``. Each turn drains one message, makes two model
calls (the first asks for a user tool, whose arguments are schema-validated) and completes,
checkpointing four journal entries into an in-memory host. What is measured is everything the
loop does around the model: context assembly, the budget check, validation, journaling and
turn-end logic. The target is p50 <= 1 ms; then the same turn is timed through each real SDK
against the scripted model server (an HTTP round trip per model call included).
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time
from collections.abc import Sequence
from typing import Any

from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.llm import ChatMessage, LLMRequest, LLMResponse, ToolCall, Usage
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.task import Lifecycle, TaskExtension
from tiny_harness.core.tools import ToolContext, ToolRegistry
from tiny_harness.core.turn import (
    InboundMessage,
    JournalEntry,
    SpawnIntent,
    TaskSettings,
    TurnInput,
    TurnOutcome,
)
from tiny_harness.models.config import parse_provider_settings
from tiny_harness.models.factory import build_adapter
from tiny_harness.testing.model_server import ScriptedModelServer

TARGET_P50_MS = 1.0


class InstantModel:
    """Answers with a tool call, then with text, at zero delay."""

    default_model = "bench-model"

    def __init__(self) -> None:
        self.calls = 0
        self._ask = LLMResponse(
            tool_calls=(ToolCall(id="c1", name="lookup", arguments_json='{"key": "revenue"}'),),
            usage=Usage(input_tokens=1000, output_tokens=20),
        )
        self._answer = LLMResponse(text="Revenue grew 12%.", usage=Usage(output_tokens=8))

    async def complete(self, request: LLMRequest) -> LLMResponse:
        self.calls += 1
        return self._ask if self.calls % 2 else self._answer


class BenchHost:
    """The smallest host that honours the protocol, in memory."""

    def __init__(self) -> None:
        self.journal: list[JournalEntry] = []
        self.inbox = [InboundMessage(id="m1", content="How did revenue do?", sender="alice")]

    async def settings(self) -> TaskSettings:
        return TaskSettings(model="bench-model", reasoning_effort="low")

    async def drain(self) -> Sequence[InboundMessage]:
        inbox, self.inbox = self.inbox, []
        return inbox

    async def checkpoint(self, entry: JournalEntry) -> None:
        self.journal.append(entry)

    async def spawn(self, intent: SpawnIntent) -> str:
        return f"{intent.parent_task_id}-child"

    async def end_turn(self, outcome: TurnOutcome) -> None:
        pass


def lookup(args: dict[str, Any], ctx: ToolContext) -> str:
    return f"{args['key']}: +12%"


async def bench(turns: int, history_len: int, model: Any = None) -> list[float]:
    registry = ToolRegistry()
    registry.tool(
        "lookup",
        "Look up a figure.",
        {"type": "object", "properties": {"key": {"type": "string"}}, "required": ["key"]},
    )(lookup)
    loop = CoreLoop(model or InstantModel(), FixedContextWindow(200_000), registry)
    task = TaskExtension(
        goal="Summarise the quarterly report",
        description="Use the figures tool.",
        acceptance_criteria=("Names the growth rate",),
        lifecycle=Lifecycle.DELEGATED,
    )
    history = tuple(
        ChatMessage(role="user" if i % 2 == 0 else "assistant", content="earlier message " * 20)
        for i in range(history_len)
    )
    samples: list[float] = []
    for n in range(turns):
        turn = TurnInput(task_id="t1", turn=n, task=task, history=history)
        host = BenchHost()
        start = time.perf_counter()
        await loop.run_turn(host, turn)
        samples.append((time.perf_counter() - start) * 1000)
    return samples


async def bench_sdks(turns: int, history_len: int) -> None:
    """The same turn through each real SDK against the scripted server at zero delay: the
    loop plus the SDK's request building and parsing plus one loopback HTTP round trip."""
    async with ScriptedModelServer() as server:
        sections = {
            "OpenAI Responses": (
                "openai",
                {"api": "responses", "base_url": server.openai_base_url},
            ),
            "OpenAI Chat Completions": (
                "openai",
                {"api": "chat", "base_url": server.openai_base_url},
            ),
            "Anthropic Messages": ("anthropic", {"base_url": server.anthropic_base_url}),
        }
        for label, (provider, section) in sections.items():
            settings = parse_provider_settings(provider, {"model": "bench-model", **section})
            adapter = build_adapter(settings, api_key="bench")
            script = [
                {"type": "tool_calls", "calls": [{"name": "lookup", "arguments": {"key": "r"}}]},
                {"type": "text", "text": "Revenue grew 12%."},
            ]
            server.script(script * (turns + 20))
            await bench(20, history_len, adapter)  # warm up the connection pool
            samples = sorted(await bench(turns, history_len, adapter))
            await adapter.aclose()
            p50 = statistics.median(samples)
            p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
            print(f"full turn through {label} (2 HTTP calls): p50 {p50:.2f} ms, p99 {p99:.2f} ms")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--turns", type=int, default=5000)
    parser.add_argument("--history", type=int, default=20, help="messages before the turn")
    args = parser.parse_args()
    asyncio.run(bench(200, args.history))  # warm up imports and caches
    samples = sorted(asyncio.run(bench(args.turns, args.history)))
    p50 = statistics.median(samples)
    p99 = samples[min(len(samples) - 1, int(len(samples) * 0.99))]
    verdict = "within" if p50 <= TARGET_P50_MS else "OVER"
    print(
        f"core loop overhead per turn (2 model calls, 1 tool call, {args.history} history "
        f"messages, {args.turns} turns): p50 {p50:.3f} ms, p99 {p99:.3f} ms "
        f"[{verdict} the p50 target of {TARGET_P50_MS:.1f} ms]"
    )
    asyncio.run(bench_sdks(min(args.turns, 200), args.history))


if __name__ == "__main__":
    main()
