"""Artifacts, what a task's model publishes, kept as chunks in the journal and an index of them
in the status.

A model publishes an artifact with the ``publish_artifact`` intrinsic, in one call or in
several (``append``). Each call is one **chunk**: its parts are journaled once, in the call's
:class:`~tiny_harness.core.turn.ToolEntry` (``artifact``), and nowhere else. The task's status
keeps only an index (:class:`ArtifactRow`: the name, the size, and where each chunk is: its
turn and its entry), bounded by :mod:`~tiny_harness.core.sizes`, so that a task's object stays
small however much it publishes. A reader (GetTask, a stream, ``kubectl harness artifact``)
reads the index, then the chunks from the turns it names (:func:`assemble`).

Everything here is pure: the loop applies a chunk to the index (:func:`apply_chunk`) when its
entry is taken, live or replayed, and applying the same entry twice changes nothing, so a turn
resumed after a crash publishes each chunk once.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Final

from pydantic import Field, model_validator

from tiny_harness.core.attachments import Attachment
from tiny_harness.core.sizes import (
    ARTIFACT_BYTES,
    ARTIFACT_CHUNK_BYTES,
    MAX_ARTIFACT_CHUNKS,
    MAX_ARTIFACTS,
    TASK_ARTIFACT_BYTES,
    kib,
)
from tiny_harness.core.vocabulary import NAME_MAX, Model

#: The longest artifact name: short, since it is the artifact's handle everywhere.
ARTIFACT_NAME_MAX: Final = 128
#: The longest artifact description.
ARTIFACT_DESCRIPTION_MAX: Final = 1024


class ArtifactFile(Model):
    """A file part: its name, media type and content (base64, as A2A's JSON carries it)."""

    name: str = Field(default="", max_length=NAME_MAX, description="The file's name.")
    media_type: str = Field(
        default="application/octet-stream", max_length=NAME_MAX, description="Its media type."
    )
    data: str = Field(description="The file's bytes, base64-encoded.")

    def raw(self) -> bytes:
        return base64.b64decode(self.data)


class ArtifactPart(Model):
    """One part of an artifact: a text, a JSON object, or a file (exactly one of them)."""

    text: str | None = None
    data: dict[str, Any] | None = None
    file: ArtifactFile | None = None

    @model_validator(mode="after")
    def _one_kind(self) -> ArtifactPart:
        kinds = [k for k in ("text", "data", "file") if getattr(self, k) is not None]
        if len(kinds) != 1:
            raise ValueError("a part holds exactly one of text, data or file")
        return self

    @property
    def size(self) -> int:
        """What the part stores: its text in UTF-8, its data as compact JSON, its file as the
        base64 text it is kept as."""
        if self.text is not None:
            return len(self.text.encode())
        if self.data is not None:
            return len(json.dumps(self.data, ensure_ascii=False, separators=(",", ":")).encode())
        assert self.file is not None
        return len(self.file.data) + len(self.file.name) + len(self.file.media_type)


class ArtifactChunk(Model):
    """One publish, as its tool entry journals it: the artifact it goes to, and its parts."""

    artifact_id: str = Field(description="The artifact's id, the same for every chunk of it.")
    name: str = Field(min_length=1, max_length=ARTIFACT_NAME_MAX)
    description: str = Field(default="", max_length=ARTIFACT_DESCRIPTION_MAX)
    parts: tuple[ArtifactPart, ...] = Field(min_length=1)
    append: bool = Field(
        default=False, description="Added to the artifact's chunks; false: replaces them."
    )
    size: int = Field(ge=0, description="The parts' size in bytes (ArtifactPart.size).")


class ChunkRef(Model):
    """Where one chunk of an artifact is journaled: its turn, and its entry's id in that turn
    (``tool-<j>-<call id>``, the entry id without the task and turn prefix)."""

    turn: int = Field(ge=0, description="The turn whose record holds the chunk.")
    entry: str = Field(min_length=1, max_length=NAME_MAX, description="The entry, in its turn.")
    size: int = Field(ge=0, description="The chunk's size in bytes.")


class ArtifactRow(Model):
    """The status's index of one artifact: its name and size, and where its chunks are, in
    order (their contents are in the turn records, never in the status)."""

    artifact_id: str = Field(min_length=1, max_length=NAME_MAX, description="The A2A artifact id.")
    name: str = Field(min_length=1, max_length=ARTIFACT_NAME_MAX, description="Its name.")
    description: str = Field(default="", max_length=ARTIFACT_DESCRIPTION_MAX)
    chunks: tuple[ChunkRef, ...] = Field(
        default=(), max_length=MAX_ARTIFACT_CHUNKS, description="Its chunks, in order."
    )
    size: int = Field(default=0, ge=0, description="Its size in bytes, its chunks together.")


def artifact_id_for(name: str) -> str:
    """An artifact's id, from its name: the same name is the same artifact, in every turn."""
    return "artifact-" + hashlib.sha256(name.encode()).hexdigest()[:16]


def local_entry_id(entry_id: str) -> str:
    """An entry's id within its turn: ``t1/turn-3/tool-0-call_a`` is ``tool-0-call_a`` (a
    task's name holds no ``/``, so the third piece is the entry's own)."""
    pieces = entry_id.split("/", 2)
    return pieces[2] if len(pieces) == 3 else entry_id


def find(rows: Sequence[ArtifactRow], name: str) -> ArtifactRow | None:
    return next((r for r in rows if r.name == name), None)


def parse_parts(raw: Sequence[Mapping[str, Any]]) -> tuple[ArtifactPart, ...]:
    """The model's parts (checked against the intrinsic's schema already) as artifact parts;
    a file whose bytes are not base64 is a ValueError naming the part."""
    parts = []
    for index, item in enumerate(raw):
        if "file" in item:
            file = dict(item["file"])
            data = str(file.get("bytes", ""))
            try:
                base64.b64decode(data, validate=True)
            except (binascii.Error, ValueError):
                raise ValueError(
                    f"parts[{index}].file.bytes is not base64; encode the file's bytes in "
                    "base64 (RFC 4648)"
                ) from None
            parts.append(
                ArtifactPart(
                    file=ArtifactFile(
                        name=str(file.get("name", "")),
                        media_type=str(file.get("media_type") or "application/octet-stream"),
                        data=data,
                    )
                )
            )
        elif "data" in item:
            parts.append(ArtifactPart(data=dict(item["data"])))
        else:
            parts.append(ArtifactPart(text=str(item["text"])))
    return tuple(parts)


def _too_large(what: str, limit: str) -> str:
    return (
        f"{what}, which is too large for this installation (no file store is configured): "
        f"the limit is {limit}. Nothing was published"
    )


def refuse_publish(rows: Sequence[ArtifactRow], name: str, size: int, append: bool) -> str | None:
    """Why a chunk of ``size`` bytes may not be published to ``name`` (None: it may): each
    bound of :mod:`~tiny_harness.core.sizes` it would pass, named, for the model to read."""
    if size > ARTIFACT_CHUNK_BYTES:
        return _too_large(
            f"one publish carries {kib(size)}",
            f"{kib(ARTIFACT_CHUNK_BYTES)} per publish (ARTIFACT_CHUNK_BYTES); publish the rest "
            "in more calls with append: true",
        )
    existing = find(rows, name)
    kept = existing.size if existing is not None and append else 0
    if kept + size > ARTIFACT_BYTES:
        return _too_large(
            f"artifact {name!r} would hold {kib(kept + size)}",
            f"{kib(ARTIFACT_BYTES)} per artifact (ARTIFACT_BYTES)",
        )
    if existing is not None and append and len(existing.chunks) >= MAX_ARTIFACT_CHUNKS:
        return _too_large(
            f"artifact {name!r} has {len(existing.chunks)} chunks already",
            f"{MAX_ARTIFACT_CHUNKS} chunks per artifact (MAX_ARTIFACT_CHUNKS); publish it again "
            "whole, in fewer, larger chunks",
        )
    if existing is None and len(rows) >= MAX_ARTIFACTS:
        return _too_large(
            f"this task has {len(rows)} artifacts already",
            f"{MAX_ARTIFACTS} artifacts per task (MAX_ARTIFACTS); add to or replace one of "
            f"them: {', '.join(r.name for r in rows)}",
        )
    total = sum(r.size for r in rows) - (existing.size if existing is not None else 0)
    if total + kept + size > TASK_ARTIFACT_BYTES:
        return _too_large(
            f"this task's artifacts would hold {kib(total + kept + size)}",
            f"{kib(TASK_ARTIFACT_BYTES)} per task (TASK_ARTIFACT_BYTES)",
        )
    return None


def apply_chunk(
    rows: Sequence[ArtifactRow], chunk: ArtifactChunk, ref: ChunkRef
) -> tuple[ArtifactRow, ...]:
    """The index with ``chunk`` (journaled at ``ref``) published: appended to its artifact's
    chunks, or replacing them (a new artifact goes last). Applying a chunk the index already
    holds changes nothing, so a replayed entry publishes nothing twice."""
    existing = find(rows, chunk.name)
    if existing is not None and ref in existing.chunks:
        return tuple(rows)
    if existing is not None and chunk.append:
        row = existing.model_copy(
            update={"chunks": (*existing.chunks, ref), "size": existing.size + ref.size}
        )
    else:
        row = ArtifactRow(
            artifact_id=chunk.artifact_id,
            name=chunk.name,
            description=chunk.description,
            chunks=(ref,),
            size=ref.size,
        )
    if chunk.description and existing is not None:
        row = row.model_copy(update={"description": chunk.description})
    if existing is None:
        return (*rows, row)
    return tuple(row if r.name == chunk.name else r for r in rows)


@dataclass(frozen=True)
class Published:
    """A chunk a reader has not shown yet: its artifact as the index has it now, the chunk,
    whether it adds to what was shown of the artifact (A2A's ``append``), and whether it is
    the artifact's last chunk as of now (``last_chunk``)."""

    row: ArtifactRow
    ref: ChunkRef
    append: bool
    last: bool


def new_chunks(before: Sequence[ArtifactRow], after: Sequence[ArtifactRow]) -> list[Published]:
    """The chunks ``after`` shows that ``before`` did not, in order: an artifact whose chunks
    no longer start with the ones shown was replaced, and is shown again from its first."""
    shown = {r.artifact_id: r.chunks for r in before}
    out: list[Published] = []
    for row in after:
        old = shown.get(row.artifact_id)
        if old is not None and row.chunks[: len(old)] == old:
            fresh, start = row.chunks[len(old) :], len(old)
        else:
            fresh, start = row.chunks, 0
        for offset, ref in enumerate(fresh):
            index = start + offset
            out.append(Published(row, ref, index > 0, index == len(row.chunks) - 1))
    return out


def chunks_of(entries: Iterable[object], turn: int) -> dict[tuple[int, str], ArtifactChunk]:
    """The chunks journaled among a turn's ``entries``, by where the index says they are."""
    found: dict[tuple[int, str], ArtifactChunk] = {}
    for entry in entries:
        chunk = getattr(entry, "artifact", None)
        if isinstance(chunk, ArtifactChunk):
            found[(turn, local_entry_id(str(getattr(entry, "id", ""))))] = chunk
    return found


def assemble(
    row: ArtifactRow, chunks: Mapping[tuple[int, str], ArtifactChunk]
) -> tuple[ArtifactPart, ...] | None:
    """The artifact's parts, its chunks' in order; None when a chunk is not among ``chunks``
    (its record is gone or unreadable), so no reader shows an artifact with a hole in it."""
    parts: list[ArtifactPart] = []
    for ref in row.chunks:
        chunk = chunks.get((ref.turn, ref.entry))
        if chunk is None:
            return None
        parts.extend(chunk.parts)
    return tuple(parts)


def turns_of(rows: Iterable[ArtifactRow]) -> set[int]:
    """The turns whose records hold the chunks of ``rows``."""
    return {ref.turn for row in rows for ref in row.chunks}


def tool_files_chunk(
    rows: Sequence[ArtifactRow], tool: str, call_id: str, files: Sequence[Attachment]
) -> tuple[ArtifactChunk | None, str]:
    """The files a tool's result carried (an image, a binary resource), as one artifact named
    for the call, and the line the model reads of it: where it is kept, or why it is not (a
    bound of :func:`refuse_publish`: nothing is kept then, and nothing is retried)."""
    parts = tuple(
        ArtifactPart(file=ArtifactFile(name=f.name, media_type=f.media_type, data=f.data or ""))
        for f in files
        if f.data is not None
    )
    if not parts:
        return None, ""
    name = f"{tool}-{call_id}"[:ARTIFACT_NAME_MAX]
    size = sum(p.size for p in parts)
    listed = ", ".join(f.line().removeprefix("[file ").removesuffix("]") for f in files)
    refused = refuse_publish(rows, name, size, append=False)
    if refused is not None:
        return None, f"[The files the tool returned ({listed}) were not kept: {refused}.]"
    chunk = ArtifactChunk(
        artifact_id=artifact_id_for(name),
        name=name,
        description=f"What tool {tool} returned (call {call_id})",
        parts=parts,
        size=size,
    )
    return chunk, f"[Kept as the artifact {name!r}: {listed}.]"
