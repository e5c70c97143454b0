"""``kubectl harness artifact TASK NAME``: one of a task's artifacts, written to standard output.

The task's status indexes its artifacts (``status.artifacts``); their parts are in the turn
records the index names, and only those records are read. What is written is the artifact's
content as a program would want it piped: text parts as their text, a file part as its raw
bytes (so a single-file artifact is that file, byte for byte), a data part as its JSON: the
rendering :func:`~tiny_harness.core.artifact_bytes.content` gives every front end.

Piped or redirected, the bytes go out as they are. On a terminal they are the model's text,
so they are shown as every other text is, literally (:func:`for_terminal`), and bytes that are
not text are not sent to the terminal at all: the error says to redirect them to a file.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence

from tiny_harness.cli import kubectl_render as render
from tiny_harness.cli.kubectl_session import Session, status_of
from tiny_harness.core.artifact_bytes import content as content
from tiny_harness.core.artifact_index import (
    ArtifactChunk,
    ArtifactPart,
    ArtifactRow,
    assemble,
    chunks_of,
    find,
)
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.literal import literal


class ArtifactNotFoundError(HarnessError):
    """The task has no artifact of that name: says which it has."""

    def __init__(self, task: str, name: str, rows: Sequence[ArtifactRow]) -> None:
        known = ", ".join(r.name for r in rows) if rows else "none yet"
        super().__init__(
            f"task {task!r} has no artifact named {name!r}; its artifacts: {known} "
            f"(kubectl harness get {task} lists them)"
        )


class ArtifactUnreadableError(HarnessError):
    """A chunk the index names is not in the task's records (gone or unreadable)."""


class BinaryArtifactError(HarnessError):
    """An artifact that is not text, asked for on a terminal: says how to save it."""

    def __init__(self, task: str, name: str, size: int) -> None:
        super().__init__(
            f"artifact {name!r} of task {task!r} is not text ({size} bytes) and is not written "
            f"to a terminal: redirect it to a file (kubectl harness artifact {task} {name} > FILE)"
        )


def for_terminal(data: bytes, task: str, name: str) -> str:
    """The artifact's content as a terminal shows it: its text, literally; bytes that are not
    UTF-8 text are refused (:class:`BinaryArtifactError`)."""
    try:
        return literal(data.decode("utf-8"))
    except UnicodeDecodeError:
        raise BinaryArtifactError(task, name, len(data)) from None


async def read(
    session: Session, task: str, name: str
) -> tuple[ArtifactRow, tuple[ArtifactPart, ...]]:
    """The artifact ``name`` of ``task`` as the participant may see it, whole."""
    obj = await session.visible(task)
    rows = status_of(obj).artifacts
    row = find(rows, name)
    if row is None:
        raise ArtifactNotFoundError(task, name, rows)
    turns = {ref.turn for ref in row.chunks}
    chunks: dict[tuple[int, str], ArtifactChunk] = {}
    for record in await session.records.for_task(obj, turns=turns):
        chunks.update(chunks_of(record.entries, record.turn))
    parts = assemble(row, chunks)
    if parts is None:
        raise ArtifactUnreadableError(
            f"artifact {name!r} of task {task!r} names a chunk its turn records do not hold "
            "(deleted, or unreadable: the operator's log names it)"
        )
    return row, parts


async def run(session: Session, args: argparse.Namespace, _: str | None) -> int:
    """``kubectl harness artifact TASK NAME``: the artifact's content on standard output."""
    data = content((await read(session, args.task, args.name))[1])
    if sys.stdout.isatty():
        render.out(for_terminal(data, args.task, args.name))
        return 0
    sys.stdout.buffer.write(data)
    sys.stdout.buffer.flush()
    return 0
