"""What a turn does with approvals, as pure steps: whether a call parks, and what a park shows.

The loop's tool steps (:mod:`tiny_harness.core.tool_steps`) journal what these return: the park
of a call that needs approval (an :class:`~tiny_harness.core.turn.AwaitEntry`, with its deadline
read from the clock once); the loop (:mod:`tiny_harness.core.loop`), at the turn's end, the
pending calls and the status text that lists them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Sequence

from tiny_harness.core.approval import (
    PENDING_MAX,
    Gates,
    PendingApproval,
    new_park,
    shown_arguments,
)
from tiny_harness.core.clock import now, rfc3339
from tiny_harness.core.intrinsics import SPAWN_SUBTASK
from tiny_harness.core.llm import ToolCall
from tiny_harness.core.tools import InvalidToolCallError, ToolInvoker
from tiny_harness.core.turn import AwaitEntry, ToolEntry


def gate(
    gates: Gates,
    invoker: ToolInvoker,
    call: ToolCall,
    entry_id: str,
    awaiting: Sequence[AwaitEntry],
    *,
    turn: int,
    call_id: str,
) -> AwaitEntry | ToolEntry | None:
    """The call's park when a policy says it needs approval (None: it runs now), given the
    calls of the turn that already wait (the park they wait in is this call's too; the first
    makes it). ``call_id`` is the call's id in the park (unique there), which may differ from
    the model's ``call.id``. A call whose arguments do not fit its tool is not parked: its
    error result says why at once, and no one is asked to approve what could never run."""
    if not gates:
        return None
    try:
        args = invoker.check(call)
    except InvalidToolCallError:
        return None
    agent = args.get("agent") if call.name == SPAWN_SUBTASK else None
    requirement = gates.requirement(call.name, agent if isinstance(agent, str) else None)
    if requirement is None:
        return None
    if len(awaiting) >= PENDING_MAX:
        return ToolEntry(
            id=entry_id,
            call_id=call.id,
            name=call.name,
            content=f"Error: {PENDING_MAX} calls already wait for approval in this turn; "
            "this one was not asked for. Ask for fewer calls that need approval at once.",
            is_error=True,
        )
    expires = now() + dt.timedelta(seconds=requirement.timeout_seconds)
    return AwaitEntry(
        id=entry_id,
        call_id=call_id,
        model_call_id=call.id if call.id != call_id else None,
        name=call.name,
        arguments_json=call.arguments_json,
        requirement=requirement,
        expires_at=rfc3339(expires),
        park=awaiting[0].park if awaiting else new_park(turn),
    )


def parked(
    awaiting: Sequence[AwaitEntry], turn: int, questions: Sequence[str]
) -> tuple[str, tuple[PendingApproval, ...]]:
    """The status text and the pending calls of a turn that ends with ``awaiting`` parked
    (its questions, if it asked any, first)."""
    pending = []
    for entry in awaiting:
        shown, cut = shown_arguments(entry.arguments_json)
        pending.append(
            PendingApproval(
                call_id=entry.call_id,
                park=entry.park,
                model_call_id=entry.model_call_id,
                tool=entry.name,
                arguments=shown,
                arguments_cut=cut,
                turn=turn,
                requirement=entry.requirement,
                expires_at=entry.expires_at,
            )
        )
    lines = [
        f"- {p.tool} (call {p.call_id}), decided by {p.deciders}, until {p.expires_at}"
        for p in pending
    ]
    park = f" (park {pending[0].park})" if pending and pending[0].park else ""
    text = f"Waiting for approval before running{park}:\n" + "\n".join(lines)
    if questions:
        text = "\n\n".join((*questions, text))
    return text, tuple(pending)
