"""Untrusted text, shown as it is and never obeyed.

What a participant, a model, a remote agent or a tool writes (a message, a goal, a task or
file name, a tool's arguments, an error that quotes any of them) reaches terminals, log files
and browsers. A terminal obeys what it is sent: ``ESC [2J`` clears the screen, ``ESC ]52;c;...``
writes the clipboard, ``ESC [31m`` paints a fake notice red, a carriage return overwrites the
line before it, and a right-to-left override (U+202E) shows ``exe.txt`` where ``txt.exe`` is
written. :func:`literal` is the one place that makes such text safe to show: every character a
terminal (or a bidi-aware renderer) would act on instead of print is replaced by a visible
escape (``\\x1b[2J``, ``\\u202e``), and everything else is left as it was, so the reader sees
what was written, including the attempt.

:class:`LiteralFormatter` does the same for log records, so a message quoted in a log line can
neither drive the terminal that tails the log nor forge a log line of its own.
"""

from __future__ import annotations

import logging
import re
from typing import Final

#: What is escaped wherever text is shown: C0 controls (ESC, BEL, CR, backspace, ...), DEL, C1
#: controls (0x9b is a one-byte CSI in some terminals), the bidi embeddings, overrides, isolates
#: and marks (U+061C, U+200E-200F, U+202A-202E, U+2066-2069), the line and paragraph
#: separators (U+2028-2029, a line break to some readers and not others), and lone surrogates
#: (which no terminal can be sent at all). Newline and tab are escaped only in one-line text.
_ALWAYS: Final = (
    "\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029"
    "\ud800-\udfff"
)
_MULTI_LINE: Final = re.compile(f"[{_ALWAYS}]")
_ONE_LINE: Final = re.compile(f"[{_ALWAYS}\t\n]")
_NAMED: Final = {"\t": "\\t", "\n": "\\n", "\r": "\\r"}


def _escape(match: re.Match[str]) -> str:
    char = match.group()
    named = _NAMED.get(char)
    if named is not None:
        return named
    code = ord(char)
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


def literal(text: str, *, lines: bool = True) -> str:
    """``text`` with every character a terminal would obey shown as an escape instead.

    With ``lines`` (the default) newlines and tabs are kept, for text shown on lines of its
    own (a message, a description); without, they are escaped too, for text that must stay on
    one line (a table cell, a log record, a name). Escaping is idempotent: text already shown
    literally is left as it is, so a layer that escapes again changes nothing.
    """
    pattern = _MULTI_LINE if lines else _ONE_LINE
    if pattern.search(text) is None:
        return text
    return pattern.sub(_escape, text)


def literal_json(text: str) -> str:
    """JSON ``text`` with each character a terminal would obey written as its JSON escape
    (``\\u001b``, ``\\u202e``): it reads back as the same value, and shows nothing it would
    obey. Such characters can only be inside JSON strings, where the escape means the same."""
    if _ONE_LINE.search(text) is None:
        return text
    return _ONE_LINE.sub(lambda match: f"\\u{ord(match.group()):04x}", text)


class LiteralFormatter(logging.Formatter):
    """A log formatter that shows each record's message on one line, literally, and its
    traceback literally, on its lines: a quoted message can neither drive the reader's
    terminal nor start a log line of its own."""

    def formatMessage(self, record: logging.LogRecord) -> str:
        return literal(super().formatMessage(record), lines=False)

    def formatException(self, ei: logging._SysExcInfoType) -> str:
        return literal(super().formatException(ei))

    def formatStack(self, stack_info: str) -> str:
        return literal(super().formatStack(stack_info))


#: The one layout of the harness's log lines (the operator's, the gateway's, the TUI's file).
LOG_FORMAT: Final = "%(asctime)s %(levelname)s %(name)s: %(message)s"


def log_handler(handler: logging.Handler) -> logging.Handler:
    """``handler`` with the harness's literal log format."""
    handler.setFormatter(LiteralFormatter(LOG_FORMAT))
    return handler
