"""Telling a command from an ordinary message.

A message is a command when its only part is text of the form ``/<name>`` or
``/<name> <arguments>`` and ``<name>`` is registered. Everything else, an unregistered
``/name`` included, is an ordinary message: it reaches the model as untrusted participant text,
framed like any other, so typing ``/anything`` can never reach code that was not registered.
"""

from __future__ import annotations

import re
from typing import Final, NamedTuple

from tiny_harness.core.commands.registry import CommandRegistry
from tiny_harness.core.inbox import MessageSpec

#: ``/<name>`` then, after whitespace, the arguments: the raw remainder, newlines included.
COMMAND_PATTERN: Final = re.compile(r"/([a-z][a-z0-9-]*)(?:\s+(.*))?", re.DOTALL)


class CommandCall(NamedTuple):
    """A parsed command: its name and the raw text after it (``""`` when there is none)."""

    name: str
    arguments: str = ""


def parse_text(text: str, registry: CommandRegistry) -> CommandCall | None:
    """The command ``text`` invokes, or None when it is an ordinary message."""
    match = COMMAND_PATTERN.fullmatch(text)
    if match is None or match.group(1) not in registry:
        return None
    return CommandCall(match.group(1), match.group(2) or "")


def parse_command(spec: MessageSpec, registry: CommandRegistry) -> CommandCall | None:
    """The command a participant's message invokes, or None when it is an ordinary message
    (several parts, a data part, a control request, or text that is no registered command)."""
    if spec.control is not None or not spec.is_text_only:
        return None
    text = spec.parts[0].text
    return parse_text(text, registry) if text is not None else None
