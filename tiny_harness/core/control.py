"""The control envelope: how a participant asks for a task to end, with any A2A client.

Only a participant ends a conversation. A2A has ``CancelTask`` but no "complete", so a
completion is an ordinary message whose only part is a data part of media type
:data:`~tiny_harness.core.extensions.EVENT_MEDIA_TYPE` holding
``{"kind": "control", "action": "complete"}``. The envelope is closed: an unknown action or
any extra field is refused with :class:`~tiny_harness.core.errors.InvalidEnvelopeError`, so a
client never believes a request was honoured when part of it was ignored.

Whether the sender may complete the task (a watcher may not) is decided by the host, not here.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any, Final, Literal, get_args

from a2a.helpers.proto_helpers import get_data_parts, new_data_part
from a2a.types import Message, Part, Role
from pydantic import BaseModel, ConfigDict, ValidationError

from tiny_harness.core.errors import InvalidEnvelopeError
from tiny_harness.core.extensions import EVENT_MEDIA_TYPE

ControlAction = Literal["complete"]
CONTROL_ACTIONS: Final[tuple[str, ...]] = get_args(ControlAction)

#: Every kind the event envelope has; only ``control`` is sent by clients.
EventKind = Literal["task", "status_update", "artifact_update", "control"]
EVENT_KINDS: Final[tuple[str, ...]] = get_args(EventKind)


class ControlEnvelope(BaseModel):
    """A participant's control request, exactly ``{"kind": "control", "action": ...}``."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    kind: Literal["control"] = "control"
    action: ControlAction


def parse_control(data: Any) -> ControlEnvelope:
    """Parse a control envelope, refusing anything but the closed shape.

    Raises :class:`InvalidEnvelopeError` that names the unknown action, the extra fields or the
    missing one.
    """
    if not isinstance(data, Mapping):
        raise InvalidEnvelopeError(f"expected a JSON object, got {type(data).__name__}")
    extra = sorted(str(k) for k in data if k not in ControlEnvelope.model_fields)
    if extra:
        raise InvalidEnvelopeError(
            f"unexpected field(s) {', '.join(extra)}; a control envelope carries only kind and "
            "action"
        )
    if data.get("kind") != "control":
        raise InvalidEnvelopeError(f"kind must be 'control', got {data.get('kind')!r}")
    if "action" not in data:
        raise InvalidEnvelopeError("the field action is missing")
    if data["action"] not in CONTROL_ACTIONS:
        raise InvalidEnvelopeError(
            f"unknown action {data['action']!r}; known actions: {', '.join(CONTROL_ACTIONS)}"
        )
    try:
        return ControlEnvelope.model_validate(dict(data))
    except ValidationError as exc:  # pragma: no cover - every case is refused above
        raise InvalidEnvelopeError(str(exc.errors()[0]["msg"])) from None


def control_part(action: ControlAction = "complete") -> Part:
    """The data part a client sends to request ``action`` on a task."""
    envelope = ControlEnvelope(action=action).model_dump(mode="json")
    return new_data_part(envelope, media_type=EVENT_MEDIA_TYPE)


def control_message(
    task_id: str,
    action: ControlAction = "complete",
    *,
    context_id: str = "",
    message_id: str | None = None,
) -> Message:
    """A user message asking for ``action`` on ``task_id`` (its only part is the envelope)."""
    return Message(
        message_id=message_id or str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER,
        parts=[control_part(action)],
    )


def control_of(message: Message) -> ControlEnvelope | None:
    """The control request ``message`` carries, or None when it is not a control message.

    A message is a control message when one of its parts is an event envelope of kind
    ``control``. Such a message is refused (:class:`InvalidEnvelopeError`) unless that envelope
    is its only part and is well formed, so nothing half-understood is ever applied. An event
    envelope of an unknown kind is refused too.
    """
    envelopes = get_data_parts([p for p in message.parts if p.media_type == EVENT_MEDIA_TYPE])
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
