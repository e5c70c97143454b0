"""A turn's tool definitions, converted once and sent as they are.

The OpenAI SDK walks every request parameter through its type-driven transform, and the tool
definitions (each with a JSON Schema) are most of what it walks: about half the CPU of a call
with the five intrinsic tools. They are the same on every call of every turn, so they are
converted once per set of tools and handed to the SDK as ``extra_body``, which it sends without
transforming. The wire body is the same JSON either way.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from typing import Any, Final, Generic, TypeVar

from tiny_harness.core.llm import ToolSpec

P = TypeVar("P")

#: Distinct tool sets kept (a deployment has a handful: one per tool configuration).
MAX_SETS: Final = 32


class ToolParams(Generic[P]):
    """Converted tool definitions by tool set; the tools are held, so their ids stay unique."""

    def __init__(self) -> None:
        self._sets: OrderedDict[tuple[int, ...], tuple[tuple[ToolSpec, ...], list[P]]] = (
            OrderedDict()
        )

    def body(
        self, tools: tuple[ToolSpec, ...], convert: Callable[[ToolSpec], P]
    ) -> Mapping[str, Any] | None:
        """The ``extra_body`` that carries ``tools``; None (nothing extra) when there are none."""
        if not tools:
            return None
        key = tuple(id(tool) for tool in tools)
        found = self._sets.get(key)
        if found is None:
            found = (tools, [convert(tool) for tool in tools])
            self._sets[key] = found
            if len(self._sets) > MAX_SETS:
                self._sets.popitem(last=False)
        else:
            self._sets.move_to_end(key)
        return {"tools": found[1]}
