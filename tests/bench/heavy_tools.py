"""A tool that answers with as much text as it is asked for, for ``bench_heavy.py``: a tool
result far over what one journal entry may hold (core/sizes.py) is cut before it is stored, and
the bench measures what the turn stores and how many model calls it makes around it.

The operator loads it with ``[operator] tools = ["heavy_tools:TOOLS"]`` and this folder on
``PYTHONPATH``.
"""

from __future__ import annotations

from typing import Any, Final

from tiny_harness.core.tools import ToolContext, ToolRegistry

TOOLS = ToolRegistry()

#: One line of the output: printable, and different on every line, as a real log would be.
_LINE: Final = "{:08d} the quick brown fox jumps over the lazy dog, again and again\n"


@TOOLS.tool(
    "emit",
    "Print a long text of the given size.",
    {
        "type": "object",
        "properties": {"kib": {"type": "integer", "minimum": 1, "maximum": 16384}},
        "required": ["kib"],
    },
)
def emit(args: dict[str, Any], context: ToolContext) -> str:
    """``kib`` KiB of text (ASCII, so as many bytes as characters)."""
    size = int(args["kib"]) * 1024
    out: list[str] = []
    length = 0
    number = 0
    while length < size:
        line = _LINE.format(number)
        out.append(line)
        length += len(line)
        number += 1
    return "".join(out)[:size]
