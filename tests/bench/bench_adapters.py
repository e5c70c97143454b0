"""Per-call overhead of each adapter, through the real SDK, against the scripted server.

The server answers at once, so the numbers are the harness's own cost per model call (request
building, the SDK's serialisation and HTTP round trip on loopback, response parsing): the floor
under every turn. Run it as ``python tests/bench/bench_adapters.py [--calls N]``; it is not
named ``test_*`` so pytest does not collect it.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import time

from tiny_harness.core.llm import ChatMessage, LLMRequest, ToolSpec
from tiny_harness.models import build_adapter, parse_provider_settings
from tiny_harness.testing.model_server import ScriptedModelServer

REQUEST = LLMRequest(
    system="You are a careful assistant.",
    messages=tuple(
        ChatMessage(role="user" if n % 2 == 0 else "assistant", content=f"message {n} " * 20)
        for n in range(9)
    ),
    tools=(ToolSpec(name="read_file", description="Read a file."),),
    reasoning_effort="medium",
)


def percentile(samples: list[float], fraction: float) -> float:
    ordered = sorted(samples)
    return ordered[min(len(ordered) - 1, round(fraction * (len(ordered) - 1)))]


async def bench(calls: int, warmup: int) -> None:
    async with ScriptedModelServer() as server:
        cases = [
            ("openai responses", "openai", {"api": "responses"}, server.openai_base_url),
            ("openai chat", "openai", {"api": "chat"}, server.openai_base_url),
            ("anthropic messages", "anthropic", {}, server.anthropic_base_url),
        ]
        print(f"{'adapter':<20} {'calls':>6} {'p50 ms':>8} {'p99 ms':>8} {'mean ms':>8}")
        for label, provider, extra, base_url in cases:
            settings = parse_provider_settings(
                provider, {"model": "bench-model", "base_url": base_url, **extra}
            )
            adapter = build_adapter(settings, api_key="bench-key")
            samples: list[float] = []
            for n in range(warmup + calls):
                started = time.perf_counter()
                await adapter.complete(REQUEST)
                if n >= warmup:
                    samples.append((time.perf_counter() - started) * 1000)
            await adapter.aclose()
            server.reset()
            print(
                f"{label:<20} {calls:>6} {percentile(samples, 0.5):>8.2f} "
                f"{percentile(samples, 0.99):>8.2f} {statistics.fmean(samples):>8.2f}"
            )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else None)
    parser.add_argument("--calls", type=int, default=300, help="timed calls per adapter")
    parser.add_argument("--warmup", type=int, default=20, help="untimed calls first")
    args = parser.parse_args()
    asyncio.run(bench(args.calls, args.warmup))


if __name__ == "__main__":
    main()
