"""Files a participant hands a task: which kinds the harness takes, and how one reaches a model.

A file arrives as a message part with its bytes (``raw``, base64 in the stored object) or a URL,
a media type and a name. It is taken only when every model adapter can give it to its model in
the provider's own form, so that a file is refused when it is sent (with the kinds that are
taken named), never by a provider's 400 in the middle of a turn:

- **images** (PNG, JPEG, GIF, WebP): an image input on OpenAI Responses and Chat Completions,
  an image block on Anthropic Messages; as bytes, or as a URL the provider fetches;
- **PDF documents**: a file input on both OpenAI APIs, a document block on Anthropic; as bytes,
  or as a URL where the API takes one (Responses and Anthropic; Chat Completions takes a PDF
  only as bytes, so a PDF URL there is a note the model reads instead);
- **text** (``text/*``, JSON, XML, YAML): given as text, which every model reads; as bytes only
  (a text at a URL would have to be fetched by the operator, which it does not do).

A URL is passed to the provider as it is and never fetched by the harness, so no destination
inside the cluster is reached through it; it must be ``https`` (or ``http``), and no longer than
:data:`URL_CHARS`.

Bytes are bounded by the message's own bound (``core/sizes.py``): a file part counts as its
base64 text, which is what the message object, its drain entry and the history keep.
"""

from __future__ import annotations

import base64
import binascii
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
#: What a refusal lists as the kinds that are taken.
TAKEN: Final = (
    "images (PNG, JPEG, GIF, WebP) as bytes or an https URL, PDF documents as bytes or an https "
    "URL, or text (text/*, JSON, XML, YAML) as bytes"
)


def kind_of(media_type: str) -> FileKind | None:
    """The kind of file ``media_type`` names (its parameters ignored), or None when no model
    adapter can take it."""
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


def refuse_file(*, media_type: str, data: str | None, url: str | None) -> str | None:
    """Why a file part cannot be taken (None when it can), in words a sender can act on."""
    kind = kind_of(media_type) if media_type else None
    if not media_type:
        return f"a file needs its media type; the harness takes {TAKEN}"
    if kind is None:
        return f"files of type {media_type} are not taken; the harness takes {TAKEN}"
    if data is not None:
        try:
            base64.b64decode(data, validate=True)
        except (binascii.Error, ValueError):
            return "the file's bytes are not valid base64"
        return None
    if url is None:
        return "a file part needs its bytes or a URL"
    if kind == "text":
        return f"a text file ({media_type}) is taken as bytes only: send its content, not a URL"
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
