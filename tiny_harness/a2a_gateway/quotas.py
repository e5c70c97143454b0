"""What one participant, and the whole namespace, may keep stored: the gateway's quotas, decided.

Every message a participant sends is kept (its object, its turn's drain entry, the history)
until its task is deleted, and a conversation ends only when someone ends it. The body limit
bounds one request and the rate limit how often, not how much piles up in etcd. So before a
write the gateway asks :func:`refusal` whether it would take the caller, or the namespace, past
a quota. Each is counted per participant and in the namespace, and each has its setting:

- messages stored: ``gateway.max_messages_per_participant``, ``..._per_namespace``;
- bytes stored: ``gateway.max_message_bytes_per_participant``, ``..._per_namespace``;
- live tasks: ``gateway.max_live_tasks_per_participant``, ``..._per_namespace``.

A message is stored while its ``HarnessMessage`` exists, and its bytes are
:func:`tiny_harness.core.sizes.message_bytes`; a participant's messages are those they sent, a
participant's tasks those their first message created; a live task is one that has not ended.
The counts are the tally's (:mod:`.tally`); this module is only the arithmetic, so it is tested
as a pure function.

A quota refuses a write that would pass it: at the limit exactly, the write that reaches it is
taken and the next is refused. Only what a write adds is asked about (a message to a task asks
nothing of the live-task quota), so a count already past its limit (an overrun between
replicas, see the tally) refuses nothing but what would add to it.

A refusal is answered **429** when room frees as stored messages are deleted with their tasks
(so the same send can succeed later), and **413** when the one message is bigger than a whole
bytes quota, which no waiting can make fit; and so is a message over the size every message is
held to (:func:`too_large`, the operator's own bound, ``core.sizes.MESSAGE_BYTES``).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Final, Literal

from a2a.utils.errors import A2AError, InvalidParamsError, UnsupportedOperationError

from tiny_harness.core.inbox import MessageSpec
from tiny_harness.core.reason_codes import REASON_KEY, ReasonCode, coded
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import refuse_size

Kind = Literal["messages", "message_bytes", "live_tasks"]
Scope = Literal["participant", "namespace"]

#: The metrics outcome of a request refused by a quota, and of one refused for its size.
OVER_QUOTA: Final = "over_quota"
TOO_LARGE: Final = "too_large"

_KIB: Final = 1024


@dataclass(frozen=True)
class Usage:
    """What is stored now, for one participant or for the namespace."""

    messages: int = 0
    message_bytes: int = 0
    live_tasks: int = 0

    def of(self, kind: Kind) -> int:
        return int(getattr(self, kind))


@dataclass(frozen=True)
class Demand:
    """What one write would add: a message per size in ``message_sizes``, and ``tasks`` new
    tasks (0 or 1: a first message creates its task)."""

    message_sizes: tuple[int, ...] = ()
    tasks: int = 0

    @property
    def empty(self) -> bool:
        return not self.message_sizes and not self.tasks

    def of(self, kind: Kind) -> int:
        if kind == "messages":
            return len(self.message_sizes)
        if kind == "message_bytes":
            return sum(self.message_sizes)
        return self.tasks


@dataclass(frozen=True)
class Quota:
    """One limit: what it counts, for whom, and the setting that says how much."""

    kind: Kind
    scope: Scope
    limit: int

    @property
    def setting(self) -> str:
        return f"gateway.max_{self.kind}_per_{self.scope}"


def quotas(settings: GatewaySettings) -> tuple[Quota, ...]:
    """Every quota, in the order a write is asked about them: tasks first (a new task is the
    larger step), then messages, then bytes; a participant's before the namespace's, since it
    is the one the caller can do something about."""
    return tuple(
        Quota(kind, scope, int(getattr(settings, f"max_{kind}_per_{scope}")))
        for kind in ("live_tasks", "messages", "message_bytes")
        for scope in ("participant", "namespace")
    )


@dataclass(frozen=True)
class Refusal:
    """A write a quota refuses: the quota, what is counted now, and what the write would add."""

    quota: Quota
    #: The participant, or the namespace, whose count it is.
    holder: str
    count: int
    adding: int
    #: The largest single message of the write, in bytes.
    largest: int = 0

    @property
    def fits_never(self) -> bool:
        """One message is bigger than the whole bytes quota: no deletion can make room."""
        return self.quota.kind == "message_bytes" and self.largest > self.quota.limit

    @property
    def status(self) -> int:
        return 413 if self.fits_never else 429

    @property
    def message(self) -> str:
        """What the caller reads: the quota, its setting, the count now, and what to do."""
        quota = self.quota
        setting = f"{quota.setting} = {_amount(quota.kind, quota.limit)}"
        if self.fits_never:
            return (
                f"refused: the message carries {_bytes(self.largest)}, more than all of a "
                f"{quota.scope}'s messages may carry ({setting}): split it into several "
                "messages, or send a link to it"
            )
        subject = self.holder if quota.scope == "participant" else f"namespace {self.holder}"
        remedy = (
            "ask an administrator to delete ended tasks or to raise the quota"
            if quota.scope == "namespace"
            else _REMEDIES[quota.kind]
        )
        if quota.kind == "live_tasks":
            return (
                f"quota exceeded: {subject} has {_some(self.count, 'live task')}, the most a "
                f"{quota.scope} may have ({setting}); {remedy}"
            )
        if quota.kind == "messages":
            return (
                f"quota exceeded: {subject} keeps {_some(self.count, 'message')} stored, the "
                f"most a {quota.scope} may keep ({setting}); {remedy}"
            )
        return (
            f"quota exceeded: the messages {subject} keeps stored carry "
            f"{_bytes(self.count)} and this send {_bytes(self.adding)}, more than a "
            f"{quota.scope}'s messages may carry ({setting}); {remedy}"
        )

    @property
    def data(self) -> dict[str, str]:
        """The same as fields a program reads (the A2A error's data: ErrorInfo metadata,
        which holds strings), with the refusal's code."""
        return {
            REASON_KEY: ReasonCode.OVER_QUOTA.value,
            "quota": self.quota.setting,
            "limit": str(self.quota.limit),
            "count": str(self.count),
            "adding": str(self.adding),
            "scope": self.quota.scope,
        }


_ENDING: Final = (
    "a task's messages are deleted with it, when it has ended and its time to live has "
    "passed: end the tasks you are done with (complete or cancel them), and send again once "
    "they are deleted"
)
_REMEDIES: Final[dict[Kind, str]] = {
    "messages": _ENDING,
    "message_bytes": _ENDING,
    "live_tasks": "complete or cancel one of them before starting another",
}


def refusal(
    limits: Sequence[Quota],
    demand: Demand,
    *,
    participant: str,
    namespace: str,
    mine: Usage,
    everyone: Usage,
) -> Refusal | None:
    """The first quota of ``limits`` that ``demand`` would pass, given what ``participant``
    (``mine``) and the whole ``namespace`` (``everyone``) keep stored; None: it fits."""
    largest = max(demand.message_sizes, default=0)
    for quota in limits:
        adding = demand.of(quota.kind)
        if adding == 0:
            continue
        holder, usage = (
            (participant, mine) if quota.scope == "participant" else (namespace, everyone)
        )
        count = usage.of(quota.kind)
        if count + adding > quota.limit:
            return Refusal(quota, holder, count, adding, largest)
    return None


class Refused(Exception):
    """A write refused for what it would store, before anything is written: the A2A error the
    client reads, the HTTP status an HTTP+JSON answer carries (413 or 429), and the outcome the
    metrics count. The request handler raises the error itself (``handler._observed``)."""

    def __init__(self, error: A2AError, *, status: int, outcome: str) -> None:
        super().__init__(error.message)
        self.error = error
        self.status = status
        self.outcome = outcome

    @classmethod
    def by_quota(cls, refused: Refusal) -> Refused:
        # UnsupportedOperationError is FAILED_PRECONDITION: the request is well formed
        # (InvalidParams would tell the client to change it, and the same send succeeds once
        # room is made) and the operation is one the agent offers; what stops it is the state
        # of what is stored, which is what FAILED_PRECONDITION means. A2A has no
        # RESOURCE_EXHAUSTED, so the 429 and the message's remedy say the rest.
        error = UnsupportedOperationError(message=refused.message, data=refused.data)
        return cls(error, status=refused.status, outcome=OVER_QUOTA)


def too_large(spec: MessageSpec) -> Refused | None:
    """The refusal of a message over the size every message is held to (the operator's own
    text, ``core.sizes.refuse_size``), or None when it fits."""
    reason = refuse_size(spec)
    if reason is None:
        return None
    # InvalidParamsError (INVALID_ARGUMENT): it is the message that must change (split it, or
    # send a link), so a client must not send it again as it is; the gateway refuses every
    # other malformed part of a message the same way.
    error = coded(InvalidParamsError, ReasonCode.MESSAGE_TOO_LARGE, reason)
    return Refused(error, status=413, outcome=TOO_LARGE)


def _some(count: int, thing: str) -> str:
    return f"{count} {thing}" if count == 1 else f"{count} {thing}s"


def _amount(kind: Kind, value: int) -> str:
    return _bytes(value) if kind == "message_bytes" else str(value)


def _bytes(size: int) -> str:
    if size >= _KIB * _KIB:
        return f"{size / (_KIB * _KIB):.1f} MiB"
    return f"{size / _KIB:.0f} KiB" if size >= _KIB else f"{size} bytes"
