"""``kubectl harness artifact TASK NAME``: one of a task's artifacts, written to standard output.

The task's status indexes its artifacts (``status.artifacts``); their parts are in the turn
records the index names, and only those records are read. What is written is the artifact's
content as a program would want it piped: text parts as their text, a file part as its raw
bytes (so a single-file artifact is that file, byte for byte), a data part as its JSON: the
rendering :func:`~tiny_harness.core.artifact_bytes.content` gives every front end.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Sequence
from typing import Final

from tiny_harness.cli.kubectl_session import Session, status_of
from tiny_harness.core.artifact_bytes import content as content
from tiny_harness.core.artifacts import (
    ArtifactChunk,
    ArtifactPart,
    ArtifactRow,
    assemble,
    chunks_of,
    find,
)
from tiny_harness.core.errors import HarnessError

NAME: Final = "artifact"
HELP: Final = "write one of a task's artifacts to standard output"
DESCRIPTION: Final = (
    "Write a task's artifact (published by its agent with publish_artifact) to standard "
    "output: text parts as text, a file part as its raw bytes, a data part as JSON. "
    "'kubectl harness get TASK' lists the task's artifacts with their sizes."
)
EXAMPLES: Final = """
kubectl harness artifact hello-harness report
kubectl harness artifact hello-harness chart.png > chart.png
kubectl harness artifact hello-harness results | jq .
"""


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


def add_arguments(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("task", metavar="TASK", help="the task's name")
    parser.add_argument("name", metavar="NAME", help="the artifact's name")


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
    parts = (await read(session, args.task, args.name))[1]
    sys.stdout.buffer.write(content(parts))
    sys.stdout.buffer.flush()
    return 0
