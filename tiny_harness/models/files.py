"""What every adapter says of a file in text: a text file's content, and a file its API
cannot take in the form it came in.

``core/attachments.py`` takes only files every adapter can give its model, so the one case
left is a PDF at a URL on Chat Completions, which takes a PDF only as bytes: that file becomes
a note the model reads, never a request the provider refuses (a 400 would fail the turn, and
every later call of the conversation, since the history is sent again each time).
"""

from __future__ import annotations

from tiny_harness.core.attachments import Attachment


def text_of(file: Attachment) -> str:
    """A text file as the model reads it: a line naming it, then its content."""
    return f"Contents of {file.label} ({file.media_type}):\n{file.text()}"


def not_given(file: Attachment, api: str, why: str) -> str:
    """The note that stands for a file ``api`` cannot take in its form, saying why."""
    return f"[the file {file.label} ({file.media_type}) could not be given to you: {api} {why}]"
