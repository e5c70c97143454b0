"""An artifact's content as one file: the bytes every front end writes when asked for it.

``kubectl harness artifact`` writes them to standard output and the TUI saves them to a file;
both ask here, so an artifact reads the same wherever it is written: text parts as their text,
a file part as its raw bytes (a single-file artifact is that file, byte for byte), a data part
as indented JSON on lines of its own.
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from tiny_harness.core.artifact_index import ArtifactPart


def content(parts: Sequence[ArtifactPart]) -> bytes:
    """The bytes written for ``parts``, in order: a text as UTF-8, a file as its bytes, a data
    part as indented JSON on lines of its own."""
    out = bytearray()
    for part in parts:
        if part.text is not None:
            out += part.text.encode()
        elif part.file is not None:
            out += part.file.raw()
        elif part.data is not None:
            if out and not out.endswith(b"\n"):
                out += b"\n"
            out += json.dumps(part.data, indent=2, ensure_ascii=False).encode() + b"\n"
    return bytes(out)
