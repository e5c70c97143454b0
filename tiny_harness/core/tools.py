"""Tools the model may call, and the validating invoker that stands between the two.

A model's tool call is untrusted text: the arguments may not be JSON, may not match the tool's
schema, may name a tool that does not exist, and the tool itself may fail. None of that may
crash a turn. The invoker turns each case into an error tool result (``is_error=True``) whose
message tells the model what to fix, so it can try again or carry on.

Each tool's JSON Schema is checked once, when the tool is registered, and compiled to a
``jsonschema`` validator then; a call pays only for validation.
"""

from __future__ import annotations

import inspect
import json
import logging
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any, Final

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.json_bounds import ARGUMENTS_CHARS, JsonBoundError, loads
from tiny_harness.core.llm import ChatMessage, ToolCall, ToolSpec

log = logging.getLogger(__name__)

#: At most this many schema violations are listed in one error result.
MAX_REPORTED_VIOLATIONS: Final = 5


@dataclass(frozen=True)
class ToolContext:
    """What a tool knows about the call it serves.

    ``call_id`` is the step's deterministic id (``t1/turn-3/tool-0-call_abc``): a tool with a
    side effect outside the cluster should use it as an idempotency key, because a crash after
    the tool ran and before its result was checkpointed runs the call again.
    """

    task_id: str
    call_id: str


#: A tool's body: takes the validated arguments, returns text (or JSON-able data) for the model.
ToolFunction = Callable[[dict[str, Any], ToolContext], Awaitable[object] | object]


@dataclass(frozen=True)
class FileOutput:
    """A tool's result that carries files besides its text (an MCP image, a binary
    resource): the text is what the model reads; each file is kept as an artifact of the task
    by the loop, which tells the model so."""

    text: str
    files: tuple[Attachment, ...]


class ToolError(HarnessError):
    """Raised by a tool to give the model an error it can act on; sent to the model verbatim."""


class ToolRegistrationError(HarnessError):
    """A tool that cannot be registered: a taken name or an invalid JSON Schema."""

    def __init__(self, name: str, problem: str) -> None:
        super().__init__(f"tool {name!r}: {problem}")
        self.name = name
        self.problem = problem


class InvalidToolCallError(HarnessError):
    """A tool call the invoker refused; the message is what the model is told."""


@dataclass(frozen=True)
class Tool:
    """A registered tool: its spec, its body (``None`` for an intrinsic the loop applies), and
    its compiled argument validator."""

    spec: ToolSpec
    function: ToolFunction | None
    validator: Draft202012Validator


def compile_schema(spec: ToolSpec) -> Draft202012Validator:
    """The validator for ``spec.parameters``; :class:`ToolRegistrationError` if it is invalid."""
    schema = dict(spec.parameters)
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ToolRegistrationError(
            spec.name, f"its parameters are not a valid JSON Schema: {exc.message}"
        ) from None
    if schema.get("type") != "object":
        raise ToolRegistrationError(
            spec.name, 'its parameters must be a JSON Schema with "type": "object"'
        )
    return Draft202012Validator(schema)


class ToolRegistry:
    """The tools of one harness, by name. Names are unique; intrinsics may not be shadowed."""

    def __init__(self, *, reserved: Iterable[str] = ()) -> None:
        self._tools: dict[str, Tool] = {}
        self._reserved = frozenset(reserved)

    def add(self, spec: ToolSpec, function: ToolFunction | None) -> Tool:
        """Register a tool; ``function=None`` marks one the loop applies itself (an intrinsic)."""
        return self.include(Tool(spec=spec, function=function, validator=compile_schema(spec)))

    def include(self, tool: Tool) -> Tool:
        """Register an already built tool (from another registry, say)."""
        name = tool.spec.name
        if name in self._reserved:
            raise ToolRegistrationError(name, "the name is reserved for an intrinsic")
        if name in self._tools:
            raise ToolRegistrationError(name, "a tool with this name is already registered")
        self._tools[name] = tool
        return tool

    def tool(
        self, name: str, description: str, parameters: Mapping[str, Any] | None = None
    ) -> Callable[[ToolFunction], ToolFunction]:
        """Decorator form of :meth:`add`."""
        spec = ToolSpec(
            name=name,
            description=description,
            parameters=parameters or {"type": "object", "properties": {}},
        )

        def register(function: ToolFunction) -> ToolFunction:
            self.add(spec, function)
            return function

        return register

    def get(self, name: str) -> Tool | None:
        return self._tools.get(name)

    def __iter__(self) -> Iterator[Tool]:
        return iter(self._tools.values())

    def __contains__(self, name: object) -> bool:
        return name in self._tools

    def __len__(self) -> int:
        return len(self._tools)

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(self._tools)

    @property
    def specs(self) -> tuple[ToolSpec, ...]:
        return tuple(t.spec for t in self._tools.values())

    def extended(self, tools: Iterable[Tool]) -> ToolRegistry:
        """A new registry with this one's tools and ``tools`` (a name taken raises)."""
        out = ToolRegistry(reserved=self._reserved)
        out._tools = dict(self._tools)
        for tool in tools:
            out.include(tool)
        return out


@dataclass(frozen=True)
class TurnTools:
    """Tools offered for one turn only, on top of the loop's own, and what the model is told
    about them (``notes``, added to the system prompt).

    A task's tool servers are per task and change while the operator runs, so they cannot be
    the loop's fixed registry. They only shape what a turn does live: a replayed model call
    or tool result comes from the journal whatever tools the resumed turn has, so replay stays
    deterministic when a server came or went in between.
    """

    tools: tuple[Tool, ...] = ()
    notes: tuple[str, ...] = ()


def error_result(call: ToolCall, message: str) -> ChatMessage:
    """An error tool result for ``call``."""
    return ChatMessage(
        role="tool", content=f"Error: {message}", tool_call_id=call.id, is_error=True
    )


def _render(value: object) -> str:
    if isinstance(value, str):
        return value
    if value is None:
        return "(no output)"
    return json.dumps(value, ensure_ascii=False, default=str)


def _path(error_path: Iterable[object]) -> str:
    out = "$"
    for part in error_path:
        out += f"[{part}]" if isinstance(part, int) else f".{part}"
    return out


class ToolInvoker:
    """Checks a call's arguments against its tool's schema, runs it, and never raises for the
    model's mistakes or the tool's failures."""

    def __init__(self, registry: ToolRegistry) -> None:
        self._registry = registry

    def check(self, call: ToolCall) -> dict[str, Any]:
        """The call's parsed, schema-valid arguments; :class:`InvalidToolCallError` otherwise."""
        tool = self._registry.get(call.name)
        if tool is None:
            known = ", ".join(self._registry.names) or "none"
            raise InvalidToolCallError(
                f"there is no tool named {call.name!r}. Call one of the available tools: {known}"
            )
        try:
            text = call.arguments_json
            args = loads(text, max_chars=ARGUMENTS_CHARS) if text.strip() else {}
        except JsonBoundError as exc:
            raise InvalidToolCallError(
                f"the arguments for tool {call.name!r} cannot be taken: {exc}. Nothing was run"
            ) from None
        except json.JSONDecodeError as exc:
            raise InvalidToolCallError(
                f"the arguments for tool {call.name!r} are not valid JSON ({exc.msg} at "
                f"line {exc.lineno} column {exc.colno}). Send the arguments as one JSON object"
            ) from None
        if not isinstance(args, dict):
            raise InvalidToolCallError(
                f"the arguments for tool {call.name!r} must be a JSON object, "
                f"not {type(args).__name__}"
            )
        violations = sorted(tool.validator.iter_errors(args), key=lambda e: list(e.path))
        if violations:
            shown = "; ".join(
                f"{_path(v.absolute_path)}: {v.message}"
                for v in violations[:MAX_REPORTED_VIOLATIONS]
            )
            more = len(violations) - MAX_REPORTED_VIOLATIONS
            if more > 0:
                shown += f"; and {more} more"
            raise InvalidToolCallError(
                f"the arguments for tool {call.name!r} do not match its schema: {shown}. "
                f"Fix them and call {call.name!r} again"
            )
        return args

    async def run(self, call: ToolCall, args: dict[str, Any], context: ToolContext) -> ChatMessage:
        """Run a checked call's tool; a raised exception becomes an error result."""
        tool = self._registry.get(call.name)
        if tool is None or tool.function is None:
            return error_result(call, f"tool {call.name!r} cannot be run here")
        try:
            result = tool.function(args, context)
            if inspect.isawaitable(result):
                result = await result
        except ToolError as exc:
            return error_result(call, str(exc))
        except Exception as exc:
            log.warning("tool %s failed in %s", call.name, context.call_id, exc_info=True)
            return error_result(
                call,
                f"tool {call.name!r} failed: {type(exc).__name__}: {exc}. Try other arguments "
                "or another way to reach the goal",
            )
        if isinstance(result, FileOutput):
            return ChatMessage(
                role="tool", content=result.text, files=result.files, tool_call_id=call.id
            )
        return ChatMessage(role="tool", content=_render(result), tool_call_id=call.id)

    async def invoke(self, call: ToolCall, context: ToolContext) -> ChatMessage:
        """Check and run ``call``: the one entry point for a user tool."""
        try:
            args = self.check(call)
        except InvalidToolCallError as exc:
            return error_result(call, str(exc))
        return await self.run(call, args, context)
