"""Files a participant hands a task: which ones are taken, and how one reaches a model.

A file arrives as a message part with its bytes (``raw``, base64 in the stored object) or a URL,
a media type and a name. **Any** file within the message's bound is taken and kept with the
message (A2A lets a client send any binary data, and a conformant agent accepts it); what a
model is given of it depends on its kind, decided here once for every adapter:

- **images** (PNG, JPEG, GIF, WebP): an image input on OpenAI Responses and Chat Completions,
  an image block on Anthropic Messages; as bytes, or as a URL the provider fetches;
- **PDF documents**: a file input on both OpenAI APIs, a document block on Anthropic; as bytes,
  or as a URL where the API takes one (Responses and Anthropic);
- **text** (``text/*``, JSON, XML, YAML) sent as bytes: given as text, which every model reads;
- **anything else** (an archive, an executable, a text at a URL, a PDF at a URL on Chat
  Completions): named to the model in a note that says it is kept with the task but cannot be
  given to it. The note is written before the call, so such a file never becomes a provider's
  400 in the middle of a turn (which would fail every later call too, since the history is sent
  again each time).

A URL is passed to the provider as it is and never fetched by the harness, so no destination
inside the cluster is reached through it; it must be ``https`` (or ``http``) with a host, and no
longer than :data:`URL_CHARS`.

Bytes are bounded by the message's own bound (``core/sizes.py``): a file part counts as its
base64 text, which is what the message object and its drain entry keep. There is no file store
(docs/design/limits.md, "Files"): a larger file is refused, saying so.
"""

from __future__ import annotations

import base64
import binascii
import mimetypes
from pathlib import PurePosixPath
from typing import Final, Literal
from urllib.parse import urlsplit

from pydantic import BaseModel, ConfigDict, Field

FileKind = Literal["image", "pdf", "text"]

IMAGE_TYPES: Final = frozenset({"image/png", "image/jpeg", "image/gif", "image/webp"})
PDF_TYPE: Final = "application/pdf"
#: Media types outside ``text/*`` that hold text a model reads as it is.
TEXT_APPLICATION_TYPES: Final = frozenset(
    {"application/json", "application/xml", "application/yaml", "application/x-yaml"}
)
#: The longest URL a file part may name.
URL_CHARS: Final = 2048
#: The media type of a file sent without one (A2A makes it optional): opaque bytes.
OPAQUE_TYPE: Final = "application/octet-stream"
#: What a model can read, as the agent card's input modes list it.
READ_TYPES: Final = (
    "text/plain",
    "text/markdown",
    "text/csv",
    "application/json",
    "application/xml",
    "application/yaml",
    "image/png",
    "image/jpeg",
    "image/gif",
    "image/webp",
    "application/pdf",
)


#: Names whose media type Python's table does not know on every platform, but people attach.
_BY_SUFFIX: Final = {
    ".yaml": "application/yaml",
    ".yml": "application/yaml",
    ".log": "text/plain",
    ".md": "text/markdown",
    ".csv": "text/csv",
    ".toml": "application/toml",
}


def media_type_of(name: str) -> str:
    """The media type a file's name implies (``application/octet-stream`` when it implies
    none): how every way in (the gateway, ``kubectl harness send --file``, the TUI) names a
    file sent without a type, so the same file is read the same way whichever way it came."""
    suffix = PurePosixPath(name).suffix.lower()
    return _BY_SUFFIX.get(suffix) or mimetypes.guess_type(name, strict=False)[0] or OPAQUE_TYPE


def kind_of(media_type: str) -> FileKind | None:
    """The kind of file ``media_type`` names (its parameters ignored), or None when no model
    can be given it (it is kept, and named to the model in a note)."""
    base = media_type.split(";", 1)[0].strip().lower()
    if base in IMAGE_TYPES:
        return "image"
    if base == PDF_TYPE:
        return "pdf"
    if base.startswith("text/") or base in TEXT_APPLICATION_TYPES:
        return "text"
    return None


class Attachment(BaseModel):
    """A file as the model port carries it: bytes (base64) or a URL, its media type and name.

    The base64 text is kept as it was stored, so a history that holds a file always renders
    to the same request bytes (a prompt cache keeps hitting on it)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    media_type: str = Field(min_length=1)
    name: str = ""
    data: str | None = Field(default=None, description="The bytes, base64.")
    url: str | None = None

    @property
    def kind(self) -> FileKind | None:
        return kind_of(self.media_type)

    @property
    def size(self) -> int:
        """The file's size in bytes (0 for a URL, whose size is not known here)."""
        if self.data is None:
            return 0
        return len(self.data) * 3 // 4 - self.data[-2:].count("=")

    @property
    def label(self) -> str:
        """How the file is named in text: its name, else its URL, else its media type."""
        return self.name or self.url or self.media_type

    @property
    def unread(self) -> str | None:
        """Why no model is given this file (None when every adapter gives it, in its form)."""
        if self.kind is None:
            return f"files of type {self.media_type} cannot be given to a model"
        if self.kind == "text" and self.data is None:
            return "a text file is given only from its bytes, and this one was sent as a URL"
        return None

    def text(self) -> str:
        """A text file's content (undecodable bytes replaced), for the kinds given as text."""
        raw = base64.b64decode(self.data or "")
        return raw.decode("utf-8", errors="replace")

    def line(self) -> str:
        """The line that stands for the file in a message's text, so that the model (and a
        transcript) can name it: ``[file report.pdf (application/pdf, 12.0 KiB)]``."""
        where = f", {self.url}" if self.url and self.name else ""
        where = where if self.url else f", {_size(self.size)}"
        return f"[file {self.label} ({self.media_type}{where})]"

    def data_url(self) -> str:
        """The bytes as a ``data:`` URL (how the OpenAI APIs take inline images and files)."""
        return f"data:{self.media_type};base64,{self.data or ''}"


def refuse_file(*, data: str | None, url: str | None) -> str | None:
    """Why a file part cannot be taken (None when it can), in words a sender can act on: bytes
    that are not base64 (a hand-written object), or a URL that is not an http(s) URL."""
    if data is not None:
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return "the file's bytes are not valid base64"
        return None
    if url is None:
        return "a file part needs its bytes or a URL"
    if len(url) > URL_CHARS:
        return f"the file's URL is {len(url)} characters; the most taken is {URL_CHARS}"
    parts = urlsplit(url)
    if parts.scheme not in ("https", "http") or not parts.hostname:
        return f"the file's URL must be an https (or http) URL with a host, not {url[:80]!r}"
    return None


def _size(size: int) -> str:
    if size < 1024:
        return f"{size} B"
    if size < 1024 * 1024:
        return f"{size / 1024:.1f} KiB"
    return f"{size / (1024 * 1024):.1f} MiB"
