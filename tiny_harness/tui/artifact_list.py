"""A task's artifacts as the TUI lists and saves them: a pure module.

GetTask gives a task's artifacts whole (``Task.artifacts``); a stream gives their chunks as
``TaskArtifactUpdateEvent``s, each ``append`` (added to the artifact's parts) or not (the
artifact replaced, or new). :func:`fold` applies one update to the artifacts shown, so the
list holds each artifact whole, its chunks joined in order; which updates are applied (each
chunk once, though two streams of the task send it) is the view's question
(:meth:`~tiny_harness.tui.view.TaskView.take`).

Saving writes the artifact's content as ``kubectl harness artifact`` writes it
(:func:`~tiny_harness.core.artifact_bytes.content`: text as text, a single file part as its
bytes, data as JSON; a data part's keys in the order A2A carries them, as a protobuf map keeps
none), to a name that says what it holds: the file's own name for an artifact
that is one file, else the artifact's name with ``.json`` (data only) or ``.txt``.
"""

from __future__ import annotations

import base64
import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any, Final

from a2a.types import Artifact, Part, TaskArtifactUpdateEvent

from tiny_harness.core.artifact_bytes import content
from tiny_harness.core.artifact_index import ArtifactFile, ArtifactPart
from tiny_harness.core.sizes import kib
from tiny_harness.core.status_ext import metadata_dict

#: What may not be in a file name the TUI proposes (a name from the model is not a path).
_UNSAFE: Final = re.compile(r"[^\w.+@-]+")


def fold(shown: Sequence[Artifact], update: TaskArtifactUpdateEvent) -> tuple[Artifact, ...]:
    """``shown`` with ``update`` applied: its parts added to the artifact of the same id
    (``append``), or the artifact replaced in its place; an artifact not shown yet goes last."""
    out = list(shown)
    index = next(
        (i for i, a in enumerate(out) if a.artifact_id == update.artifact.artifact_id), None
    )
    artifact = Artifact()
    if update.append and index is not None:
        artifact.CopyFrom(out[index])
        artifact.parts.extend(update.artifact.parts)
        # A later chunk may say the artifact anew (a description given with it).
        if update.artifact.description:
            artifact.description = update.artifact.description
    else:
        artifact.CopyFrom(update.artifact)
    if index is None:
        out.append(artifact)
    else:
        out[index] = artifact
    return tuple(out)


def parts_of(artifact: Artifact) -> tuple[ArtifactPart, ...]:
    """The artifact's A2A parts as the harness's own (the gateway made them from those)."""
    out: list[ArtifactPart] = []
    for part in artifact.parts:
        kind = part.WhichOneof("content")
        if kind == "text":
            out.append(ArtifactPart(text=part.text))
        elif kind == "data":
            value = part.data
            out.append(
                ArtifactPart(
                    data=_whole(metadata_dict(value.struct_value))
                    if value.HasField("struct_value")
                    else {}
                )
            )
        elif kind == "raw":
            out.append(ArtifactPart(file=_file(part)))
    return tuple(out)


def _whole(value: Any) -> Any:
    """JSON as the model published it: protobuf carries every number as a float, so ``3``
    came back ``3.0``; a whole number is written as one (as ``kubectl harness`` writes it)."""
    if isinstance(value, float) and value.is_integer():
        return int(value)
    if isinstance(value, dict):
        return {k: _whole(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_whole(v) for v in value]
    return value


def _file(part: Part) -> ArtifactFile:
    return ArtifactFile.model_construct(
        name=part.filename,
        media_type=part.media_type or "application/octet-stream",
        data=base64.b64encode(part.raw).decode(),
    )


def content_of(artifact: Artifact) -> bytes:
    """What saving ``artifact`` writes."""
    return content(parts_of(artifact))


def row_text(artifact: Artifact) -> str:
    """The artifact as listed: ``report · 24 KiB · The quarterly report`` (the size is what
    saving it writes)."""
    parts = [artifact.name or artifact.artifact_id, kib(len(content_of(artifact)))]
    if artifact.description:
        parts.append(artifact.description)
    return " · ".join(parts)


def save_name(artifact: Artifact) -> str:
    """The file name a save proposes: the name of the one file the artifact is, else its own
    name with ``.json`` when it is data only, or ``.txt``, unless it ends with a suffix."""
    parts = list(artifact.parts)
    if len(parts) == 1 and parts[0].HasField("raw") and safe(parts[0].filename):
        return safe(parts[0].filename)
    name = safe(artifact.name) or "artifact"
    if Path(name).suffix:
        return name
    data_only = bool(parts) and all(p.HasField("data") for p in parts)
    return f"{name}.json" if data_only else f"{name}.txt"


def safe(name: str) -> str:
    """``name`` as a plain file name: no directories, nothing a shell would trip on."""
    return _UNSAFE.sub("_", Path(name).name).strip("._")


def written(path: Path, data: bytes, *, overwrite: bool) -> Path:
    """Write ``data`` to ``path`` (``~`` expanded, relative to the current directory), never
    over an existing file unless ``overwrite``: :class:`FileExistsError` then. Gives the
    absolute path written."""
    target = path.expanduser().absolute()
    with target.open("wb" if overwrite else "xb") as out:
        out.write(data)
    return target
