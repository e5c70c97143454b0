"""The control envelope: how a participant asks for a task to end, or decides a call that
waits for approval, with any A2A client.

Only a participant ends a conversation. A2A has ``CancelTask`` but no "complete", so a
completion is an ordinary message whose only part is a data part of media type
:data:`~tiny_harness.core.extensions.EVENT_MEDIA_TYPE` holding
``{"kind": "control", "action": "complete"}``. A decision is the same envelope with
``"action": "approve"`` or ``"reject"``, the ``park`` and ``call_id`` it decides (a decision
naming no park, or another than the open one, is refused), an optional ``reason`` and,
for an approval its policy lets edit, ``arguments`` (``docs/a2a/ext/approval/v1.md``). The
envelope is closed: an unknown action, any extra field, or a field the action does not take is
refused with :class:`~tiny_harness.core.errors.InvalidEnvelopeError`, so a client never
believes a request was honoured when part of it was ignored.

Whether the sender may complete the task (a watcher may not) or decide the call is decided by
the operator, not here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from a2a.helpers.proto_helpers import get_data_parts, new_data_part
from a2a.types import Message, Part, Role
from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiny_harness.core.approval import DecisionRequest, Verdict
from tiny_harness.core.errors import InvalidEnvelopeError
from tiny_harness.core.extensions import EVENT_MEDIA_TYPE
from tiny_harness.core.json_bounds import JsonBoundError, check

ControlAction = Literal["complete", "approve", "reject"]
CONTROL_ACTIONS: Final[tuple[str, ...]] = get_args(ControlAction)

#: Every kind the event envelope has; only ``control`` is sent by clients.
EventKind = Literal["task", "status_update", "artifact_update", "control"]
EVENT_KINDS: Final[tuple[str, ...]] = get_args(EventKind)


#: The fields a decision (approve, reject) may carry beside kind and action.
DECISION_FIELDS: Final = frozenset({"call_id", "park", "reason", "arguments"})


class ControlEnvelope(BaseModel):
    """A participant's control request: ``{"kind": "control", "action": "complete"}``, or a
    decision, ``{"kind": "control", "action": "approve"|"reject", "call_id": ..., "park": ...,
    "reason": ..., "arguments": {...}}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["control"] = "control"
    action: ControlAction
    call_id: str | None = Field(default=None, min_length=1, max_length=253)
    park: str | None = Field(default=None, min_length=1, max_length=64)
    reason: str = Field(default="", max_length=4096)
    arguments: dict[str, Any] | None = None

    @property
    def decision(self) -> DecisionRequest | None:
        """The decision this envelope carries; None for a completion."""
        if self.action == "complete" or self.call_id is None:
            return None
        verdict: Verdict = "approve" if self.action == "approve" else "reject"
        return DecisionRequest(
            call_id=self.call_id,
            park=self.park,
            verdict=verdict,
            reason=self.reason,
            arguments=self.arguments,
        )


def parse_control(data: Any) -> ControlEnvelope:
    """Parse a control envelope, refusing anything but the closed shape.

    Raises :class:`InvalidEnvelopeError` that names the unknown action, the extra fields or the
    missing one.
    """
    if not isinstance(data, Mapping):
        raise InvalidEnvelopeError(f"expected a JSON object, got {type(data).__name__}")
    deciding = data.get("action") in ("approve", "reject")
    allowed = {"kind", "action"} | (DECISION_FIELDS if deciding else set())
    extra = sorted(str(k) for k in data if k not in allowed)
    if extra:
        carries = (
            "kind, action, call_id, park, reason and arguments"
            if deciding
            else "only kind and action (call_id, park, reason and arguments go with approve or "
            "reject)"
        )
        raise InvalidEnvelopeError(
            f"unexpected field(s) {', '.join(extra)}; a control envelope carries {carries}"
        )
    if data.get("kind") != "control":
        raise InvalidEnvelopeError(f"kind must be 'control', got {data.get('kind')!r}")
    if "action" not in data:
        raise InvalidEnvelopeError("the field action is missing")
    if data["action"] not in CONTROL_ACTIONS:
        raise InvalidEnvelopeError(
            f"unknown action {data['action']!r}; known actions: {', '.join(CONTROL_ACTIONS)}"
        )
    if deciding and not (isinstance(data.get("call_id"), str) and data["call_id"]):
        raise InvalidEnvelopeError(
            f"the field call_id is missing: {data['action']} names the call it decides "
            "(status.approvals[].call_id in the task extension)"
        )
    if "arguments" in data and data["action"] != "approve":
        raise InvalidEnvelopeError("arguments go only with approve (an edited call)")
    if "arguments" in data and not isinstance(data["arguments"], Mapping):
        raise InvalidEnvelopeError("arguments must be a JSON object: the call's arguments")
    if "arguments" in data:
        try:
            check(data["arguments"])
        except JsonBoundError as exc:
            raise InvalidEnvelopeError(f"arguments: {exc}") from None
    try:
        return ControlEnvelope.model_validate(dict(data))
    except ValidationError as exc:
        first = exc.errors()[0]
        where = ".".join(str(p) for p in first["loc"])
        raise InvalidEnvelopeError(f"{where}: {first['msg']}") from None


def control_part(action: ControlAction = "complete", **decision: Any) -> Part:
    """The data part a client sends to request ``action`` on a task (``decision``: the
    ``call_id``, ``park``, ``reason`` and ``arguments`` of an approve or reject)."""
    envelope = ControlEnvelope(action=action, **decision).model_dump(
        mode="json", exclude_defaults=True
    )
    envelope["kind"] = "control"
    return new_data_part(envelope, media_type=EVENT_MEDIA_TYPE)


def control_message(
    task_id: str,
    action: ControlAction = "complete",
    *,
    context_id: str = "",
    message_id: str | None = None,
    **decision: Any,
) -> Message:
    """A user message asking for ``action`` on ``task_id`` (its only part is the envelope)."""
    return Message(
        message_id=message_id or str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER,
        parts=[control_part(action, **decision)],
    )


def _is_envelope(part: Part) -> bool:
    if part.media_type == EVENT_MEDIA_TYPE:
        return True
    if part.media_type or part.WhichOneof("content") != "data":
        return False
    data = get_data_parts([part])
    return bool(data) and isinstance(data[0], Mapping) and data[0].get("kind") == "control"


def control_of(message: Message) -> ControlEnvelope | None:
    """The control request ``message`` carries, or None when it is not a control message.

    A message is a control message when one of its parts is an event envelope of kind
    ``control``. Such a message is refused (:class:`InvalidEnvelopeError`) unless that envelope
    is its only part and is well formed, so nothing half-understood is ever applied. An event
    envelope of an unknown kind is refused too.

    A data part of protocol 0.3 has no media type (0.3 gives one to files only, and the SDK's
    conversion drops it), so a data part *without* one whose object has ``"kind":
    "control"`` is read as the envelope as well: a 0.3 client can complete a task and decide a
    call as a 1.0 client does. It gives its sender no power they lack: a control is only ever
    applied for someone the operator lets give it.
    """
    envelopes = get_data_parts([p for p in message.parts if _is_envelope(p)])
    controls = [e for e in envelopes if isinstance(e, Mapping) and e.get("kind") == "control"]
    for envelope in envelopes:
        kind = envelope.get("kind") if isinstance(envelope, Mapping) else None
        if kind not in EVENT_KINDS:
            raise InvalidEnvelopeError(
                f"unknown envelope kind {kind!r}; known kinds: {', '.join(EVENT_KINDS)}"
            )
    if not controls:
        return None
    if len(message.parts) != 1:
        raise InvalidEnvelopeError(
            f"a control message must carry the envelope as its only part, this one has "
            f"{len(message.parts)} parts"
        )
    return parse_control(controls[0])
