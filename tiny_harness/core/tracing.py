"""Trace spans of the domain: a turn, a model call, a tool call, a command; and the trace
context a message carries from its sender to the turn that takes it.

Only the OpenTelemetry *API* is used here. Until a process installs the SDK
(:mod:`tiny_harness.telemetry`, when tracing is configured), every tracer is the API's no-op
one: a span costs a few attribute writes to nothing, and :func:`carrier` writes no trace
context anywhere. So tracing is off unless it is configured, at no cost when it is off.

How one trace shows an A2A send to its reply, across processes that share nothing but the
API server:

1. the gateway's span for the request is current while it writes the ``HarnessMessage``;
   :func:`carrier` puts that span's context into the message's annotations;
2. the operator's turn span takes, as its parent, the context of the first participant's
   message the turn is about to take (:func:`context_of`), and links every other one;
3. the model and tool calls of the turn are its children (they run with the turn span
   current), and the turn ends by writing the status the gateway's wait ends on.

Names follow the OpenTelemetry GenAI semantic conventions where one exists
(``gen_ai.request.model``, ``gen_ai.usage.input_tokens``, ...), plus
``tiny_harness.llm.reasoning_effort``, the name the seed gives the effort setting.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator, Mapping
from typing import Final

from opentelemetry import propagate, trace
from opentelemetry.context import Context
from opentelemetry.semconv._incubating.attributes import gen_ai_attributes as gen_ai
from opentelemetry.semconv.attributes import error_attributes
from opentelemetry.trace import Link, Span, SpanKind, Status, StatusCode

from tiny_harness.core.llm import LLMRequest, LLMResponse, ModelAdapter, ToolCall

TRACER_NAME: Final = "tiny_harness"
#: The annotations a message (or a child task) carries its sender's trace context in: the W3C
#: ``traceparent`` and ``tracestate`` headers, under the project's prefix.
ANNOTATION_PREFIX: Final = "tiny-harness.dev/"
TRACE_KEYS: Final = ("traceparent", "tracestate")
TRACE_ANNOTATIONS: Final = frozenset(f"{ANNOTATION_PREFIX}{k}" for k in TRACE_KEYS)

# Attribute names of our own (the GenAI conventions have none for these).
REASONING_EFFORT: Final = "tiny_harness.llm.reasoning_effort"
TASK: Final = "tiny_harness.task"
NAMESPACE: Final = "tiny_harness.namespace"
TURN: Final = "tiny_harness.turn"
TURN_RESUMED: Final = "tiny_harness.turn.resumed"
TURN_OUTCOME: Final = "tiny_harness.turn.outcome"
COMMAND: Final = "tiny_harness.command"
PARTICIPANT: Final = "tiny_harness.participant"
MESSAGE_ID: Final = "tiny_harness.message_id"
TOOL_ERROR: Final = "tiny_harness.tool.error"
A2A_METHOD: Final = "a2a.method"
A2A_OUTCOME: Final = "a2a.outcome"
AGENT_NAME: Final = "tiny-harness"


def tracer() -> trace.Tracer:
    """The project's tracer from the process's provider (the no-op one until configured)."""
    return trace.get_tracer(TRACER_NAME)


def enabled() -> bool:
    """Has this process installed an SDK? Until then nothing is recorded, and work done only
    to give a span its parent (reading the messages a turn will take) can be skipped."""
    return not isinstance(trace.get_tracer_provider(), trace.ProxyTracerProvider)


# -- carrying the context through a resource -------------------------------------------------


def carrier() -> dict[str, str]:
    """The current span's context as annotations for a resource the caller is about to
    create; empty when no span is being recorded (tracing off, or nothing traced here)."""
    if not trace.get_current_span().get_span_context().is_valid:
        return {}
    headers: dict[str, str] = {}
    propagate.inject(headers)
    return {f"{ANNOTATION_PREFIX}{k}": v for k, v in headers.items() if k in TRACE_KEYS}


def context_of(annotations: Mapping[str, str] | None) -> Context | None:
    """The trace context a resource's annotations carry, or None when they carry none (or
    one that does not parse: a hand-written annotation must not break a turn)."""
    if not annotations:
        return None
    headers = {
        k: annotations[f"{ANNOTATION_PREFIX}{k}"]
        for k in TRACE_KEYS
        if f"{ANNOTATION_PREFIX}{k}" in annotations
    }
    if "traceparent" not in headers:
        return None
    context = propagate.extract(headers)
    if not trace.get_current_span(context).get_span_context().is_valid:
        return None
    return context


def parent_and_links(
    annotations: list[Mapping[str, str]],
) -> tuple[Context | None, list[Link]]:
    """For a span that serves several messages: the first one's context as its parent, and a
    link to each other's, so every sender's trace leads to it."""
    contexts = [c for c in (context_of(a) for a in annotations) if c is not None]
    if not contexts:
        return None, []
    links = [Link(trace.get_current_span(c).get_span_context()) for c in contexts[1:]]
    return contexts[0], links


# -- spans ----------------------------------------------------------------------------------


@contextlib.contextmanager
def turn_span(
    task: str,
    namespace: str,
    number: int,
    *,
    resumed: bool,
    parent: Context | None = None,
    links: list[Link] | None = None,
) -> Iterator[Span]:
    """The span of one turn: every model and tool call of the turn runs inside it. It is
    current for the block; the caller sets its outcome (:func:`end_turn`)."""
    span = tracer().start_span(
        "turn",
        context=parent,
        kind=SpanKind.INTERNAL,
        links=links,
        attributes={
            gen_ai.GEN_AI_OPERATION_NAME: "invoke_agent",
            gen_ai.GEN_AI_AGENT_NAME: AGENT_NAME,
            gen_ai.GEN_AI_CONVERSATION_ID: task,
            TASK: task,
            NAMESPACE: namespace,
            TURN: number,
            TURN_RESUMED: resumed,
        },
    )
    with trace.use_span(span, end_on_exit=True):
        yield span


def end_turn(span: Span, outcome: str, *, failed: bool = False) -> None:
    span.set_attribute(TURN_OUTCOME, outcome)
    if failed:
        span.set_status(Status(StatusCode.ERROR, outcome))


@contextlib.contextmanager
def command_span(
    name: str, task: str, sender: str, message_id: str, parent: Context | None
) -> Iterator[Span]:
    """The span of a participant's command, a child of the request that sent it."""
    with tracer().start_as_current_span(
        f"command /{name}",
        context=parent,
        attributes={
            COMMAND: name,
            TASK: task,
            PARTICIPANT: sender,
            MESSAGE_ID: message_id,
        },
    ) as span:
        yield span


@contextlib.contextmanager
def tool_span(call: ToolCall, *, intrinsic: bool) -> Iterator[Span]:
    """The span of one tool call, as the GenAI conventions name it (``execute_tool``)."""
    with tracer().start_as_current_span(
        f"execute_tool {call.name}",
        attributes={
            gen_ai.GEN_AI_OPERATION_NAME: "execute_tool",
            gen_ai.GEN_AI_TOOL_NAME: call.name,
            gen_ai.GEN_AI_TOOL_CALL_ID: call.id,
            gen_ai.GEN_AI_TOOL_TYPE: "intrinsic" if intrinsic else "function",
        },
    ) as span:
        yield span


def tool_result(span: Span, *, is_error: bool, content: str) -> None:
    """A tool's error is an answer to the model, not a failed turn: the span says so."""
    span.set_attribute(TOOL_ERROR, is_error)
    if is_error:
        span.set_status(Status(StatusCode.ERROR, content[:200]))


class TracedAdapter:
    """A model adapter whose every call is a ``chat {model}`` client span with the GenAI
    attributes: the provider, the requested and answering model, the effort, and usage.

    A retry inside the call is an event on the span (see :mod:`tiny_harness.models.retry`),
    so the span covers the call as the turn saw it, retries included.
    """

    def __init__(self, inner: ModelAdapter, provider: str) -> None:
        self._inner = inner
        self._provider = provider

    @property
    def default_model(self) -> str:
        return self._inner.default_model

    async def complete(self, request: LLMRequest) -> LLMResponse:
        model = request.model or self._inner.default_model
        attributes: dict[str, str | int] = {
            gen_ai.GEN_AI_OPERATION_NAME: "chat",
            gen_ai.GEN_AI_PROVIDER_NAME: self._provider,
            gen_ai.GEN_AI_REQUEST_MODEL: model,
        }
        if request.reasoning_effort is not None:
            attributes[REASONING_EFFORT] = request.reasoning_effort
        if request.max_output_tokens is not None:
            attributes[gen_ai.GEN_AI_REQUEST_MAX_TOKENS] = request.max_output_tokens
        with tracer().start_as_current_span(
            f"chat {model}", kind=SpanKind.CLIENT, attributes=attributes
        ) as span:
            try:
                response = await self._inner.complete(request)
            except Exception as exc:
                span.set_attribute(
                    error_attributes.ERROR_TYPE, getattr(exc, "reason", type(exc).__name__)
                )
                raise
            usage = response.usage
            span.set_attributes(
                {
                    gen_ai.GEN_AI_RESPONSE_MODEL: response.model or model,
                    gen_ai.GEN_AI_USAGE_INPUT_TOKENS: usage.input_tokens,
                    gen_ai.GEN_AI_USAGE_OUTPUT_TOKENS: usage.output_tokens,
                    gen_ai.GEN_AI_USAGE_CACHE_READ_INPUT_TOKENS: usage.cached_input_tokens,
                    gen_ai.GEN_AI_RESPONSE_FINISH_REASONS: (
                        ["tool_calls"] if response.tool_calls else ["stop"]
                    ),
                }
            )
            return response


def add_event(name: str, attributes: Mapping[str, str | int | float]) -> None:
    """An event on the current span (a model call's retry, say); nothing when not tracing."""
    span = trace.get_current_span()
    if span.is_recording():
        span.add_event(name, dict(attributes))
