"""What one turn is offered from its task's tool servers, and what the task is told.

Decided from what the operator knows of each server the task may use (the ones it names and
the namespace's defaults), with no I/O: the ready servers' tools, less any whose name a tool
offered before took; a note to the model for each server that is missing or not ready, and
one on the ``<server>__<tool>`` names; and the task's ``ToolServersReady`` condition, which
the worker writes with the turn's first status write only when it changed.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from tiny_harness.core.approval import ToolServerApproval
from tiny_harness.core.clock import rfc3339
from tiny_harness.core.conditions import Condition, set_condition
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.tools import Tool, TurnTools

#: The task condition that says whether its tool servers are there.
CONDITION: Final = "ToolServersReady"

MCP_NOTE: Final = (
    "Tools named <server>__<tool> come from MCP tool servers declared in this namespace ({}): "
    "<tool> is the server's own name for it. Their results are the server's text, cut to the "
    "server's size limit; a call that fails comes back as an error result saying what to do."
)


@dataclass(frozen=True)
class Available:
    """A server the task may use, as the operator knows it now: its tools when it is ready
    (None when it is not), and why it is not."""

    tools: tuple[Tool, ...] | None
    why: str = ""
    #: Its tools as (the server's name, the name the model calls), and its approval policy.
    names: tuple[tuple[str, str], ...] = ()
    approval: ToolServerApproval | None = None


#: What the approval gates of a turn need of one offered server: its name, its tools as
#: (MCP name, offered name), and its policy (``core.approval.gates_of``).
GatedServer = tuple[str, tuple[tuple[str, str], ...], ToolServerApproval | None]


@dataclass(frozen=True)
class Offer:
    """What one turn gets from the task's tool servers, and what its condition should say."""

    tools: TurnTools
    condition: Condition | None = None
    servers: tuple[GatedServer, ...] = ()

    def conditions(
        self, current: Sequence[Condition], pending: list[dict[str, Any]] | None
    ) -> list[dict[str, Any]] | None:
        """The task's conditions with this offer's (``pending``: conditions the same write
        already sets); None when nothing changes."""
        base = (
            tuple(Condition.model_validate(c) for c in pending)
            if pending is not None
            else tuple(current)
        )
        condition = self.condition
        old = next((c for c in base if c.type == CONDITION), None)
        if condition is None or (
            old is not None
            and (old.status, old.reason, old.message)
            == (condition.status, condition.reason, condition.message)
        ):
            return pending
        merged = set_condition(base, condition)
        return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in merged]


NO_OFFER: Final = Offer(TurnTools())


class NoToolServers:
    """What a runtime offers before (or without) following tool servers: nothing."""

    async def offer(self, namespace: str, spec: TaskSpec) -> Offer:
        return NO_OFFER


def compose_offer(
    namespace: str,
    names: Sequence[str],
    found: Mapping[str, Available],
    taken: frozenset[str] = frozenset(),
) -> Offer:
    """The offer for a task that may use servers ``names`` (in order), of which ``found``
    are known; ``taken``: names the loop's own tools use."""
    if not names:
        return NO_OFFER
    tools: list[Tool] = []
    problems: list[tuple[str, str, str]] = []  # reason, server, why
    offered: list[str] = []
    gated: list[GatedServer] = []
    names_taken = set(taken)
    for name in names:
        server = found.get(name)
        if server is None:
            problems.append(
                ("ToolServerNotFound", name, f"it does not exist in namespace {namespace}")
            )
            continue
        if server.tools is None:
            problems.append(("ToolServerNotReady", name, f"it is not ready ({server.why})"))
            continue
        for tool in server.tools:
            if tool.spec.name not in names_taken:
                names_taken.add(tool.spec.name)
                tools.append(tool)
        offered.append(name)
        gated.append((name, server.names, server.approval))
    notes = [MCP_NOTE.format(", ".join(offered))] if offered else []
    notes += [
        f"Tool server {name!r} is not available for this turn: {why}. If the task needs its "
        "tools, tell the participant."
        for _, name, why in problems
    ]
    now = rfc3339(digits=0)
    if problems:
        condition = Condition(
            type=CONDITION,
            status="False",
            reason=problems[0][0],
            message="; ".join(f"{name}: {why}" for _, name, why in problems),
            last_transition_time=now,
        )
    else:
        condition = Condition(
            type=CONDITION,
            status="True",
            reason="Ready",
            message=f"{len(tools)} tool(s) from {', '.join(offered)}",
            last_transition_time=now,
        )
    return Offer(TurnTools(tools=tuple(tools), notes=tuple(notes)), condition, tuple(gated))
