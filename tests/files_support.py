"""What the files-and-artifacts tests share: a real PNG to attach, and the scripted model's
``publish_artifact`` call."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from typing import Any


def png(width: int = 2, height: int = 2, pixel: Callable[[int, int], bytes] | None = None) -> bytes:
    """A real PNG (8-bit RGB) of ``width`` by ``height``, as a client would attach one:
    ``pixel(x, y)`` gives each pixel's three bytes (red by default)."""
    colour = pixel or (lambda x, y: b"\xff\x00\x00")

    def chunk(kind: bytes, data: bytes) -> bytes:
        body = kind + data
        return struct.pack(">I", len(data)) + body + struct.pack(">I", zlib.crc32(body))

    rows = b"".join(b"\x00" + b"".join(colour(x, y) for x in range(width)) for y in range(height))
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return (
        b"\x89PNG\r\n\x1a\n"
        + chunk(b"IHDR", header)
        + chunk(b"IDAT", zlib.compress(rows))
        + chunk(b"IEND", b"")
    )


def publish(name: str, parts: list[dict[str, Any]], call: str, **more: Any) -> dict[str, Any]:
    """The scripted model's turn that calls ``publish_artifact(name, parts, **more)``."""
    arguments = {"name": name, "parts": parts, **more}
    return {
        "type": "tool_calls",
        "calls": [{"name": "publish_artifact", "arguments": arguments, "id": call}],
    }
