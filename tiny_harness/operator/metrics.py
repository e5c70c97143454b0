"""The operator's Prometheus metrics, on a registry of its own.

A registry per operator (rather than the process-global default) keeps tests that run several
operators in one process honest, and means ``/metrics`` shows exactly what this operator did.
"""

from __future__ import annotations

import dataclasses
import inspect
import time
from collections import Counter as Tally
from collections.abc import Iterable
from typing import Any

from prometheus_client import CollectorRegistry, Counter, Gauge, Histogram, start_http_server
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily, Metric
from prometheus_client.registry import Collector

from tiny_harness.core.llm import LLMRequest, LLMResponse, ModelAdapter
from tiny_harness.core.tools import Tool, ToolContext, ToolRegistry
from tiny_harness.operator.cache import Cache

_TURN_BUCKETS = (0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300)


class OperatorMetrics:
    def __init__(self) -> None:
        self.registry = CollectorRegistry()
        r = self.registry
        self.turns_started = Counter(
            "tiny_harness_turns_started_total",
            "Turns started (resumed turns included).",
            registry=r,
        )
        self.turns_finished = Counter(
            "tiny_harness_turns_finished_total",
            "Turns finished, by outcome.",
            ["outcome"],
            registry=r,
        )
        self.turn_seconds = Histogram(
            "tiny_harness_turn_duration_seconds",
            "Wall time of a turn.",
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.model_seconds = Histogram(
            "tiny_harness_model_request_duration_seconds",
            "Wall time of one model request, retries included.",
            ["model"],
            registry=r,
        )
        self.tool_seconds = Histogram(
            "tiny_harness_tool_call_duration_seconds",
            "Wall time of one tool call (intrinsics excluded), by tool.",
            ["tool"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.model_tokens = Counter(
            "tiny_harness_model_tokens_total",
            "Tokens used, by model and direction (input, output, and cached_input: the part of "
            "the input the provider served from its prompt cache).",
            ["model", "direction"],
            registry=r,
        )
        self.tasks = Gauge(
            "tiny_harness_tasks",
            "Tasks this operator has seen, by state.",
            ["state"],
            registry=r,
        )
        self.budget_stops = Counter(
            "tiny_harness_budget_stops_total",
            "Turns stopped by a task's budget, by what followed (over_budget: parked until "
            "it is raised; budget_exceeded: failed).",
            ["action"],
            registry=r,
        )
        self.approvals = Counter(
            "tiny_harness_approvals_total",
            "Decisions on calls that waited for approval, by outcome: approved, edited (approved "
            "with a decider's arguments), rejected, timed_out_rejected, timed_out_approved.",
            ["outcome"],
            registry=r,
        )
        self.approval_wait_seconds = Histogram(
            "tiny_harness_approval_wait_seconds",
            "Time from a call's park to its decision (a timeout's included).",
            buckets=(1, 5, 15, 60, 300, 900, 3600, 4 * 3600, 24 * 3600),
            registry=r,
        )
        self.shards_held = Gauge(
            "tiny_harness_shards_held",
            "Shards this replica holds (0 when the replicas do not split the tasks).",
            registry=r,
        )
        self.subtasks_spawned = Counter(
            "tiny_harness_subtasks_spawned_total", "Child tasks created.", registry=r
        )
        self.errors = Counter(
            "tiny_harness_errors_total", "Errors, by where they happened.", ["where"], registry=r
        )
        self.tool_server_calls = Counter(
            "tiny_harness_tool_server_calls_total",
            "MCP tool calls, by tool server (namespace/name) and outcome: ok, truncated (cut to "
            "maxResultBytes), error (the tool said so), timeout, unreachable, refused, invalid.",
            ["server", "outcome"],
            registry=r,
        )
        self.tool_server_call_seconds = Histogram(
            "tiny_harness_tool_server_call_duration_seconds",
            "Wall time of one MCP tool call, connection and handshake included, by tool server.",
            ["server"],
            buckets=_TURN_BUCKETS,
            registry=r,
        )
        self.tool_server_discoveries = Counter(
            "tiny_harness_tool_server_discoveries_total",
            "Tool server discoveries, by tool server and outcome: listed (tools/list asked), "
            "adopted (the status of this generation taken as it was), or the Ready=False reason.",
            ["server", "outcome"],
            registry=r,
        )
        self.unreadable = Counter(
            "tiny_harness_unreadable_objects_total",
            "Stored objects left out because they cannot be parsed, by kind (HarnessMessage, "
            "HarnessTurn): counted as the watch delivers each version of one.",
            ["kind"],
            registry=r,
        )
        self._cache_figures = _CacheFigures()
        r.register(self._cache_figures)
        self._states: dict[tuple[str, str], str] = {}
        self._tally: Tally[str] = Tally()

    def watch_cache(self, cache: Cache) -> None:
        """Report the cache's figures, read at each scrape (nothing is counted on its path)."""
        self._cache_figures.cache = cache

    def task_state(self, namespace: str, name: str, state: str | None) -> None:
        """Record one task's state. Constant time: it runs on every pass of every task, and a
        recount over all tasks would make each pass cost more the more tasks there are."""
        key = (namespace, name)
        old = self._states.pop(key, None) if state is None else self._states.get(key)
        if old == state:
            return
        if state is not None:
            self._states[key] = state
            self._tally[state] += 1
            self.tasks.labels(state=state).set(self._tally[state])
        if old is not None:
            self._tally[old] -= 1
            self.tasks.labels(state=old).set(self._tally[old])

    def skipped(self, kind: str) -> None:
        """An object of ``kind`` was left out, as it cannot be parsed (kube/unreadable.py)."""
        self.unreadable.labels(kind=kind).inc()

    def serve(self, bind: str) -> None:
        host, _, port = bind.rpartition(":")
        start_http_server(int(port), addr=host or "127.0.0.1", registry=self.registry)


class MeteredAdapter:
    """A model adapter that records each request's duration and tokens."""

    def __init__(self, inner: ModelAdapter, metrics: OperatorMetrics) -> None:
        self._inner = inner
        self._metrics = metrics

    @property
    def default_model(self) -> str:
        return self._inner.default_model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        model = request.model or self._inner.default_model
        started = time.perf_counter()
        try:
            response = await self._inner.complete(request)
        except Exception:
            self._metrics.errors.labels(where="model").inc()
            raise
        finally:
            self._metrics.model_seconds.labels(model=model).observe(time.perf_counter() - started)
        self._metrics.model_tokens.labels(model=model, direction="input").inc(
            response.usage.input_tokens
        )
        self._metrics.model_tokens.labels(model=model, direction="output").inc(
            response.usage.output_tokens
        )
        self._metrics.model_tokens.labels(model=model, direction="cached_input").inc(
            response.usage.cached_input_tokens
        )
        return response


def metered_tools(tools: Iterable[Tool], metrics: OperatorMetrics) -> ToolRegistry:
    """The tools, each timed into ``tiny_harness_tool_call_duration_seconds`` by its name."""

    def timed(tool: Tool) -> Tool:
        function = tool.function
        if function is None:
            return tool
        name = tool.spec.name

        async def run(args: dict[str, Any], context: ToolContext) -> object:
            started = time.perf_counter()
            try:
                result = function(args, context)
                return await result if inspect.isawaitable(result) else result
            finally:
                metrics.tool_seconds.labels(tool=name).observe(time.perf_counter() - started)

        return dataclasses.replace(tool, function=run)

    registry = ToolRegistry()
    for tool in tools:
        registry.include(timed(tool))
    return registry


class _CacheFigures(Collector):
    """The operator cache's memory, as it is at the scrape (:mod:`.resident`)."""

    def __init__(self) -> None:
        #: The cache reported (:meth:`OperatorMetrics.watch_cache`); until then, no samples.
        self.cache: Cache | None = None

    def describe(self) -> Iterable[Metric]:
        return self.collect()

    def collect(self) -> Iterable[Metric]:
        cache = self.cache
        held = GaugeMetricFamily(
            "tiny_harness_operator_cache_bytes",
            "What the operator's cache holds in memory, by form: text (objects kept whole, "
            "bounded by operator.cache_bytes unless the tasks at work need more), parsed (an "
            "estimate of the parsed versions kept), budget (operator.cache_bytes).",
            labels=["form"],
        )
        if cache is not None:
            held.add_metric(["text"], cache.resident.bytes)
            held.add_metric(["parsed"], cache.parsed_bytes)
            held.add_metric(["budget"], cache.resident.budget)
        yield held
        objects = GaugeMetricFamily(
            "tiny_harness_operator_cache_objects",
            "Objects the operator's cache knows, by form: known (in summary at least), whole "
            "(their text kept).",
            labels=["form"],
        )
        if cache is not None:
            objects.add_metric(["known"], cache.feeds.known())
            objects.add_metric(["whole"], len(cache.resident))
        yield objects
        moved = CounterMetricFamily(
            "tiny_harness_operator_cache_objects_moved",
            "Objects whose text the cache dropped for room (dropped), and read back by name "
            "when their task was worked (read_back).",
            labels=["what"],
        )
        if cache is not None:
            moved.add_metric(["dropped"], cache.resident.dropped)
            moved.add_metric(["read_back"], cache.loaded)
        yield moved
