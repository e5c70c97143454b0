"""A task's artifacts in the TUI, as pure folds: an update appended to its artifact or
replacing it, each chunk taken once though two streams of the task send it (held until the
status update after it, and dropped when that update is old news), a task's artifacts whole
from a read; and what saving one writes, and under which name it proposes to."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from a2a.types import StreamResponse

from tests.unit.tui.approval_tasks import status_update, waiting
from tests.unit.tui.artifact_events import (
    PNG,
    artifact,
    chunk,
    data_part,
    png_part,
    text_part,
)
from tiny_harness.core.artifact_bytes import content
from tiny_harness.core.artifact_index import ArtifactPart
from tiny_harness.tui.artifact_list import (
    content_of,
    fold,
    parts_of,
    row_text,
    safe,
    save_name,
    written,
)
from tiny_harness.tui.view import TaskView


def names_and_texts(view: TaskView) -> list[tuple[str, list[str]]]:
    return [(a.name, [p.text for p in a.parts]) for a in view.artifacts]


def test_an_appended_chunk_adds_to_its_artifact_and_one_not_appended_replaces_it() -> None:
    shown = fold((), chunk("report", text_part("one")).artifact_update)
    shown = fold(shown, chunk("chart", png_part()).artifact_update)
    shown = fold(shown, chunk("report", text_part("two"), append=True).artifact_update)
    assert [(a.name, len(a.parts)) for a in shown] == [("report", 2), ("chart", 1)]
    assert [p.text for p in shown[0].parts] == ["one", "two"]
    # Published again whole: replaced where it is, not added.
    shown = fold(shown, chunk("report", text_part("anew")).artifact_update)
    assert next((a.name, [p.text for p in a.parts]) for a in shown) == ("report", ["anew"])
    assert [a.name for a in shown] == ["report", "chart"]
    # An append to an artifact not shown yet shows what it has.
    shown = fold(shown, chunk("notes", text_part("n"), append=True).artifact_update)
    assert [a.name for a in shown] == ["report", "chart", "notes"]


def test_the_update_folded_is_not_changed_by_later_appends() -> None:
    first = chunk("report", text_part("one")).artifact_update
    shown = fold((), first)
    fold(shown, chunk("report", text_part("two"), append=True).artifact_update)
    assert [p.text for p in shown[0].parts] == ["one"]
    assert [p.text for p in first.artifact.parts] == ["one"]


def test_chunks_wait_for_their_status_update_and_show_once_from_two_streams() -> None:
    view = TaskView.of(waiting(version=10), "alice")
    one = chunk("report", text_part("one"), last=False)
    two = chunk("report", text_part("two"), append=True)

    view.take(one, "follow")
    assert view.artifacts == ()  # held until the change it belongs to
    view.take(status_update(11), "follow")
    assert names_and_texts(view) == [("report", ["one"])]

    # A send's stream brings the same chunk and change: old news, nothing added.
    view.take(one, "send")
    view.take(status_update(11), "send")
    assert names_and_texts(view) == [("report", ["one"])]

    # The next change reaches the send's stream first; the followed one's copy is dropped.
    view.take(two, "send")
    view.take(status_update(12), "send")
    view.take(two, "follow")
    view.take(status_update(12), "follow")
    assert names_and_texts(view) == [("report", ["one", "two"])]


def test_a_task_read_gives_the_artifacts_whole_and_an_older_one_does_not() -> None:
    view = TaskView("trip", "alice")
    task = waiting(version=12)
    task.artifacts.append(artifact("report", text_part("one"), text_part("two")))
    view.take_task(task)
    assert names_and_texts(view) == [("report", ["one", "two"])]

    older = waiting(version=11)
    older.artifacts.append(artifact("report", text_part("one")))
    view.take_task(older)
    assert names_and_texts(view) == [("report", ["one", "two"])]

    # A send's opening task carries none (nor its history): what the view has stays.
    view.take_task(waiting(version=12))
    assert names_and_texts(view) == [("report", ["one", "two"])]

    # A stream's opening task drops what that stream held before it.
    view.take(chunk("stale", text_part("x")), "follow")
    newer = waiting(version=13)
    newer.artifacts.append(artifact("report", text_part("three")))
    view.take(StreamResponse(task=newer), "follow")
    view.take(status_update(14), "follow")
    assert names_and_texts(view) == [("report", ["three"])]


def test_a_stream_that_ends_among_its_chunks_drops_them() -> None:
    view = TaskView.of(waiting(version=10), "alice")
    view.take(chunk("report", text_part("one")), "follow")
    view.ended("follow")
    view.take(status_update(11), "follow")
    assert view.artifacts == ()
    # The resumed stream sends what changed since the version the view has, whole.
    view.take(chunk("report", text_part("one"), text_part("two")), "follow")
    view.take(status_update(12), "follow")
    assert names_and_texts(view) == [("report", ["one", "two"])]


def test_another_tasks_chunks_are_not_taken() -> None:
    view = TaskView.of(waiting(version=10), "alice")
    view.take(chunk("report", text_part("one"), task_id="other"), "follow")
    view.take(status_update(11), "follow")
    assert view.artifacts == ()


def test_saving_writes_what_kubectl_writes() -> None:
    report = artifact("report", text_part("rows:"), data_part({"n": 3}))
    assert content_of(report) == b'rows:\n{\n  "n": 3\n}\n'
    assert content_of(report) == content((ArtifactPart(text="rows:"), ArtifactPart(data={"n": 3})))
    # Whole numbers stay whole (protobuf carries every number as a float); the keys come in
    # the order A2A carries them, a protobuf map keeping none.
    nested = artifact("results", data_part({"n": 3, "x": [1, 2.5], "y": {"z": 0}}))
    assert json.loads(content_of(nested)) == {"n": 3, "x": [1, 2.5], "y": {"z": 0}}
    assert b"3.0" not in content_of(nested)
    chart = artifact("chart", png_part())
    assert content_of(chart) == PNG
    file = parts_of(chart)[0].file
    assert file is not None
    assert (file.name, file.media_type, file.raw()) == ("chart.png", "image/png", PNG)


def test_the_name_a_save_proposes() -> None:
    assert save_name(artifact("chart", png_part("q3 chart.png"))) == "q3_chart.png"
    assert save_name(artifact("report", text_part("x"))) == "report.txt"
    assert save_name(artifact("results", data_part({"n": 1}))) == "results.json"
    assert save_name(artifact("notes.md", text_part("x"))) == "notes.md"
    assert save_name(artifact("mixed", text_part("x"), data_part({}))) == "mixed.txt"
    # A name from the model is never a path out of the current directory.
    assert save_name(artifact("../../etc/passwd", text_part("x"))) == "passwd.txt"
    assert save_name(artifact("x", png_part("/etc/cron.d/job.png"))) == "job.png"
    assert safe("..") == ""
    assert save_name(artifact("..", text_part("x"))) == "artifact.txt"


def test_the_artifact_as_listed() -> None:
    report = artifact("report", text_part("x" * 3000), description="The quarterly report")
    assert row_text(report) == "report · 3 KiB · The quarterly report"
    assert row_text(artifact("chart", png_part())) == f"chart · {len(PNG)} bytes"


def test_a_save_never_writes_over_a_file_unasked(tmp_path: Path) -> None:
    target = tmp_path / "report.txt"
    assert written(target, b"one", overwrite=False) == target
    with pytest.raises(FileExistsError):
        written(target, b"two", overwrite=False)
    assert target.read_bytes() == b"one"
    written(target, b"two", overwrite=True)
    assert target.read_bytes() == b"two"
