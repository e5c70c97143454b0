"""Artifacts: the ``publish_artifact`` intrinsic (arguments, bounds, append, errors), the loop
journaling each chunk once across a crash, the index the status keeps, and what a reader
assembles from it."""

from __future__ import annotations

import base64
from typing import Any

import pytest

from tiny_harness.core.artifact_index import (
    ArtifactChunk,
    ArtifactPart,
    ArtifactRow,
    ChunkRef,
    apply_chunk,
    assemble,
    chunks_of,
    new_chunks,
    tool_files_chunk,
)
from tiny_harness.core.attachments import Attachment
from tiny_harness.core.compaction import FixedContextWindow
from tiny_harness.core.intrinsics import apply_intrinsic
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.plan import Plan, PlanStep
from tiny_harness.core.prompt import system_prompt
from tiny_harness.core.sizes import (
    ARTIFACT_BYTES,
    ARTIFACT_CHUNK_BYTES,
    KIB,
    MAX_ARTIFACT_CHUNKS,
    MAX_ARTIFACTS,
)
from tiny_harness.core.task import TaskExtension, TaskStatus
from tiny_harness.core.turn import ToolEntry, TurnInput, dump_journal, load_journal

from .conftest import HostCrashed, MemoryHost, ScriptedModel, calls, delegated, reply


def publish(task: TaskExtension, **args: Any) -> Any:
    return apply_intrinsic("publish_artifact", args, task, task_id="t1", step_id="t1/turn-0/x")


def with_chunk(task: TaskExtension, result: Any, turn: int = 0, entry: str = "tool-0-c") -> Any:
    ref = ChunkRef(turn=turn, entry=entry, size=result.artifact.size)
    rows = apply_chunk(task.artifacts, result.artifact, ref)
    return task.model_copy(update={"artifacts": rows})


def test_a_publish_is_a_chunk_for_the_journal_and_tells_the_model_what_it_published() -> None:
    result = publish(
        delegated(),
        name="report",
        description="The quarterly report",
        parts=[{"text": "# Q3"}, {"data": {"revenue": 12}}],
    )
    assert not result.is_error
    assert result.content == "Published artifact 'report' (2 part(s), 18 bytes)."
    chunk = result.artifact
    assert chunk.name == "report"
    assert chunk.description == "The quarterly report"
    assert chunk.parts == (ArtifactPart(text="# Q3"), ArtifactPart(data={"revenue": 12}))
    assert (chunk.append, chunk.size) == (False, 18)


def test_a_file_part_keeps_its_bytes_and_bad_base64_is_refused_naming_the_part() -> None:
    raw = bytes(range(256))
    ok = publish(
        delegated(),
        name="blob",
        parts=[{"file": {"name": "b.bin", "bytes": base64.b64encode(raw).decode()}}],
    )
    file = ok.artifact.parts[0].file
    assert (file.name, file.media_type, file.raw()) == ("b.bin", "application/octet-stream", raw)

    bad = publish(delegated(), name="blob", parts=[{"text": "a"}, {"file": {"bytes": "%%"}}])
    assert bad.is_error
    assert bad.artifact is None
    assert "parts[1].file.bytes is not base64" in bad.content


def test_append_adds_to_an_artifact_and_without_it_a_publish_replaces_it() -> None:
    task = with_chunk(delegated(), publish(delegated(), name="log", parts=[{"text": "one"}]))
    more = publish(task, name="log", parts=[{"text": "two"}], append=True)
    assert more.content == "Added 3 bytes to artifact 'log' (chunk 2, 6 bytes in all)."
    task = with_chunk(task, more, entry="tool-1-c")
    (row,) = task.artifacts
    assert [c.entry for c in row.chunks] == ["tool-0-c", "tool-1-c"]
    assert row.size == 6

    again = publish(task, name="log", parts=[{"text": "fresh"}])
    assert again.content.startswith("Replaced artifact 'log'")
    task = with_chunk(task, again, entry="tool-2-c")
    (row,) = task.artifacts
    assert [c.entry for c in row.chunks] == ["tool-2-c"]
    assert row.size == 5


def test_a_publish_past_a_bound_is_refused_naming_the_limit_and_nothing_is_published() -> None:
    big = "x" * (ARTIFACT_CHUNK_BYTES + 1)
    refused = publish(delegated(), name="big", parts=[{"text": big}])
    assert refused.is_error
    assert refused.artifact is None
    assert "too large for this installation" in refused.content
    assert "256 KiB per publish (ARTIFACT_CHUNK_BYTES)" in refused.content

    # An artifact grows chunk by chunk to its bound, then an append is refused.
    task = delegated()
    quarter = "y" * (ARTIFACT_BYTES // 4)
    for i in range(4):
        result = publish(task, name="long", parts=[{"text": quarter}], append=True)
        assert not result.is_error, result.content
        task = with_chunk(task, result, entry=f"tool-{i}-c")
    over = publish(task, name="long", parts=[{"text": "z"}], append=True)
    assert over.is_error
    assert "1.0 MiB per artifact (ARTIFACT_BYTES)" in over.content
    assert task.artifacts[0].size == ARTIFACT_BYTES


def test_an_artifact_has_a_bounded_number_of_chunks_and_a_task_of_artifacts() -> None:
    task = delegated()
    for i in range(MAX_ARTIFACT_CHUNKS):
        task = with_chunk(
            task, publish(task, name="n", parts=[{"text": "."}], append=True), 0, f"e{i}"
        )
    refused = publish(task, name="n", parts=[{"text": "."}], append=True)
    assert refused.is_error
    assert "(MAX_ARTIFACT_CHUNKS)" in refused.content

    task = delegated()
    for i in range(MAX_ARTIFACTS):
        task = with_chunk(task, publish(task, name=f"a{i}", parts=[{"text": "."}]), 0, f"e{i}")
    refused = publish(task, name="one-more", parts=[{"text": "."}])
    assert refused.is_error
    assert "32 artifacts per task (MAX_ARTIFACTS)" in refused.content
    # Replacing one of them is no new artifact.
    assert not publish(task, name="a3", parts=[{"text": "again"}]).is_error


def test_the_index_is_bounded_and_holds_no_content() -> None:
    row = ArtifactRow(
        artifact_id="artifact-1",
        name="r",
        chunks=(ChunkRef(turn=2, entry="tool-0-c", size=3),),
        size=3,
    )
    status = TaskStatus(artifacts=(row,)).model_dump(mode="json", by_alias=True)
    assert status["artifacts"] == [
        {
            "artifactId": "artifact-1",
            "name": "r",
            "description": "",
            "chunks": [{"turn": 2, "entry": "tool-0-c", "size": 3}],
            "size": 3,
        }
    ]
    with pytest.raises(ValueError, match="at most 32 items"):
        TaskStatus(artifacts=(row,) * (MAX_ARTIFACTS + 1))


def test_complete_step_names_its_artifact_only_if_it_exists() -> None:
    plan = Plan.create([PlanStep(name="write")])
    task = delegated(plan=plan)
    missing = apply_intrinsic(
        "complete_step",
        {"name": "write", "output": "done", "artifact": "report"},
        task,
        task_id="t1",
        step_id="s",
    )
    assert missing.is_error
    assert "there is no artifact named 'report'" in missing.content
    task = with_chunk(task, publish(task, name="report", parts=[{"text": "r"}]))
    done = apply_intrinsic(
        "complete_step",
        {"name": "write", "output": "done", "artifact": "report"},
        task,
        task_id="t1",
        step_id="s",
    )
    assert not done.is_error
    assert done.plan is not None
    assert done.plan.step("write").artifact == "report"


def test_new_chunks_are_what_a_reader_has_not_shown_with_a2a_append_and_last_chunk() -> None:
    a = ChunkRef(turn=1, entry="a", size=1)
    b = ChunkRef(turn=1, entry="b", size=1)
    c = ChunkRef(turn=2, entry="c", size=1)
    one = ArtifactRow(artifact_id="x", name="x", chunks=(a,), size=1)
    two = one.model_copy(update={"chunks": (a, b)})
    replaced = one.model_copy(update={"chunks": (c,)})
    assert [(p.ref, p.append, p.last) for p in new_chunks((), (two,))] == [
        (a, False, False),
        (b, True, True),
    ]
    assert [(p.ref, p.append, p.last) for p in new_chunks((one,), (two,))] == [(b, True, True)]
    assert [(p.ref, p.append, p.last) for p in new_chunks((two,), (replaced,))] == [
        (c, False, True)
    ]
    assert new_chunks((two,), (two,)) == []


def test_assemble_reads_the_chunks_in_order_and_shows_no_artifact_with_a_hole() -> None:
    entries = [
        ToolEntry(
            id=f"t1/turn-3/tool-{i}-c",
            call_id="c",
            name="publish_artifact",
            content="ok",
            artifact=ArtifactChunk(
                artifact_id="x",
                name="x",
                parts=(ArtifactPart(text=text),),
                append=i > 0,
                size=len(text),
            ),
        )
        for i, text in enumerate(["one", "two"])
    ]
    found = chunks_of(entries, 3)
    refs = tuple(ChunkRef(turn=3, entry=f"tool-{i}-c", size=3) for i in range(2))
    row = ArtifactRow(artifact_id="x", name="x", chunks=refs, size=6)
    assert assemble(row, found) == (ArtifactPart(text="one"), ArtifactPart(text="two"))
    holed = row.model_copy(update={"chunks": (*refs, ChunkRef(turn=4, entry="e", size=1))})
    assert assemble(holed, found) is None


# -- in the loop -----------------------------------------------------------------------------------


def _turn(journal: Any = (), task: TaskExtension | None = None, number: int = 0) -> TurnInput:
    return TurnInput(task_id="t1", turn=number, task=task or delegated(), journal=journal)


def _script() -> ScriptedModel:
    return ScriptedModel(
        calls(("publish_artifact", {"name": "report", "parts": [{"text": "part one"}]})),
        calls(
            (
                "publish_artifact",
                {"name": "report", "parts": [{"text": " and two"}], "append": True},
            )
        ),
        reply("Published."),
    )


async def test_the_loop_journals_each_publish_in_its_tool_entry_and_the_outcome_has_the_index() -> (
    None
):
    host = MemoryHost()
    host.send("Write the report.")
    outcome = await CoreLoop(_script(), FixedContextWindow(200_000)).run_turn(host, _turn())
    published = [e for e in host.journal if isinstance(e, ToolEntry) and e.artifact]
    assert [e.artifact.parts[0].text for e in published] == ["part one", " and two"]
    assert outcome.artifacts is not None
    (row,) = outcome.artifacts
    assert [c.entry for c in row.chunks] == ["tool-0-call-0", "tool-1-call-0"]
    assert row.size == len("part one and two")


async def test_a_turn_without_a_publish_leaves_the_index_alone() -> None:
    host = MemoryHost()
    host.send("Hi")
    outcome = await CoreLoop(ScriptedModel(reply("Hello")), FixedContextWindow(200_000)).run_turn(
        host, _turn()
    )
    assert outcome.artifacts is None


async def test_a_crashed_turn_publishes_each_chunk_once_when_it_resumes() -> None:
    model = _script()
    loop = CoreLoop(model, FixedContextWindow(200_000))
    first = MemoryHost(crash_after=4)  # drain, model-0, tool-0 (the first chunk), model-1 saved
    first.send("Write the report.")
    with pytest.raises(HostCrashed):
        await loop.run_turn(first, _turn())
    saved = load_journal(dump_journal(first.journal))
    assert sum(1 for e in saved if isinstance(e, ToolEntry) and e.artifact) == 1

    resumed = MemoryHost(journal=saved)
    resumed.inbox, resumed.acked = first.inbox, first.acked
    outcome = await loop.run_turn(resumed, _turn(journal=saved))
    chunks = [e for e in resumed.journal if isinstance(e, ToolEntry) and e.artifact]
    # The first chunk replayed from the journal, the second (its entry lost) published live.
    assert [c.artifact.parts[0].text for c in chunks if c.artifact] == ["part one", " and two"]
    assert len(model.requests) == 3  # model-0 and model-1 were replayed, not asked again
    assert outcome.artifacts is not None
    assert [c.entry for c in outcome.artifacts[0].chunks] == ["tool-0-call-0", "tool-1-call-0"]

    # Its end written, then run again over the status it wrote: the index is the same.
    again = MemoryHost(journal=resumed.journal)
    again.inbox, again.acked = first.inbox, first.acked
    status_task = delegated().model_copy(update={"artifacts": outcome.artifacts})
    replayed = await loop.run_turn(again, _turn(journal=resumed.journal, task=status_task))
    assert replayed.artifacts == outcome.artifacts


def test_a_kib_sized_chunk_reads_in_kib() -> None:
    result = publish(delegated(), name="k", parts=[{"text": "k" * (3 * KIB)}])
    assert "3 KiB" in result.content


def test_the_system_prompt_names_the_artifacts_without_their_content() -> None:
    task = with_chunk(delegated(), publish(delegated(), name="report", parts=[{"text": "SECRET"}]))
    prompt = system_prompt(task, task_id="t1")
    assert "Artifacts published (publish_artifact adds to one with append: true):" in prompt
    assert "- report: 6 bytes in 1 chunk(s)" in prompt
    assert "SECRET" not in prompt
    assert "Artifacts published" not in system_prompt(delegated(), task_id="t1")


async def test_a_turn_replayed_over_the_index_its_end_wrote_leaves_that_index_as_it_was() -> None:
    """Append, replace, append in one turn: replayed over the status its end wrote (a crash
    just after it), the index is the one written, not the chunks applied a second time."""
    model = ScriptedModel(
        calls(("publish_artifact", {"name": "log", "parts": [{"text": "a"}], "append": True})),
        calls(("publish_artifact", {"name": "log", "parts": [{"text": "b"}]})),
        calls(("publish_artifact", {"name": "log", "parts": [{"text": "c"}], "append": True})),
        reply("Logged."),
    )
    loop = CoreLoop(model, FixedContextWindow(200_000))
    earlier = ArtifactRow(
        artifact_id="artifact-x",
        name="log",
        chunks=(ChunkRef(turn=0, entry="tool-0-old", size=3),),
        size=3,
    )
    before = delegated(artifacts=(earlier,))
    host = MemoryHost()
    host.send("Log it.")
    first = await loop.run_turn(host, _turn(task=before, number=1))
    assert first.artifacts is not None
    assert [c.entry for c in first.artifacts[0].chunks] == ["tool-1-call-0", "tool-2-call-0"]

    again = MemoryHost(journal=host.journal)
    again.inbox, again.acked = host.inbox, host.acked
    written = before.model_copy(update={"artifacts": first.artifacts})
    replayed = await loop.run_turn(again, _turn(journal=host.journal, task=written, number=1))
    assert replayed.artifacts == first.artifacts
    assert len(model.requests) == 4  # the replay asked the model nothing


# -- a tool's files --------------------------------------------------------------------------


def test_the_files_a_tool_returns_are_one_artifact_named_for_the_call() -> None:
    png = Attachment(media_type="image/png", name="image-1.png", data="iVBORw0KGgo=")

    chunk, said = tool_files_chunk((), "charts__plot", "call_7", [png])

    assert chunk is not None
    assert (chunk.name, chunk.append, len(chunk.parts)) == ("charts__plot-call_7", False, 1)
    assert chunk.parts[0].file is not None
    assert chunk.parts[0].file.raw() == b"\x89PNG\r\n\x1a\n"
    assert said == "[Kept as the artifact 'charts__plot-call_7': image-1.png (image/png, 8 B).]"


def test_files_past_a_bound_are_not_kept_and_the_model_is_told_which() -> None:
    huge = Attachment(
        media_type="application/pdf",
        name="scan.pdf",
        data=base64.b64encode(b"x" * ARTIFACT_CHUNK_BYTES).decode(),
    )

    chunk, said = tool_files_chunk((), "docs__scan", "call_8", [huge])

    assert chunk is None
    assert said.startswith("[The files the tool returned (scan.pdf (application/pdf, 256.0 KiB))")
    assert "too large for this installation" in said
