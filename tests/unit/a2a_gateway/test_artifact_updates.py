"""A task's artifacts as A2A shows them: parts rendered by kind, a stream's updates for the
chunks it has not shown (append and last_chunk as A2A defines them), and a resume's whole
artifacts, so that no chunk is shown twice."""

from __future__ import annotations

import base64
from collections.abc import Collection

from a2a.types import TaskArtifactUpdateEvent

from tiny_harness.a2a_gateway.artifacts import ArtifactFollower, part_to_a2a, whole
from tiny_harness.a2a_gateway.rendering import artifact_rows, change_of
from tiny_harness.core.artifact_index import (
    ArtifactChunk,
    ArtifactFile,
    ArtifactPart,
    ArtifactRow,
    ChunkRef,
)

CHUNKS = {
    (1, "tool-0-a"): ArtifactChunk(
        artifact_id="x", name="log", parts=(ArtifactPart(text="one "),), size=4
    ),
    (2, "tool-0-b"): ArtifactChunk(
        artifact_id="x", name="log", parts=(ArtifactPart(text="two"),), append=True, size=3
    ),
}
A = ChunkRef(turn=1, entry="tool-0-a", size=4)
B = ChunkRef(turn=2, entry="tool-0-b", size=3)
FIRST = ArtifactRow(artifact_id="x", name="log", chunks=(A,), size=4)
BOTH = FIRST.model_copy(update={"chunks": (A, B), "size": 7})


class Records:
    def __init__(self) -> None:
        self.reads: list[set[int]] = []

    async def __call__(
        self, task_id: str, turns: Collection[int]
    ) -> dict[tuple[int, str], ArtifactChunk]:
        self.reads.append(set(turns))
        return {k: v for k, v in CHUNKS.items() if k[0] in turns}


def texts(events: list[TaskArtifactUpdateEvent]) -> list[tuple[str, bool, bool]]:
    return [("".join(p.text for p in e.artifact.parts), e.append, e.last_chunk) for e in events]


def test_parts_render_as_text_json_and_file_bytes() -> None:
    assert part_to_a2a(ArtifactPart(text="hi")).text == "hi"
    data = part_to_a2a(ArtifactPart(data={"n": 1}))
    assert data.data.struct_value["n"] == 1
    assert data.media_type == "application/json"
    raw = b"\x00\x01binary"
    file = part_to_a2a(
        ArtifactPart(
            file=ArtifactFile(
                name="b.bin", media_type="application/x-b", data=base64.b64encode(raw).decode()
            )
        )
    )
    assert (file.raw, file.filename, file.media_type) == (raw, "b.bin", "application/x-b")


def test_whole_artifacts_join_their_chunks_and_leave_out_one_with_a_hole() -> None:
    (artifact,) = whole((BOTH,), CHUNKS)
    assert (artifact.artifact_id, artifact.name) == ("x", "log")
    assert [p.text for p in artifact.parts] == ["one ", "two"]
    holed = BOTH.model_copy(update={"chunks": (A, ChunkRef(turn=9, entry="e", size=1))})
    assert whole((holed,), CHUNKS) == []


async def test_a_stream_tells_each_new_chunk_once_reading_only_its_turns() -> None:
    records = Records()
    follower = ArtifactFollower(records, "t", "ctx", ())
    assert texts(await follower.updates((FIRST,))) == [("one ", False, True)]
    assert texts(await follower.updates((BOTH,))) == [("two", True, True)]
    assert await follower.updates((BOTH,)) == []  # a change that published nothing
    assert records.reads == [{1}, {2}]


async def test_a_resume_sends_each_changed_artifact_whole_so_no_chunk_shows_twice() -> None:
    follower = ArtifactFollower(Records(), "t", "ctx", (FIRST,))
    (event,) = await follower.whole_updates((BOTH,))
    assert texts([event]) == [("one two", False, True)]
    assert (event.task_id, event.context_id) == ("t", "ctx")
    assert await follower.whole_updates((BOTH,)) == []


def test_a_change_carries_the_index_of_its_status() -> None:
    obj = {
        "metadata": {"name": "t", "resourceVersion": "7", "annotations": {}},
        "spec": {"goal": "g"},
        "status": {"artifacts": [BOTH.model_dump(mode="json", by_alias=True)], "turn": 2},
    }
    assert change_of(obj).artifacts == (BOTH,)
    assert artifact_rows([{"not": "a row"}]) == ()
