"""The status extension: where a task's sub-state travels on the A2A wire.

A2A's ``TaskStatus`` has no metadata field, so the sub-state that refines
``TASK_STATE_INPUT_REQUIRED`` rides in ``Task.metadata`` and in the metadata of the matching
``TaskStatusUpdateEvent``, under :data:`~tiny_harness.core.extensions.STATUS_EXT_KEY`, as
``{"sub_state": "..."}``. Leaving ``INPUT_REQUIRED`` clears it, which deletes the key, so a
reader never sees a stale sub-state. These helpers are the only code that spells that layout.

The sub-state is a free string, not a closed enum: a later sub-state is additive, and a reader
treats a value it does not know as plain ``INPUT_REQUIRED`` (:func:`known_sub_state`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any, Final

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from tiny_harness.core.errors import InvalidExtensionError
from tiny_harness.core.extensions import STATUS_EXT_KEY
from tiny_harness.core.states import SubState

SUB_STATE_DESCRIPTION: Final = (
    "Refines TASK_STATE_INPUT_REQUIRED. Documented values: 'awaiting-next-message' (a "
    "conversation's turn ended; the task waits for the next message from a participant), "
    "'awaiting-answer' (the agent asked a participant a question and waits for the answer), "
    "'awaiting-budget' (the task used its budget and waits for a reporter or an admin to raise "
    "it with /budget) and 'awaiting-approval' (calls the model asked for wait for a "
    "participant's decision: the task extension's approvals list them). "
    "This is a free string, not a closed enum: later versions may add values, and a reader MUST "
    "treat a value it does not know as plain TASK_STATE_INPUT_REQUIRED. The key is absent "
    "whenever the task is not parked."
)


class StatusExtensionData(BaseModel):
    """The value under the status extension key: ``{"sub_state": "..."}``."""

    # Unknown keys are ignored rather than refused so that a later, additive version of the
    # extension does not break readers of this one.
    model_config = ConfigDict(frozen=True, extra="ignore")

    sub_state: str = Field(
        min_length=1,
        max_length=253,
        description=SUB_STATE_DESCRIPTION,
        examples=[s.value for s in SubState],
    )


#: A2A metadata: a plain mapping, or the protobuf ``Struct`` of an a2a-sdk message (a Mapping).
Metadata = Mapping[str, Any]


def metadata_dict(metadata: Metadata | None) -> dict[str, Any]:
    """A plain-dict deep copy of A2A metadata, whether a protobuf ``Struct`` or a mapping.

    Nested ``Struct`` and ``ListValue`` become dicts and lists, so callers (and pydantic) only
    ever see plain JSON data. Protobuf keeps numbers as floats; nothing we store is an integer.
    """
    if metadata is None:
        return {}
    return {str(key): _plain(value) for key, value in metadata.items()}


def _plain(value: Any) -> Any:
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in value.items()}
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return [_plain(v) for v in value]
    return value


def with_sub_state(metadata: Metadata | None, sub_state: str | None) -> dict[str, Any]:
    """A copy of ``metadata`` carrying ``sub_state``, or without the status key when it is None.

    The input is left untouched, so a caller can build an event's metadata from a task's.
    """
    out = metadata_dict(metadata)
    if sub_state is None:
        out.pop(STATUS_EXT_KEY, None)
    else:
        data = StatusExtensionData(sub_state=str(sub_state))
        out[STATUS_EXT_KEY] = data.model_dump(mode="json")
    return out


def status_metadata(sub_state: str | None) -> dict[str, Any]:
    """The metadata of a ``TaskStatusUpdateEvent``: the status key when there is a sub-state."""
    return with_sub_state(None, sub_state)


def sub_state_of(metadata: Metadata | None) -> str | None:
    """The sub-state recorded in ``metadata``, or None when the status key is absent.

    Raises :class:`InvalidExtensionError` naming the key when the value is not the documented shape.
    """
    raw = metadata_dict(metadata).get(STATUS_EXT_KEY)
    if raw is None:
        return None
    field = f"metadata[{STATUS_EXT_KEY!r}]"
    if not isinstance(raw, Mapping):
        raise InvalidExtensionError(
            field, 'expected an object like {"sub_state": "awaiting-answer"}'
        )
    try:
        return StatusExtensionData.model_validate(raw).sub_state
    except ValidationError as exc:
        first = exc.errors()[0]
        loc = ".".join(str(part) for part in first["loc"])
        raise InvalidExtensionError(f"{field}.{loc}", str(first["msg"])) from None


def known_sub_state(value: str | None) -> SubState | None:
    """The documented sub-state ``value`` names, or None for an absent or unknown one."""
    if value is None:
        return None
    try:
        return SubState(value)
    except ValueError:
        return None
