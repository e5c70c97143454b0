"""Artifact updates and tasks with artifacts as the gateway streams them, for the TUI's unit
tests: the task ``trip`` publishing a text report in chunks and a chart."""

from __future__ import annotations

from typing import Any

from a2a.types import Artifact, Part, StreamResponse, TaskArtifactUpdateEvent

PNG = b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR chart"


def text_part(text: str) -> Part:
    return Part(text=text)


def data_part(value: dict[str, Any]) -> Part:
    part = Part(media_type="application/json")
    part.data.struct_value.update(value)
    return part


def png_part(name: str = "chart.png") -> Part:
    return Part(raw=PNG, media_type="image/png", filename=name)


def artifact(name: str, *parts: Part, description: str = "") -> Artifact:
    return Artifact(
        artifact_id=f"artifact-{name}", name=name, description=description, parts=list(parts)
    )


def chunk(
    name: str, *parts: Part, append: bool = False, last: bool = True, task_id: str = "trip"
) -> StreamResponse:
    return StreamResponse(
        artifact_update=TaskArtifactUpdateEvent(
            task_id=task_id,
            context_id=task_id,
            artifact=artifact(name, *parts),
            append=append,
            last_chunk=last,
        )
    )
