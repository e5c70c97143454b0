"""An MCP tool result as the text the model gets, cut to the server's size limit.

The model's history holds text, and the journal holds every result for the task's life, so a
result is rendered once, here: text blocks as they are, structured content as JSON when there
is no text, and what text cannot carry (images, audio, binary resources) named rather than
inlined; images and binary resources are also handed on as files (:func:`result_files`),
which the task keeps as artifacts. A result larger than the server's ``maxResultBytes`` is cut
at a character boundary and the model is told how large it was, so it can ask for less
instead of trusting half an answer.
"""

from __future__ import annotations

import json
import mimetypes
from pathlib import PurePosixPath
from typing import Final
from urllib.parse import urlsplit

import mcp_types

from tiny_harness.core.attachments import OPAQUE_TYPE, Attachment

#: Between two content blocks.
BLOCK_SEPARATOR: Final = "\n\n"


def render_result(result: mcp_types.CallToolResult) -> str:
    """The result's content as text (``(no output)`` when it has none)."""
    blocks = [_render_block(block) for block in result.content]
    text = BLOCK_SEPARATOR.join(b for b in blocks if b)
    if not text and result.structured_content is not None:
        text = json.dumps(result.structured_content, ensure_ascii=False, sort_keys=True)
    return text or "(no output)"


def _render_block(block: mcp_types.ContentBlock) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent):
        return f"[an image ({block.mime_type})]"
    if isinstance(block, mcp_types.AudioContent):
        return f"[audio ({block.mime_type}) the harness does not play]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource {block.name}: {block.uri}]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        return f"[binary resource {resource.uri} ({resource.mime_type or OPAQUE_TYPE})]"
    return f"[{type(block).__name__} content the harness does not show]"


def result_files(result: mcp_types.CallToolResult) -> tuple[Attachment, ...]:
    """The files a result carries (its images and binary resources, base64 as MCP sends
    them), which the task keeps as artifacts: text cannot carry them to the model."""
    files: list[Attachment] = []
    for index, block in enumerate(result.content):
        if isinstance(block, mcp_types.ImageContent):
            extension = mimetypes.guess_extension(block.mime_type) or ""
            name = f"image-{index}{extension}"
            files.append(Attachment(media_type=block.mime_type, name=name, data=block.data))
        elif isinstance(block, mcp_types.EmbeddedResource) and isinstance(
            block.resource, mcp_types.BlobResourceContents
        ):
            resource = block.resource
            name = PurePosixPath(urlsplit(str(resource.uri)).path).name or f"resource-{index}"
            media_type = resource.mime_type or OPAQUE_TYPE
            files.append(Attachment(media_type=media_type, name=name, data=resource.blob))
    return tuple(files)


def cut_to_limit(text: str, limit: int, *, server: str) -> tuple[str, bool]:
    """``text`` within ``limit`` UTF-8 bytes, with a note saying what was cut; and whether it
    was cut."""
    encoded = text.encode()
    if len(encoded) <= limit:
        return text, False
    kept = encoded[:limit].decode(errors="ignore")  # never half a character
    note = (
        f"\n\n[Cut: the result was {len(encoded):,} bytes and tool server {server!r} gives at "
        f"most {limit:,} (its maxResultBytes). Ask for less, such as a narrower query or one "
        "page of the result.]"
    )
    return kept + note, True
