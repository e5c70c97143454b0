"""A participant's A2A message read once, at the edge of a send.

Everything a send needs to know of the message it was given is read here, once, before
anything is read or written: who sent it, what it carries as the inbox stores it (its parts,
its control, its metadata: :class:`~tiny_harness.core.inbox.MessageSpec`), and the task
envelope of a first message. Each later step (the checks, the quotas, the write) takes the one
:class:`Inbound` value; none of them reads the message's metadata or parts again. A message
that cannot be read is refused here, naming what to fix (code ``invalid_message``, or
``server_controlled_field``, or ``message_too_large``), and nothing has been written.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from a2a.types import Message, Role
from a2a.utils.errors import InvalidParamsError, UnsupportedOperationError
from pydantic import ValidationError

from tiny_harness.a2a_gateway.quotas import too_large
from tiny_harness.a2a_gateway.rendering import message_parts, plain_metadata
from tiny_harness.core.a2a_task import envelope_from_metadata
from tiny_harness.core.control_envelope import control_of
from tiny_harness.core.errors import (
    InvalidEnvelopeError,
    InvalidTaskError,
    ServerControlledFieldError,
)
from tiny_harness.core.inbox import Control, MessageSpec
from tiny_harness.core.reason_codes import ReasonCode, coded
from tiny_harness.core.task import TaskSpec, invalid_task_error

#: The task a message is read for before its task is known (a first message's is made later).
UNNAMED = "new"


@dataclass(frozen=True)
class Inbound:
    """One message as the gateway read it: its sender, the message as sent, what it is as the
    inbox stores it (``spec``), and the task envelope it carries (a first message's)."""

    sender: str
    message: Message
    spec: MessageSpec
    envelope: TaskSpec | None

    @property
    def control(self) -> Control | None:
        return self.spec.control

    def to(self, task_id: str) -> MessageSpec:
        """The stored form, addressed to ``task_id``."""
        if self.spec.task == task_id:
            return self.spec
        return self.spec.model_copy(update={"task": task_id})


def inbound(message: Message, sender: str) -> Inbound:
    """``message`` from ``sender``, read once; refused (:class:`InvalidParamsError`,
    :class:`UnsupportedOperationError`, or a 413 :class:`~.quotas.Refused`) when it cannot be
    stored as it is."""
    if message.role == Role.ROLE_AGENT:
        raise coded(
            InvalidParamsError,
            ReasonCode.INVALID_MESSAGE,
            "message.role: a client sends user messages only",
        )
    metadata = plain_metadata(message)
    try:
        envelope = envelope_from_metadata(metadata)
    except ServerControlledFieldError as exc:
        raise coded(
            UnsupportedOperationError, ReasonCode.SERVER_CONTROLLED_FIELD, str(exc)
        ) from None
    except InvalidTaskError as exc:
        raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, str(exc)) from None
    spec = message_spec(message.task_id or UNNAMED, message, sender, metadata=metadata)
    return Inbound(sender, message, spec, envelope)


def message_spec(
    task_id: str, message: Message, sender: str, *, metadata: dict[str, Any] | None = None
) -> MessageSpec:
    """The inbox message an A2A message becomes; a control message carries no parts.

    Raises :class:`InvalidParamsError` naming what to fix, and :class:`~.quotas.Refused` (413)
    when it carries more than a message may (``core.sizes.MESSAGE_BYTES``).
    """
    try:
        envelope = control_of(message)
    except InvalidEnvelopeError as exc:
        raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, str(exc)) from None
    decision = envelope.decision if envelope is not None else None
    control: Control | None = "complete" if envelope is not None and decision is None else None
    try:
        spec = MessageSpec(
            task=task_id,
            message_id=message.message_id,
            sender=sender,
            parts=() if envelope is not None else message_parts(message),
            control=control,
            decision=decision,
            metadata=plain_metadata(message) if metadata is None else metadata,
        )
    except ValidationError as exc:
        problem = str(invalid_task_error(exc, prefix="message"))
        raise coded(InvalidParamsError, ReasonCode.INVALID_MESSAGE, problem) from None
    # The operator refuses such a message when it meets it; refused here, it is never stored.
    refused = too_large(spec)
    if refused is not None:
        raise refused
    return spec
