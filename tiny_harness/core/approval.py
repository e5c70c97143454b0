"""Approvals: which tool calls wait for a person's yes, who may give it, and what a decision is.

A call needs approval when a policy says so where the tool is declared:

- a ``HarnessToolServer``'s ``spec.approval`` (all its tools, or those it lists);
- a ``HarnessAgent``'s ``spec.approval`` (every sub-task sent to it);
- the task's own ``spec.approval`` rules, which may only *add* requirements: a rule there
  never lifts one a server or an agent declares.

When several policies apply to one call, every one of them must be met
(:func:`requirement_of`): a decider must be admitted by each (so a task's rule can narrow who
decides, never widen it), the timeout is the shortest, an edit is allowed only if every policy
allows it, and a timeout approves only if every policy says so (``reject`` by default).

The decision is the participant's, bound to the identity the API server gave the sender: the
operator checks it against the call's requirement (:func:`refuse_decision`) for every decision
it takes, whichever front end sent it. A watcher never decides, nor does anyone who is not on
the task; a participant the policy does not name is told who may.

**One call, one park.** A decision names the *park* it answers (``status.approvals[].park``:
the turn that parked and a token made when it did, so no one can name a park before it
exists) and the call in it by the id the harness gave it (unique in the park whatever ids the
model sent: :func:`distinct_call_ids`). A decision for any other park, or for none, is refused
and never kept for a later one; a decision taken after its call's deadline is late and is
refused (the timeout decides the call).

These are data and pure functions: the loop parks on them (:mod:`tiny_harness.core.loop`),
the operator decides with them (:mod:`tiny_harness.core.decide`), and every front end shows
them from the task's status (``status.approvals``) or its A2A extension.
"""

from __future__ import annotations

import json
import secrets
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, Final, Literal

from pydantic import Field, field_validator, model_validator

from tiny_harness.core.json_bounds import ARGUMENTS_CHARS, JsonBoundError, StoredObject, loads
from tiny_harness.core.vocabulary import TEXT_MAX, TTL_MAX, Model, Role, ShortText

Verdict = Literal["approve", "reject"]
#: What a call's timeout does when no one has decided it.
OnApprovalTimeout = Literal["reject", "approve"]
VERDICTS: Final[tuple[Verdict, ...]] = ("approve", "reject")

#: Who decides when a policy names no one: the task's assignees and admins.
DEFAULT_ROLES: Final[tuple[Role, ...]] = (Role.ASSIGNEE, Role.ADMIN)
#: How long a call waits for a decision when no policy says (one hour).
DEFAULT_TIMEOUT_SECONDS: Final = 3600
#: The sender a timeout's decision is journaled as.
TIMEOUT_DECIDER: Final = "timeout"
#: The largest arguments (as JSON) shown and stored with a pending call; longer are cut, and
#: an edit larger than this is refused.
ARGUMENTS_MAX: Final = 16 * 1024
#: The most calls one task may have waiting for decisions at once (the status stays small).
PENDING_MAX: Final = 16


class ApprovalPolicy(Model):
    """Who may decide a call, how long it waits, and what its timeout does."""

    roles: tuple[Role, ...] = Field(
        default=(),
        max_length=3,
        description="Task roles whose participants may decide (assignee, reporter, admin; a "
        "watcher never decides). Empty, with no participants: the operator's default roles.",
    )
    participants: tuple[ShortText, ...] = Field(
        default=(),
        max_length=32,
        description="Participant ids that may decide, whatever their role on the task (they "
        "must be on the task).",
    )
    timeout_seconds: int | None = Field(
        default=None,
        ge=1,
        le=TTL_MAX,
        description="How long the call waits for a decision; empty: the operator's default.",
    )
    on_timeout: OnApprovalTimeout | None = Field(
        default=None,
        description="What happens when no one decides in time: reject (the default) or approve.",
    )
    allow_edit: bool = Field(
        default=False,
        description="Whether a decider may approve the call with arguments of their own.",
    )

    @field_validator("roles")
    @classmethod
    def _no_watcher(cls, roles: tuple[Role, ...]) -> tuple[Role, ...]:
        if Role.WATCHER in roles:
            raise ValueError("approval.roles: a watcher only follows a task and never decides")
        return roles


class ToolServerApproval(ApprovalPolicy):
    """A ``HarnessToolServer``'s ``spec.approval``: its tools that need approval."""

    tools: tuple[ShortText, ...] = Field(
        default=(),
        max_length=256,
        description="The server's own names of the tools that need approval; empty: all of them.",
    )


class TaskApprovalRule(ApprovalPolicy):
    """One of a task's ``spec.approval`` rules: calls it adds a requirement to."""

    model_config = ApprovalPolicy.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.tools) && size(self.tools) > 0) || "
                    "(has(self.toolServers) && size(self.toolServers) > 0) || "
                    "(has(self.agents) && size(self.agents) > 0)",
                    "message": "spec.approval: a rule names tools, toolServers or agents",
                }
            ]
        }
    }

    tools: tuple[ShortText, ...] = Field(
        default=(),
        max_length=64,
        description="Tools by the name the model calls them (server__tool, or spawn_subtask).",
    )
    tool_servers: tuple[ShortText, ...] = Field(
        default=(), max_length=16, description="HarnessToolServers all of whose tools need it."
    )
    agents: tuple[ShortText, ...] = Field(
        default=(),
        max_length=16,
        description="HarnessAgents every sub-task sent to which needs it.",
    )

    @model_validator(mode="after")
    def _names_something(self) -> TaskApprovalRule:
        if not (self.tools or self.tool_servers or self.agents):
            raise ValueError("spec.approval: a rule names tools, toolServers or agents")
        return self


class ApprovalDefaults(Model):
    """The operator's defaults for what a policy leaves out (``[operator.approvals]``)."""

    roles: tuple[Role, ...] = DEFAULT_ROLES
    timeout_seconds: int = Field(default=DEFAULT_TIMEOUT_SECONDS, ge=1, le=TTL_MAX)
    on_timeout: OnApprovalTimeout = "reject"


class Deciders(Model):
    """Who one policy admits: any participant in ``roles``, or any named participant."""

    roles: tuple[Role, ...] = ()
    participants: tuple[ShortText, ...] = ()

    def admits(self, sender: str, role: Role | None) -> bool:
        if role is None or (role is Role.WATCHER and sender not in self.participants):
            return False
        return sender in self.participants or role in self.roles

    def describe(self) -> str:
        names = [f"{r.value}s" for r in self.roles] + list(self.participants)
        return " or ".join(names) if names else "no one"


class Requirement(Model):
    """What one call needs before it runs: every policy that applies to it, combined."""

    deciders: tuple[Deciders, ...] = Field(
        min_length=1, description="Each must admit the decider (one per policy that applies)."
    )
    timeout_seconds: int = Field(ge=1, le=TTL_MAX)
    on_timeout: OnApprovalTimeout = "reject"
    allow_edit: bool = False
    sources: tuple[str, ...] = Field(
        default=(), description="Where each policy is declared, for the participants to read."
    )

    def admits(self, sender: str, role: Role | None) -> bool:
        return all(d.admits(sender, role) for d in self.deciders)

    def describe(self) -> str:
        if len(self.deciders) == 1:
            return self.deciders[0].describe()
        return " and ".join(f"({d.describe()})" for d in self.deciders)


def _deciders(policy: ApprovalPolicy, defaults: ApprovalDefaults) -> Deciders:
    if not policy.roles and not policy.participants:
        return Deciders(roles=defaults.roles)
    return Deciders(roles=policy.roles, participants=policy.participants)


def requirement_of(
    policies: Sequence[tuple[str, ApprovalPolicy]], defaults: ApprovalDefaults
) -> Requirement | None:
    """The combined requirement of the ``(source, policy)`` pairs that apply to one call;
    None when none does (the call runs as any other)."""
    if not policies:
        return None
    timeouts = [p.timeout_seconds or defaults.timeout_seconds for _, p in policies]
    on_timeouts = [p.on_timeout or defaults.on_timeout for _, p in policies]
    return Requirement(
        deciders=tuple(_deciders(p, defaults) for _, p in policies),
        timeout_seconds=min(timeouts),
        on_timeout="approve" if all(t == "approve" for t in on_timeouts) else "reject",
        allow_edit=all(p.allow_edit for _, p in policies),
        sources=tuple(source for source, _ in policies),
    )


class Gates(Model):
    """Which calls of one turn need approval: by the tool name the model calls, and by the
    remote agent a ``spawn_subtask`` names. Built by the operator for each turn from the task's
    tool servers, agents and rules; pure data, so a turn's park is decided without I/O."""

    tools: Mapping[str, tuple[tuple[str, ApprovalPolicy], ...]] = Field(default_factory=dict)
    agents: Mapping[str, tuple[tuple[str, ApprovalPolicy], ...]] = Field(default_factory=dict)
    defaults: ApprovalDefaults = ApprovalDefaults()

    def requirement(self, name: str, agent: str | None = None) -> Requirement | None:
        """What a call of tool ``name`` needs (``agent``: the remote agent the call hands
        work to, for a spawn); None: nothing."""
        policies = list(self.tools.get(name, ()))
        if agent:
            policies.extend(self.agents.get(agent, ()))
        return requirement_of(policies, self.defaults)

    def __bool__(self) -> bool:
        return bool(self.tools or self.agents)


def gates_of(
    *,
    servers: Iterable[tuple[str, Sequence[tuple[str, str]], ToolServerApproval | None]],
    agents: Iterable[tuple[str, ApprovalPolicy | None]],
    rules: Sequence[TaskApprovalRule],
    defaults: ApprovalDefaults,
    inherited: Sequence[tuple[str, Sequence[TaskApprovalRule]]] = (),
) -> Gates:
    """The gates of a turn: ``servers`` as (server name, its tools as (MCP name, offered
    name), its approval), ``agents`` as (agent name, its approval), the task's ``rules``, and
    every ancestor's (``inherited``: (ancestor's name, its rules), the parent first): a
    sub-task is gated by each rule of the tree above it, as its budget is."""
    tools: dict[str, list[tuple[str, ApprovalPolicy]]] = {}
    by_agent: dict[str, list[tuple[str, ApprovalPolicy]]] = {}
    offered_by: dict[str, str] = {}
    for server, offered, approval in servers:
        for mcp_name, name in offered:
            offered_by[name] = server
            if approval is not None and (not approval.tools or mcp_name in approval.tools):
                tools.setdefault(name, []).append((f"HarnessToolServer {server}", approval))
    for agent, policy in agents:
        if policy is not None:
            by_agent.setdefault(agent, []).append((f"HarnessAgent {agent}", policy))
    sourced = [(f"the task's spec.approval[{i}]", rule) for i, rule in enumerate(rules)]
    for ancestor, theirs in inherited:
        sourced += [
            (f"the ancestor task {ancestor}'s spec.approval[{i}]", rule)
            for i, rule in enumerate(theirs)
        ]
    for source, rule in sourced:
        for name in rule.tools:
            tools.setdefault(name, []).append((source, rule))
        for name, server in offered_by.items():
            if server in rule.tool_servers:
                tools.setdefault(name, []).append((source, rule))
        for agent in rule.agents:
            by_agent.setdefault(agent, []).append((source, rule))
    return Gates(
        tools={k: tuple(v) for k, v in tools.items()},
        agents={k: tuple(v) for k, v in by_agent.items()},
        defaults=defaults,
    )


# -- pending calls and decisions --------------------------------------------------------------


class Decision(Model):
    """A decision on one call: who gave it, when, and what it lets run."""

    verdict: Verdict
    by: ShortText = Field(description="The participant who decided, or 'timeout'.")
    at: str = Field(description="When (RFC 3339).")
    reason: str = Field(default="", max_length=TEXT_MAX)
    arguments: dict[str, Any] | None = Field(
        default=None, description="The arguments an approval edited the call to; None: as asked."
    )

    def text(self, tool: str) -> str:
        """How the decision reads in the history and to the model."""
        why = f": {self.reason}" if self.reason else ""
        if self.by == TIMEOUT_DECIDER:
            verb = "approved" if self.verdict == "approve" else "rejected"
            return f"{tool} was {verb}: no one decided in time{why}"
        if self.verdict == "reject":
            return f"{tool} was rejected by {self.by}{why}"
        edited = " with edited arguments" if self.arguments is not None else ""
        return f"{tool} was approved by {self.by}{edited}{why}"


class PendingApproval(Model):
    """A call waiting for a decision (``status.approvals``): what the model asked, who may
    decide, until when; and, once given, the decision."""

    call_id: ShortText = Field(
        description="The call's id in its park, unique there (the model's own, unless the "
        "model gave two calls one id); a decision names it."
    )
    park: str = Field(
        default="",
        max_length=64,
        description="The park the call waits in (the turn that parked and a token made then); "
        "a decision names it, and is refused for any other park.",
    )
    model_call_id: ShortText | None = Field(
        default=None,
        description="The id the model gave the call, when the harness gave it another to make "
        "it unique in its park (the model is answered under its own id).",
    )
    relay_park: str | None = Field(
        default=None,
        max_length=64,
        description="For a call mirrored from a remote task: the park it waits in there, which "
        "the decision relayed to it names.",
    )
    tool: ShortText = Field(description="The tool, by the name the model called it.")
    arguments: dict[str, Any] = Field(
        default_factory=dict, description="The arguments as the model gave them."
    )
    arguments_cut: bool = Field(
        default=False, description="The arguments were too long to show whole (they run whole)."
    )
    turn: int = Field(ge=0, description="The turn that asked for the call; the next runs it.")
    requirement: Requirement
    expires_at: str = Field(description="When the call's timeout acts (RFC 3339).")
    decision: Decision | None = None

    @property
    def deciders(self) -> str:
        return self.requirement.describe()


def shown_arguments(arguments_json: str) -> tuple[dict[str, Any], bool]:
    """The arguments as a participant is shown them: the object, or, when its JSON is longer
    than :data:`ARGUMENTS_MAX`, a note with its start (the call still runs with them whole)."""
    try:
        value = loads(arguments_json or "{}", max_chars=ARGUMENTS_CHARS)
    except JsonBoundError:
        return {"_start": arguments_json[:ARGUMENTS_MAX]}, True
    except json.JSONDecodeError:
        value = {"_text": arguments_json}
    if not isinstance(value, dict):
        value = {"_value": value}
    if len(arguments_json) <= ARGUMENTS_MAX:
        return value, False
    return {"_start": arguments_json[:ARGUMENTS_MAX]}, True


#: How many random bytes a park's token has: enough that no one names a park before it exists.
PARK_TOKEN_BYTES: Final = 8


def new_park(turn: int) -> str:
    """A fresh park's identity: the turn that parks, and a token no one can know before."""
    return f"{turn}-{secrets.token_hex(PARK_TOKEN_BYTES)}"


def distinct_call_ids(given: Sequence[str]) -> list[str]:
    """The ids the harness gives the calls of one model answer: the model's own where it is
    unique and not empty, else ``<id>#<position>`` (made longer until no other call has it).
    Providers do not promise unique ids, and proxies and remote agents send what they like;
    a decision must name one call."""
    counts = Counter(given)
    taken = {i for i in given if i and counts[i] == 1}
    out: list[str] = []
    for position, model_id in enumerate(given, 1):
        if model_id and counts[model_id] == 1:
            out.append(model_id)
            continue
        made = f"{model_id or 'call'}#{position}"
        while made in taken:
            made += "'"
        taken.add(made)
        out.append(made)
    return out


def decision_key(park: str, call_id: str) -> str:
    """How a recorded decision is found again: its park and its call."""
    return f"{park}/{call_id}"


class DecisionRequest(Model):
    """A participant's decision as their message carries it (``HarnessMessage.spec.decision``,
    from the control envelope's ``approve`` or ``reject``)."""

    call_id: ShortText = Field(description="The call decided (status.approvals[].callId).")
    park: str | None = Field(
        default=None,
        max_length=64,
        description="The park the decision answers (status.approvals[].park); a decision "
        "naming none, or another, is refused.",
    )
    verdict: Verdict
    reason: str = Field(default="", max_length=4096, description="Why, for the history.")
    arguments: StoredObject | None = Field(
        default=None,
        description="For an approval the policy lets edit: the arguments the call runs with, "
        "written as their JSON text.",
    )


# -- who may decide ----------------------------------------------------------------------------


def _already(call_id: str, done: Decision) -> str:
    said = "approved" if done.verdict == "approve" else "rejected"
    by = "its timeout" if done.by == TIMEOUT_DECIDER else done.by
    return f"refused: call {call_id!r} was already {said} by {by} at {done.at}"


def _waiting(pending: Sequence[PendingApproval]) -> str:
    waiting = ", ".join(p.call_id for p in pending if p.decision is None)
    return f" (waiting: {waiting})" if waiting else " (none waits)"


def _not_this_park(park: str | None, call_id: str, pending: Sequence[PendingApproval]) -> str:
    """Why a decision naming ``park`` is refused while the park ``pending`` waits in is open."""
    open_park = pending[0].park
    said = f"names park {park!r}" if park else "names no park"
    return (
        f"refused: the decision on call {call_id!r} {said}, and the open park is "
        f"{open_park!r}{_waiting(pending)}: a decision answers only the park it names; read "
        "the calls of the open park and decide them naming it"
    )


def refuse_decision(
    pending: Sequence[PendingApproval],
    *,
    call_id: str,
    verdict: Verdict,
    sender: str,
    role: Role | None,
    arguments: Mapping[str, Any] | None,
    park: str | None = None,
    earlier: Mapping[str, Decision] | None = None,
    late: Iterable[str] = (),
) -> str | None:
    """Why ``sender`` (with ``role`` on the task) may not give this decision on call
    ``call_id`` of ``park``, or None when they may. A decision answers the park it names and
    no other: one for a park that is over (or that never was) is refused, and so is one
    naming no park; it is never kept for a park to come. The same decision again is not
    refused while the call waits (it changes nothing); a different one after a decision is,
    and so is any decision on a call decided in an earlier park (``earlier``: the task's
    journal, by :func:`decision_key`), whose turn has run it. A decision on a call in
    ``late`` (undecided, its deadline passed) is refused as late: its timeout decides it."""
    if park and earlier and park not in {p.park for p in pending}:
        done = earlier.get(decision_key(park, call_id))
        if done is not None and pending:
            return (
                f"{_already(call_id, done)} in park {park!r}, which is over; the open park "
                f"is {pending[0].park!r}{_waiting(pending)}"
            )
        if done is not None:
            return f"{_already(call_id, done)} in park {park!r}, which is over"
    if not pending:
        return f"refused: no call {call_id!r} waits for a decision on this task (none waits)"
    if (park or "") != pending[0].park:  # a park from before parks had ids has none
        return _not_this_park(park, call_id, pending)
    found = next((p for p in pending if p.call_id == call_id), None)
    if found is None:
        return f"refused: no call {call_id!r} waits for a decision on this task" + _waiting(pending)
    if role is None:
        return f"refused: {sender} is not a participant of this task"
    if not found.requirement.admits(sender, role):
        if role is Role.WATCHER:
            return f"refused: {sender} is a watcher and may not decide call {call_id!r}"
        return (
            f"refused: {sender} may not decide call {call_id!r} ({found.tool}); it is "
            f"decided by {found.deciders}"
        )
    done = found.decision
    if done is None and call_id in set(late):
        return (
            f"refused: the decision on call {call_id!r} ({found.tool}) is late: its deadline "
            f"was {found.expires_at}, and its timeout decides it "
            f"({found.requirement.on_timeout})"
        )
    if arguments is not None:
        if verdict != "approve":
            return "refused: only an approval may carry arguments"
        if not found.requirement.allow_edit:
            return f"refused: the policy of call {call_id!r} does not allow edited arguments"
        if len(json.dumps(arguments)) > ARGUMENTS_MAX:
            return f"refused: edited arguments are limited to {ARGUMENTS_MAX} bytes of JSON"
    if done is not None and not (done.verdict == verdict and done.by == sender):
        return _already(call_id, done)
    return None


def is_repeat(
    pending: Sequence[PendingApproval], call_id: str, verdict: Verdict, sender: str
) -> bool:
    """The decision was already given, as it is now, by the same sender."""
    found = next((p for p in pending if p.call_id == call_id), None)
    done = found.decision if found is not None else None
    return done is not None and done.verdict == verdict and done.by == sender


def undecided(pending: Iterable[PendingApproval]) -> list[PendingApproval]:
    return [p for p in pending if p.decision is None]


def all_decided(pending: Sequence[PendingApproval]) -> bool:
    return bool(pending) and not undecided(pending)


#: The id a timeout's decision has: its notice's, and the status message's that says it.
TIMEOUT_ID_PREFIX: Final = "approval-timeout-"


def timeout_id(call_id: str, park: str = "") -> str:
    """The journal notice (and history entry) that records a timeout's decision (a call id
    may come again in a later park: the park tells them apart)."""
    return f"{TIMEOUT_ID_PREFIX}{park}-{call_id}" if park else f"{TIMEOUT_ID_PREFIX}{call_id}"
