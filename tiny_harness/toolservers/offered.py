"""A server's MCP tools as the harness's own tools: chosen, named, and wrapped for the invoker.

Discovery's listing becomes :class:`~tiny_harness.core.tool_server.DiscoveredTool` values
(:func:`select_tools`: the allow-list applied, each tool named for the model, schemas the
invoker cannot use left out with the reason), which the operator records in the server's
status. Those become :class:`~tiny_harness.core.tools.Tool` values (:func:`build_tools`) whose
function calls the server: the invoker validates the arguments against the server's schema
first, so a call the schema refuses never reaches the server, and every way the call can fail
becomes a :class:`~tiny_harness.core.tools.ToolError` telling the model what happened and what
to do.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Sequence
from typing import Any, Final

import mcp_types

from tiny_harness.core.json_bounds import JsonBoundError, check
from tiny_harness.core.llm import ToolSpec
from tiny_harness.core.tool_server import MAX_TOOLS, DiscoveredTool
from tiny_harness.core.tools import (
    FileOutput,
    Tool,
    ToolContext,
    ToolError,
    ToolFunction,
    ToolRegistrationError,
    compile_schema,
)
from tiny_harness.toolservers.client import Endpoint, Outcome, ToolServerError, call_tool
from tiny_harness.toolservers.names import exposed_name
from tiny_harness.toolservers.results import cut_to_limit, render_result, result_files

#: Told about every call: the server, how it ended (ok, truncated, error, or a
#: :data:`~tiny_harness.toolservers.client.Outcome`), and how long it took.
CallObserver = Callable[[str, str, float], None]

#: What the model should do after each kind of failure.
ADVICE: Final[dict[Outcome, str]] = {
    "timeout": "The call was abandoned and may still have run on the server: check before "
    "calling it again, ask for less, or go on without this tool",
    "unreachable": "Go on without this tool for now, or try again later",
    "refused": "Check the arguments against the tool's description, or go on without it",
    "invalid": "Go on without this tool, and tell the participant the tool server is "
    "answering in a way the harness cannot read",
    "blocked": "Go on without this tool, and tell the participant the operator may not "
    "connect to this tool server's address",
}

_DESCRIPTION_MAX: Final = 8192


def select_tools(
    server: str, listed: Iterable[mcp_types.Tool], allow: Sequence[str] | None
) -> tuple[tuple[DiscoveredTool, ...], tuple[str, ...]]:
    """The tools to offer from a listing, and a line for each one left out and why."""
    chosen: list[DiscoveredTool] = []
    problems: list[str] = []
    seen: dict[str, str] = {}
    listed = list(listed)
    for tool in listed:
        if allow is not None and tool.name not in allow:
            continue
        name = exposed_name(server, tool.name)
        if name in seen:
            problems.append(f"{tool.name}: its name reads like {seen[name]}'s")
            continue
        schema = dict(tool.input_schema)
        description = (tool.description or tool.title or "")[:_DESCRIPTION_MAX]
        try:
            # Kept in the server's status and read by every replica: bounded like any
            # free-form value a participant or a remote server can have stored.
            check(schema)
        except JsonBoundError as exc:
            problems.append(f"{tool.name}: its input schema cannot be taken: {exc}")
            continue
        try:
            compile_schema(ToolSpec(name=name, description=description, parameters=schema))
        except ToolRegistrationError as exc:
            problems.append(f"{tool.name}: {exc.problem}")
            continue
        if len(chosen) == MAX_TOOLS:
            problems.append(f"{tool.name}: more than {MAX_TOOLS} tools; list fewer in spec.tools")
            continue
        seen[name] = tool.name
        chosen.append(
            DiscoveredTool(
                name=tool.name, exposed_as=name, description=description, input_schema=schema
            )
        )
    if allow is not None:
        names = {t.name for t in listed}
        problems.extend(
            f"{name}: in spec.tools, but the server has no such tool"
            for name in allow
            if name not in names
        )
    return tuple(chosen), tuple(problems)


def build_tools(
    endpoint: Endpoint,
    discovered: Iterable[DiscoveredTool],
    *,
    max_result_bytes: int,
    observe: CallObserver | None = None,
) -> tuple[Tool, ...]:
    """Tools the invoker can run, each calling its MCP tool on ``endpoint``."""
    tools: list[Tool] = []
    for found in discovered:
        spec = ToolSpec(
            name=found.exposed_as,
            description=f"{found.description}\n\n(MCP tool {found.name!r} of tool server "
            f"{endpoint.server!r}.)".lstrip(),
            parameters=found.input_schema,
        )
        function = _calling(endpoint, found.name, max_result_bytes, observe)
        tools.append(Tool(spec=spec, function=function, validator=compile_schema(spec)))
    return tuple(tools)


def _calling(
    endpoint: Endpoint, tool: str, limit: int, observe: CallObserver | None
) -> ToolFunction:
    async def run(args: dict[str, Any], context: ToolContext) -> str | FileOutput:
        started = time.perf_counter()
        outcome = "ok"
        try:
            try:
                result = await call_tool(endpoint, tool, args, key=context.call_id)
            except ToolServerError as exc:
                outcome = exc.outcome
                raise ToolError(f"{exc}. {ADVICE[exc.outcome]}.") from None
            text, cut = cut_to_limit(render_result(result), limit, server=endpoint.server)
            if result.is_error:
                outcome = "error"
                raise ToolError(
                    f"tool {tool!r} of tool server {endpoint.server!r} reported an error: {text}"
                )
            if cut:
                outcome = "truncated"
            files = result_files(result)
            return FileOutput(text, files) if files else text
        finally:
            if observe is not None:
                observe(endpoint.server, outcome, time.perf_counter() - started)

    return run
