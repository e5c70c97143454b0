"""A participant's message to a task, as it waits in the task's inbox.

Every message a participant sends (through the gateway, ``kubectl harness send`` or a plain
``kubectl create``) becomes one ``HarnessMessage`` object. It is immutable: the operator never
edits it, it only records in the task's turn journal that it took it. The name is derived from
the task and the A2A message id, so sending the same message twice creates it once.

See ``docs/design/messages-and-history.md`` for why the inbox and the history are separate.
"""

from __future__ import annotations

import base64
import hashlib
import json
from collections.abc import Iterable
from typing import Final, Literal

from pydantic import Field, model_validator

from tiny_harness.core.approval import DecisionRequest
from tiny_harness.core.attachments import (
    OPAQUE_TYPE,
    URL_CHARS,
    Attachment,
    media_type_of,
    refuse_file,
)
from tiny_harness.core.json_bounds import StoredObject
from tiny_harness.core.vocabulary import NAME_MAX, TEXT_MAX, Model, ShortText

#: The largest text a single message may carry; the gateway's request limit is smaller still.
MESSAGE_TEXT_MAX: Final = 256 * 1024

#: The media type a data part is labelled with when its sender named none: it holds a JSON
#: object, and JSON is what the agent card says it accepts.
DATA_MEDIA_TYPE: Final = "application/json"


class MessagePart(Model):
    """One part of a message: text, data with its media type, or a file (bytes or a URL)."""

    # As A2A has them; core/attachments.py says which files are taken, and why.

    model_config = Model.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "(has(self.text) ? 1 : 0) + (has(self.data) ? 1 : 0) + "
                    "(has(self.raw) ? 1 : 0) + (has(self.url) ? 1 : 0) == 1",
                    "message": "spec.parts: each part has one of text, data, raw or url",
                }
            ]
        }
    }

    text: str | None = Field(default=None, max_length=MESSAGE_TEXT_MAX)
    data: StoredObject | None = Field(
        default=None, description="A JSON object, written as its JSON text."
    )
    raw: str | None = Field(
        default=None,
        max_length=MESSAGE_TEXT_MAX,
        description="A file's bytes, base64; its media type is required.",
    )
    url: str | None = Field(
        default=None, max_length=URL_CHARS, description="A file's URL; its media type is required."
    )
    filename: str | None = Field(default=None, max_length=NAME_MAX)
    media_type: str | None = Field(default=None, max_length=NAME_MAX)

    @model_validator(mode="after")
    def _one_kind(self) -> MessagePart:
        given = [k for k in ("text", "data", "raw", "url") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError("spec.parts: each part has one of text, data, raw or url")
        return self

    @classmethod
    def of_file(cls, name: str, data: bytes, media_type: str | None = None) -> MessagePart:
        """A file's part: its bytes as base64, its name, and its media type (the one its name
        implies when none is given, else ``application/octet-stream``)."""
        guessed = media_type or media_type_of(name)
        return cls(raw=base64.b64encode(data).decode(), filename=name, media_type=guessed)

    @property
    def attachment(self) -> Attachment | None:
        """The part as a file for the model port (None for text and data)."""
        if self.raw is None and self.url is None:
            return None
        return Attachment(
            media_type=self.media_type or OPAQUE_TYPE,
            name=self.filename or "",
            data=self.raw,
            url=self.url,
        )


Control = Literal["complete", "cancel"]


class MessageSpec(Model):
    """The ``HarnessMessage`` spec: either parts for the task (text, data) or a control
    request (complete or cancel) from a participant."""

    model_config = Model.model_config | {
        "json_schema_extra": {
            "x-kubernetes-validations": [
                {
                    "rule": "has(self.control) || has(self.decision) || "
                    "(has(self.parts) && size(self.parts) > 0)",
                    "message": "spec.parts: a message needs at least one part, a control or a "
                    "decision",
                }
            ]
        }
    }

    task: ShortText = Field(description="The name of the HarnessTask this message is for.")
    message_id: ShortText = Field(description="The A2A message id, unique per task.")
    sender: ShortText = Field(description="The participant who sent it.")
    parts: tuple[MessagePart, ...] = Field(default=(), max_length=16)
    control: Control | None = Field(
        default=None, description="A participant's request to complete or cancel the task."
    )
    decision: DecisionRequest | None = Field(
        default=None,
        description="A participant's decision on a call that waits for approval (approve or "
        "reject); the operator checks that the sender may give it.",
    )
    sent_at: str | None = Field(
        default=None,
        description="When the writer sent it (RFC 3339 with nanoseconds): orders messages "
        "created within the same second.",
    )
    metadata: StoredObject = Field(
        default_factory=dict,
        description="The A2A message metadata (for example a task envelope), written as its "
        "JSON text.",
    )

    @model_validator(mode="after")
    def _content(self) -> MessageSpec:
        if self.control is None and self.decision is None and not self.parts:
            raise ValueError(
                "spec.parts: a message needs at least one part, a control or a decision"
            )
        return self

    @property
    def text(self) -> str:
        """What the model reads of the message: every part, as :func:`model_text` renders it."""
        return model_text(self.parts)

    @property
    def shown(self) -> str:
        """What the message reads as in a transcript: its text; a control as its command
        (``/complete``); a decision as what it decides (``approve call_w1: fine``)."""
        if self.control is not None:
            return f"/{self.control}"
        if self.decision is not None:
            d = self.decision
            return f"{d.verdict} {d.call_id}" + (f": {d.reason}" if d.reason else "")
        return self.text

    @property
    def attachments(self) -> tuple[Attachment, ...]:
        """The message's files, in their order, as the model port carries them."""
        return tuple(a for a in (p.attachment for p in self.parts) if a is not None)

    @property
    def is_text_only(self) -> bool:
        return len(self.parts) == 1 and self.parts[0].text is not None


def model_text(parts: Iterable[MessagePart]) -> str:
    """The parts of a message as the one text the model reads, a part to a line or more: a
    text part as it is, a data part as a line naming its media type and then its JSON.

    Data is rendered, not refused at the gateway: the agent card accepts ``application/json``,
    so a client may well send a form's answers or another agent's result as a data part, and a
    model reads JSON as well as prose. Dropping it instead (as a text-only join would) leaves
    a message the model cannot see at all, and an empty one that Anthropic refuses on every
    later call of the conversation.

    The JSON has sorted keys and keeps non-ASCII characters as they are (as a tool's structured
    result is rendered), so the same message always reads the same: a prompt cache keeps
    hitting on a history that holds it.
    """
    return "\n".join(_part_text(p) for p in parts)


def _part_text(part: MessagePart) -> str:
    if part.text is not None:
        return part.text
    if part.attachment is not None:
        return part.attachment.line()
    data = json.dumps(part.data, ensure_ascii=False, sort_keys=True)
    return f"Data ({part.media_type or DATA_MEDIA_TYPE}):\n{data}"


def message_name(task: str, uid: str, message_id: str) -> str:
    """The object name of a message: stable for a (task object, message id) pair, at most 253
    chars. The task's uid is in it, so a task re-created under an old name, whose messages
    reuse ids such as ``brief``, never finds the old task's message in its place."""
    digest = hashlib.sha256(f"{task}\0{uid}\0{message_id}".encode()).hexdigest()[:16]
    return f"{task[: NAME_MAX - 20]}-m-{digest}"


def refuse_parts(parts: Iterable[MessagePart]) -> str | None:
    """Why a message's parts cannot be taken (None when they can): a file whose bytes or URL
    are malformed, named by its place."""
    for index, part in enumerate(parts):
        if part.raw is None and part.url is None:
            continue
        reason = refuse_file(data=part.raw, url=part.url)
        if reason is not None:
            return f"refused: message.parts[{index}]: {reason}"
    return None


__all__ = [
    "TEXT_MAX",
    "MessagePart",
    "MessageSpec",
    "message_name",
    "model_text",
    "refuse_parts",
]
