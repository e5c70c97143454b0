"""What every adapter says of a file in text: a text file's content, and the note that stands
for a file its model is not given.

``core/attachments.py`` decides which files no model is given (``Attachment.unread``); an
adapter adds the one form its own API does not take (a PDF at a URL on Chat Completions). Such a
file becomes a note the model reads, never a request the provider refuses: a 400 would fail the
turn, and every later call of the conversation, since the history is sent again each time.
"""

from __future__ import annotations

from tiny_harness.core.attachments import Attachment


def text_of(file: Attachment) -> str:
    """A text file as the model reads it: a line naming it, then its content."""
    return f"Contents of {file.label} ({file.media_type}):\n{file.text()}"


def not_given(file: Attachment, why: str) -> str:
    """The note that stands for a file the model is not given, saying why."""
    return (
        f"[the file {file.label} ({file.media_type}) is kept with the task but could not be "
        f"given to you: {why}]"
    )
