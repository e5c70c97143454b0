"""Which of a server's listed tools are offered: the allow-list, a name for the model, and a
schema the invoker can use; everything left out is said, with the reason."""

from __future__ import annotations

from typing import Any

import mcp_types

from tiny_harness.core.json_bounds import MAX_DEPTH
from tiny_harness.toolservers.offered import select_tools


def listed(name: str, schema: dict[str, Any] | None = None, **fields: Any) -> mcp_types.Tool:
    return mcp_types.Tool(
        name=name, input_schema=schema or {"type": "object", "properties": {}}, **fields
    )


def test_every_tool_is_offered_without_an_allow_list() -> None:
    chosen, problems = select_tools(
        "files",
        [listed("read", description="Read a file."), listed("fs/write", title="Write")],
        None,
    )

    assert [(t.name, t.exposed_as, t.description) for t in chosen] == [
        ("read", "files__read", "Read a file."),
        ("fs/write", chosen[1].exposed_as, "Write"),
    ]
    assert chosen[1].exposed_as.startswith("files__fs_write_")
    assert problems == ()


def test_a_schema_the_invoker_cannot_use_is_left_out_with_the_reason() -> None:
    chosen, problems = select_tools(
        "files",
        [listed("ok"), listed("list", {"type": "array"}), listed("bad", {"type": 12})],
        None,
    )

    assert [t.name for t in chosen] == ["ok"]
    assert problems[0] == 'list: its parameters must be a JSON Schema with "type": "object"'
    assert problems[1].startswith("bad: its parameters are not a valid JSON Schema")


def test_the_allow_list_keeps_only_what_it_names_and_reports_what_is_missing() -> None:
    chosen, problems = select_tools("files", [listed("read"), listed("write")], ["read", "rm"])

    assert [t.name for t in chosen] == ["read"]
    assert problems == ("rm: in spec.tools, but the server has no such tool",)


def test_a_schema_nested_too_deep_to_store_is_left_out_with_the_reason() -> None:
    deep: dict[str, Any] = {"type": "object"}
    for _ in range(MAX_DEPTH):
        deep = {"type": "object", "properties": {"a": deep}}

    chosen, problems = select_tools("files", [listed("ok"), listed("deep", deep)], None)

    assert [t.name for t in chosen] == ["ok"]
    assert problems == (
        f"deep: its input schema cannot be taken: the JSON is nested more than {MAX_DEPTH} "
        f"levels deep, and free-form data may nest at most {MAX_DEPTH} levels: flatten it, "
        "or send it as text",
    )
