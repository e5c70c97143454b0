"""The task index (``a2a_gateway/task_index.py``): tasks by name and by participant, kept as
the watch tells them, a listing told as changes, and the reduced form readers get."""

from __future__ import annotations

from typing import Any

from tiny_harness.a2a_gateway.rendering import render_task, updated_at
from tiny_harness.a2a_gateway.task_index import TaskIndex, reduced


def task(name: str, version: int, *people: str, state: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {
        "metadata": {
            "name": name,
            "resourceVersion": str(version),
            "creationTimestamp": "2026-12-01T10:00:00Z",
            "managedFields": [
                {"manager": "a", "time": "2026-12-01T10:00:00Z", "fieldsV1": {"f:spec": {}}},
                {"manager": "b", "time": f"2026-12-01T10:00:{version:02d}Z"},
            ],
        },
        "spec": {"goal": "g", "participants": [{"id": p, "role": "assignee"} for p in people]},
    }
    if state:
        obj["status"] = {"state": state}
    return obj


def test_a_participant_finds_their_tasks_and_no_one_else_s() -> None:
    index = TaskIndex()
    index.put(task("t1", 1, "alice"))
    index.put(task("t2", 2, "alice", "bob"))
    index.put(task("t3", 3, "carol"))
    assert sorted(n for n, _ in index.summaries_of("alice")) == ["t1", "t2"]
    assert sorted(n for n, _ in index.summaries_of("bob")) == ["t2"]
    assert list(index.summaries_of("mallory")) == []


def test_a_change_of_participants_moves_the_task_between_them() -> None:
    index = TaskIndex()
    index.put(task("t", 1, "alice"))
    assert index.put(task("t", 2, "bob"))
    assert list(index.summaries_of("alice")) == []
    assert [n for n, _ in index.summaries_of("bob")] == ["t"]
    assert "alice" not in index.of


def test_the_same_version_again_is_no_change() -> None:
    index = TaskIndex()
    assert index.put(task("t", 1, "alice"))
    assert not index.put(task("t", 1, "alice"))


def test_a_listing_forgets_what_it_does_not_name() -> None:
    index = TaskIndex()
    index.put(task("kept", 1, "alice"))
    index.put(task("gone", 2, "alice"))
    index.relisting()
    assert not index.put(task("kept", 1, "alice"))
    gone = index.synced()
    assert [g["metadata"]["name"] for g in gone] == ["gone"]
    assert [n for n, _ in index.summaries_of("alice")] == ["kept"]


def test_the_reduced_form_renders_as_the_object_does() -> None:
    whole = task("t", 7, "alice", state="TASK_STATE_WORKING")
    slim = reduced(whole)
    assert "fieldsV1" not in str(slim)
    assert updated_at(slim) == updated_at(whole)
    assert render_task(slim) == render_task(whole)
    index = TaskIndex()
    index.put(whole)
    held = index.get("t")
    assert held is not None
    assert render_task(held) == render_task(whole)
    summary = index.summary("t")
    assert summary is not None
    assert summary.version == 7
    assert summary.updated_ns == render_task(whole).status.timestamp.ToNanoseconds()


def test_a_spec_that_does_not_read_is_no_one_s() -> None:
    index = TaskIndex()
    broken = task("t", 1, "alice")
    broken["spec"] = {"participants": "nobody"}
    index.put(broken)
    assert index.of == {}
    assert "t" in index
