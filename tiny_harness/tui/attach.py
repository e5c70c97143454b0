"""Files attached to the next message: checked on this side first, by the gateway's rules.

A file is attached by its path. Its media type is the one its name implies, as ``kubectl harness
send --file`` and the gateway guess it (:meth:`~tiny_harness.core.inbox.MessagePart.of_file`; a
name that implies none is opaque bytes, ``application/octet-stream``). The gateway
takes a file of any kind, and so does the TUI: one no model can be given (an archive, say:
:attr:`~tiny_harness.core.attachments.Attachment.unread`) is kept with the task and named to
the model, which is said when it is attached and beside it above the composer. What is refused
before anything is read or sent is what the gateway would refuse: bytes past the message's
bound (a file counts as its base64 text, so at most :data:`~tiny_harness.core.sizes.FILE_BYTES`,
and the files of one message together no more). The gateway checks the message again when it
is sent (the text counts too), and its refusal is said the same way, as a notice, with nothing
sent.

An attached file is sent as an A2A part with its bytes (``raw``), media type and name, and it
is named on the screen, above the composer and in the conversation, by the line the harness
gives it in a message's text (:meth:`~tiny_harness.core.attachments.Attachment.line`).
"""

from __future__ import annotations

import base64
import stat
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from a2a.types import Part

from tiny_harness.core.attachments import OPAQUE_TYPE, Attachment
from tiny_harness.core.inbox import MessagePart
from tiny_harness.core.sizes import FILE_BYTES, MESSAGE_BYTES, kib

#: What becomes of a file no model is given (the web UI says the same).
KEPT: Final = "kept with the task, and the model told only its name"


class AttachError(ValueError):
    """Why a file cannot be attached, as a sentence naming the file."""


@dataclass(frozen=True)
class Attached:
    """A file attached to the next message: its name, media type and bytes."""

    name: str
    media_type: str
    data: bytes

    @property
    def file(self) -> Attachment:
        return Attachment(
            media_type=self.media_type, name=self.name, data=base64.b64encode(self.data).decode()
        )

    def line(self) -> str:
        """``[file chart.png (image/png, 1.2 KiB)]``: as the harness names it in the text."""
        return self.file.line()

    @property
    def unread(self) -> str | None:
        """Why no model is given this file (None: every model is), as the harness says it."""
        return self.file.unread

    def part(self) -> Part:
        return Part(raw=self.data, media_type=self.media_type, filename=self.name)


def encoded(size: int) -> int:
    """How many characters of base64 ``size`` bytes are: what a file counts toward a message."""
    return (size + 2) // 3 * 4


def attach(path: Path, attached: Sequence[Attached] = ()) -> Attached:
    """The file at ``path``, read, when the gateway would take it beside the files already
    ``attached``; else :class:`AttachError` saying why (and nothing read past its size)."""
    name = path.name
    try:
        found = path.stat()
    except OSError as exc:
        raise AttachError(f"cannot attach {path}: {exc.strerror or exc}") from None
    if not stat.S_ISREG(found.st_mode):
        raise AttachError(f"cannot attach {path}: it is not a file")
    _refuse_size(name, found.st_size, attached)
    try:
        data = path.read_bytes()
    except OSError as exc:
        raise AttachError(f"cannot read {path}: {exc.strerror or exc}") from None
    _refuse_size(name, len(data), attached)  # it may have grown since
    return Attached(name, MessagePart.of_file(name, data).media_type or OPAQUE_TYPE, data)


def _refuse_size(name: str, size: int, attached: Sequence[Attached]) -> None:
    if encoded(size) > MESSAGE_BYTES:
        raise AttachError(
            f"{name} is {kib(size)}; the harness takes files of at most {kib(FILE_BYTES)} in a "
            "message and has no file store for larger ones: send a smaller file, or (images "
            "and PDFs) an https URL to it from another client"
        )
    together = encoded(size) + sum(encoded(len(a.data)) for a in attached)
    if together > MESSAGE_BYTES:
        raise AttachError(
            f"{name} ({kib(size)}) would take the files attached to {kib(together * 3 // 4)}; a "
            f"message carries at most {kib(FILE_BYTES)} of files: send some in the next message"
        )


def shown(attached: Sequence[Attached]) -> str:
    """What the line above the composer says of the files attached ("" for none)."""
    if not attached:
        return ""
    named = [a.line() + (f" ({KEPT})" if a.unread else "") for a in attached]
    return "Attached: " + " ".join(named) + " · f9 drops the last"
