"""The calls a task waits to have approved, as the TUI shows them: a pure module.

A turn that asks for a gated call parks the task (sub-state ``awaiting-approval``) with the
call in ``approvals`` of the task extension (:class:`~tiny_harness.core.approval.PendingApproval`):
the tool, its arguments, who decides, until when, and any decision so far. The screens list
those calls, the ones *you* may decide first, with the arguments as indented JSON (bounded;
arguments too long to store whole say so), and the keys approve or reject the chosen one.

Whether you may decide a call is the operator's question, asked here with its own function
(:func:`~tiny_harness.core.approval.refuse_decision`) on the task as the view has it, so a
decision the operator would refuse is not sent, and the reason shown is the operator's own
sentence. A decision made meanwhile by someone else is still refused by the operator, whose
refusal shows as the harness's line.

The operator answers a decision with the task's status message (under ``cmd-<message id>``,
"weather__weather was approved by alice"), and records it in the history with the call in its
metadata (``approval``); :func:`is_decision_answer` tells such a line from a command's reply.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC
from typing import Any, Final

from a2a.types import Message

from tiny_harness.core.approval import (
    TIMEOUT_DECIDER,
    TIMEOUT_ID_PREFIX,
    PendingApproval,
    Verdict,
    refuse_decision,
)
from tiny_harness.core.clock import parse
from tiny_harness.core.literal import literal_json
from tiny_harness.core.states import SubState
from tiny_harness.core.status_ext import metadata_dict
from tiny_harness.core.task import Role, TaskExtension

AWAITING_APPROVAL: Final = SubState.AWAITING_APPROVAL.value
#: How many lines of a call's arguments are shown, and how wide each may be.
ARGUMENT_LINES: Final = 8
ARGUMENT_WIDTH: Final = 96
#: How a decision reads (:meth:`~tiny_harness.core.approval.Decision.text`).
_DECIDED: Final = re.compile(r"^\S+ was (approved|rejected)\b")


class PromptError(ValueError):
    """What to fix in the decision prompt, as a sentence."""


@dataclass(frozen=True)
class Call:
    """One call of the open task as listed: the pending call, and whether the viewer may
    decide it (``refusal``: the operator's reason they may not, once it is undecided)."""

    pending: PendingApproval
    refusal: str | None

    @property
    def call_id(self) -> str:
        return self.pending.call_id

    @property
    def decided(self) -> bool:
        return self.pending.decision is not None

    @property
    def mine(self) -> bool:
        """It waits, and the viewer may decide it."""
        return not self.decided and self.refusal is None

    def heading(self) -> str:
        """``for you · weather__weather · call c1``, or what was decided."""
        tool = self.pending.tool
        call = f"{tool} · call {self.call_id}"
        decision = self.pending.decision
        if decision is not None:
            return f"{call} · {decision.text(tool).removeprefix(f'{tool} was ')}"
        return f"for you · {call}" if self.mine else call

    def lines(self) -> list[str]:
        """The call as listed: its heading, its arguments, who decides and until when, and why
        the viewer may not decide it, when they may not."""
        out = [self.heading()]
        out += [f"    {line}" for line in argument_lines(self.pending)]
        return out + self.details()

    def details(self) -> list[str]:
        """Who decides the undecided call and until when, and why the viewer may not."""
        if self.decided:
            return []
        # As the operator says it: "assignees or admins"; with several policies, each must
        # admit the decider: "(assignees or admins) and (carol)".
        out = [f"    decided by {self.pending.deciders} · until {until(self.pending)}"]
        if self.refusal is not None:
            out.append(f"    not yours to decide: {self.refusal.removeprefix('refused: ')}")
        return out


def calls_of(extension: TaskExtension | None, me: str) -> tuple[Call, ...]:
    """The task's calls, the ones ``me`` may decide first, then those that wait for others,
    then those decided (each group in the operator's order)."""
    if extension is None:
        return ()
    pending = extension.approvals
    role = next((p.role for p in extension.participants if p.id == me), None)
    calls = [Call(p, None if p.decision else _refusal(pending, p, me, role)) for p in pending]
    return tuple(sorted(calls, key=lambda c: (c.decided, not c.mine)))


def _refusal(
    pending: Sequence[PendingApproval], call: PendingApproval, me: str, role: Role | None
) -> str | None:
    return refuse_decision(
        pending,
        park=call.park,
        call_id=call.call_id,
        verdict="approve",
        sender=me,
        role=role,
        arguments=None,
    )


def refusal_to(calls: Sequence[Call], call_id: str) -> str | None:
    """Why the viewer may not decide ``call_id`` now (None: they may): the operator's reason,
    or that the call was decided already."""
    found = next((c for c in calls if c.call_id == call_id), None)
    if found is None:
        return f"no call {call_id!r} waits for a decision on this task"
    done = found.pending.decision
    if done is not None:
        by = "its timeout" if done.by == TIMEOUT_DECIDER else done.by
        said = "approved" if done.verdict == "approve" else "rejected"
        return f"call {call_id!r} was already {said} by {by}"
    return found.refusal.removeprefix("refused: ") if found.refusal else None


def summary(calls: Sequence[Call]) -> str | None:
    """What the top bar adds while calls wait: ``2 calls wait for approval, 1 for you``."""
    waiting = [c for c in calls if not c.decided]
    if not waiting:
        return None
    mine = sum(1 for c in waiting if c.mine)
    text = (
        "1 call waits for approval"
        if len(waiting) == 1
        else f"{len(waiting)} calls wait for approval"
    )
    return f"{text}, {mine} for you" if mine else text


def badge(calls: Sequence[Call], sub_state: str | None) -> str | None:
    """The mark beside the task wherever it is listed: ``approval for you`` when a call waits
    for the viewer's decision, ``awaits approval`` when calls wait for someone else's (or the
    sub-state says so of calls not read yet)."""
    if any(c.mine for c in calls):
        return "approval for you"
    if any(not c.decided for c in calls) or (not calls and sub_state == AWAITING_APPROVAL):
        return "awaits approval"
    return None  # every call decided: the next turn runs them


def argument_lines(pending: PendingApproval) -> list[str]:
    """The call's arguments as JSON: on one line when it fits, else indented, at most
    :data:`ARGUMENT_LINES` lines of at most :data:`ARGUMENT_WIDTH` characters; arguments too
    long to store whole say so (the call runs with them whole)."""
    if pending.arguments_cut:
        start = str(pending.arguments.get("_start", ""))
        text = start[: ARGUMENT_LINES * ARGUMENT_WIDTH]
        lines = [text[i : i + ARGUMENT_WIDTH] for i in range(0, len(text), ARGUMENT_WIDTH)]
        return [*lines[:ARGUMENT_LINES], "… (cut: too long to show whole; it runs whole)"]
    if not pending.arguments:
        return ["(no arguments)"]
    one_line = shown_json(pending)
    if len(one_line) <= ARGUMENT_WIDTH:
        return [one_line]
    lines = json.dumps(pending.arguments, indent=2, ensure_ascii=False).splitlines()
    shown = [_cut(line) for line in lines[:ARGUMENT_LINES]]
    if len(lines) > ARGUMENT_LINES:
        shown.append(f"… ({len(lines) - ARGUMENT_LINES} more lines)")
    return shown


def whole_lines(pending: PendingApproval) -> list[str]:
    """The call's arguments whole, as indented JSON, for the prompt that decides it: nothing
    cut, however long (the prompt scrolls). Arguments too long to store whole have only their
    start here: :func:`unseen` refuses their approval."""
    if pending.arguments_cut:
        return [str(pending.arguments.get("_start", "")), "… (cut: see below)"]
    return json.dumps(pending.arguments, indent=2, ensure_ascii=False).splitlines() or ["{}"]


def unseen(pending: PendingApproval, verdict: Verdict, task_id: str) -> str | None:
    """Why the TUI does not send this approval (None: it may): a call whose arguments are too
    long to be shown here whole is approved only by someone who has read them, and the TUI
    cannot show them; ``kubectl harness get`` shows them whole from the journal. A rejection
    runs nothing, so it is always offered."""
    if verdict != "approve" or not pending.arguments_cut:
        return None
    return (
        f"the arguments of call {pending.call_id} ({pending.tool}) are longer than the TUI "
        f"shows whole, so it does not approve it: read them with `kubectl harness get "
        f"{task_id}`, which shows them whole, and approve there (kubectl harness approve "
        f"{task_id} {pending.call_id}), or reject it here"
    )


def _cut(line: str) -> str:
    return line if len(line) <= ARGUMENT_WIDTH else line[: ARGUMENT_WIDTH - 1] + "…"


def until(pending: PendingApproval) -> str:
    """When the call's timeout acts, in UTC to the second, and what it then does."""
    moment = parse(pending.expires_at)
    when = moment.astimezone(UTC).strftime("%Y-%m-%d %H:%M:%S UTC") if moment else "?"
    then = "approved" if pending.requirement.on_timeout == "approve" else "rejected"
    return f"{when}, then {then}"


def edited_arguments(text: str, pending: PendingApproval) -> dict[str, Any] | None:
    """The arguments an approval runs the call with, from the prompt's field: None when left
    as shown (the call runs as asked). Raises :class:`PromptError` for anything but a JSON
    object, or an edit the call's policy does not allow."""
    text = text.strip()
    if not text or text == shown_json(pending):
        return None
    if not pending.requirement.allow_edit:
        raise PromptError("the policy of this call does not allow edited arguments")
    try:
        value = json.loads(text)
    except json.JSONDecodeError as exc:
        raise PromptError(f"the arguments are not JSON: {exc.msg} (column {exc.colno})") from None
    if not isinstance(value, dict):
        raise PromptError("the arguments must be a JSON object, {...}")
    return value if value != pending.arguments else None


def shown_json(pending: PendingApproval) -> str:
    """The arguments as the prompt's field shows them to edit: one line of JSON, whose
    control and bidi characters are written as their escapes (the same value, shown)."""
    return literal_json(json.dumps(pending.arguments, ensure_ascii=False))


def is_decision_answer(message: Message) -> bool:
    """Whether an agent-side message is the operator's answer to a decision (its status
    message, or its record in the history), not a command's reply or the agent's words."""
    if "approval" in metadata_dict(message.metadata):
        return True
    if message.message_id.startswith(TIMEOUT_ID_PREFIX):
        return True  # a timeout's decision, as the status message says it
    text = "".join(p.text for p in message.parts if p.HasField("text"))
    return message.message_id.startswith("cmd-") and _DECIDED.match(text) is not None


def verb(verdict: Verdict) -> str:
    return "Approve" if verdict == "approve" else "Reject"
