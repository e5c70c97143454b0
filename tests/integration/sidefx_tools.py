"""A tool with a side effect outside the cluster, for the durability tests: each call appends
a line to the file named by ``TINY_HARNESS_TEST_SIDEFX``, so a test can count how often it ran.
The operator loads it with ``[operator] tools = ["tests.integration.sidefx_tools:TOOLS"]``."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

from tiny_harness.core.tools import ToolContext, ToolRegistry

TOOLS = ToolRegistry()


@TOOLS.tool(
    "record",
    "Record a note in the ledger.",
    {"type": "object", "properties": {"note": {"type": "string"}}, "required": ["note"]},
)
def record(args: dict[str, Any], context: ToolContext) -> str:
    with Path(os.environ["TINY_HARNESS_TEST_SIDEFX"]).open("a") as ledger:
        ledger.write(f"{context.call_id} {args['note']}\n")
    return "recorded"
