"""An MCP result as the model reads it: text as it is, the rest named, and a result over the
server's limit cut at a character boundary with a note saying how large it was."""

from __future__ import annotations

import mcp_types

from tiny_harness.toolservers.results import cut_to_limit, render_result, result_files


def result(*content: mcp_types.ContentBlock, **fields: object) -> mcp_types.CallToolResult:
    return mcp_types.CallToolResult(content=list(content), **fields)  # type: ignore[arg-type]


def test_text_blocks_are_joined() -> None:
    text = render_result(
        result(
            mcp_types.TextContent(type="text", text="one"),
            mcp_types.TextContent(type="text", text="two"),
        )
    )

    assert text == "one\n\ntwo"


def test_what_text_cannot_carry_is_named_not_inlined() -> None:
    text = render_result(
        result(
            mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            mcp_types.ResourceLink(type="resource_link", name="report", uri="file:///r.txt"),
        )
    )

    assert "aGVsbG8=" not in text
    assert "image/png" in text
    assert "report: file:///r.txt" in text


def test_images_and_binary_resources_are_handed_on_as_files_and_the_rest_is_not() -> None:
    files = result_files(
        result(
            mcp_types.TextContent(type="text", text="a chart and its data"),
            mcp_types.ImageContent(type="image", data="aGVsbG8=", mime_type="image/png"),
            mcp_types.EmbeddedResource(
                type="resource",
                resource=mcp_types.BlobResourceContents(
                    uri="file:///exports/data.parquet", blob="AAEC", mime_type=None
                ),
            ),
            mcp_types.ResourceLink(type="resource_link", name="report", uri="file:///r.txt"),
        )
    )

    assert [(f.name, f.media_type, f.data) for f in files] == [
        ("image-1.png", "image/png", "aGVsbG8="),
        ("data.parquet", "application/octet-stream", "AAEC"),
    ]


def test_structured_content_is_json_when_there_is_no_text() -> None:
    assert render_result(result(structured_content={"b": 2, "a": 1})) == '{"a": 1, "b": 2}'


def test_an_empty_result_says_so() -> None:
    assert render_result(result()) == "(no output)"


def test_a_result_within_the_limit_is_untouched() -> None:
    assert cut_to_limit("hello", 5, server="s") == ("hello", False)


def test_a_result_over_the_limit_is_cut_and_the_model_told_why() -> None:
    text, cut = cut_to_limit("é" * 100, 51, server="search")

    assert cut
    kept, note = text.split("\n\n", 1)
    assert kept == "é" * 25  # 50 bytes: never half a character
    assert "200 bytes" in note
    assert "tool server 'search' gives at most 51" in note
    assert "maxResultBytes" in note
    assert "Ask for less" in note
