"""The versioned task store (``a2a_gateway/store.py``) and its parts: reads scoped to the caller
and made once, the writes a participant may make (``writes.py``) and those refused with their
code, a sub-task's parent (``parents.py``), the turns a wait asks of the journal
(``answers.py``) and a list's pages (``listing.py``). Over a namespace held in memory."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import pytest
from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.types import ListTasksRequest, Task
from a2a.types import TaskState as A2AState
from a2a.utils.errors import InvalidParamsError, InvalidRequestError, UnsupportedOperationError

from tests.unit.a2a_gateway.fakes import RUNNER, as_, gateway, spec
from tiny_harness.a2a_gateway.answers import Answers
from tiny_harness.a2a_gateway.rendering import render_task
from tiny_harness.core.reason_codes import ReasonCode, reason_of
from tiny_harness.core.task import Participant, Role, TaskLink, TaskSpec
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import (
    CONTEXT_ID_ANNOTATION,
    FIRST_MESSAGE_ANNOTATION,
    PARENT_LABEL,
    SENDER_LABEL,
)
from tiny_harness.kube.participant_view import ParticipantView

PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}
TEAM = spec(("alice", "assignee"), ("bob", "watcher"))


def sub_task_of(parent: str) -> TaskSpec:
    return TaskSpec(
        goal="a part of it",
        participants=(Participant(id="alice", role=Role.ASSIGNEE),),
        parent=TaskLink(task_id=parent),
    )


async def test_a_read_is_the_callers_alone(monkeypatch: pytest.MonkeyPatch) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, **PARKED)
        gw.namespace.put({"metadata": {"name": "unreadable"}, "spec": {"participants": 3}})
        mine = await gw.store.read("t", as_("bob"))
        stranger = await gw.store.read("t", as_("mallory"))
        unreadable = await gw.store.read("unreadable", as_("alice"))

    assert mine is not None
    assert (mine.name, mine.turn, mine.running) == ("t", 1, False)
    assert stranger is None
    assert unreadable is None  # a spec that does not read shows the task to no one


async def test_a_write_other_than_a_message_or_a_cancel_is_refused_with_its_code(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        obj = gw.namespace.task("t", TEAM, **PARKED)
        task = render_task(obj)
        version = TaskVersion(int(obj["metadata"]["resourceVersion"]))
        completed = Task()
        completed.CopyFrom(task)
        completed.status.state = A2AState.TASK_STATE_COMPLETED
        with pytest.raises(UnsupportedOperationError) as state:
            await gw.store.save(
                completed, event=None, prev=task, prev_version=version, context=as_("alice")
            )
        with pytest.raises(UnsupportedOperationError) as delete:
            await gw.store.delete("t", as_("alice"))
        with pytest.raises(InvalidRequestError) as anonymous:
            await gw.store.save(
                completed, event=None, prev=task, prev_version=version, context=as_("")
            )

    assert reason_of(state.value) is reason_of(delete.value) is ReasonCode.NOT_OFFERED
    assert reason_of(anonymous.value) is ReasonCode.UNAUTHENTICATED
    assert gw.messages.stored == {}


async def test_a_cancel_request_of_an_ended_task_is_a_conflict_and_writes_nothing(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("t", TEAM, state="TASK_STATE_COMPLETED")
        with pytest.raises(ConcurrentTaskModificationError):
            await gw.store.writes.request_cancel("t", "alice")
        with pytest.raises(ConcurrentTaskModificationError):
            await gw.store.writes.request_cancel("gone", "alice")

    assert gw.messages.stored == {}


async def test_a_task_is_created_labelled_with_its_sender_and_a_name_taken_is_a_conflict(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("boss", spec(("alice", "reporter"), ("carol", "assignee")), **PARKED)
        await gw.store.writes.create("part", "ctx", sub_task_of("boss"), [], "alice")
        with pytest.raises(ConcurrentTaskModificationError):
            await gw.store.writes.create("part", "ctx", sub_task_of("boss"), [], "alice")

    (created,) = gw.tasks.created
    meta = created["metadata"]
    assert meta["labels"][SENDER_LABEL] == label_value("alice")
    # Made its parent's child by the one creation path: the owner is the parent task.
    assert gw.tasks.owners[0] is not None
    assert gw.tasks.owners[0]["metadata"]["name"] == "boss"
    assert meta["labels"][PARENT_LABEL] == "boss"
    assert meta["annotations"] == {CONTEXT_ID_ANNOTATION: "ctx"}
    assert FIRST_MESSAGE_ANNOTATION not in meta["annotations"]


@pytest.mark.parametrize(
    ("people", "code"),
    [
        (spec(("carol", "assignee")), ReasonCode.PARENT_NOT_FOUND),
        (spec(("carol", "assignee"), ("alice", "watcher")), ReasonCode.ROLE_REFUSED),
    ],
)
async def test_a_parent_the_sender_may_not_start_a_sub_task_of_is_refused_and_nothing_is_created(
    monkeypatch: pytest.MonkeyPatch, people: dict[str, Any], code: ReasonCode
) -> None:
    async with gateway(monkeypatch) as gw:
        gw.namespace.task("boss", people, **PARKED)
        with pytest.raises((InvalidParamsError, UnsupportedOperationError)) as refused:
            await gw.store.writes.create("part", "ctx", sub_task_of("boss"), [], "alice")
        with pytest.raises(InvalidParamsError) as missing:
            await gw.store.writes.create("part", "ctx", sub_task_of("nowhere"), [], "alice")

    assert reason_of(refused.value) is code
    assert reason_of(missing.value) is ReasonCode.PARENT_NOT_FOUND
    assert gw.tasks.created == []


class Records:
    """Turn records as the journal holds them: the turns each read asked for."""

    def __init__(self) -> None:
        self.asked: list[Collection[int] | None] = []

    async def for_task(
        self, task: dict[str, Any], turn: int | None = None, *, turns: Collection[int] | None = None
    ) -> list[Any]:
        self.asked.append(None if turns is None else list(turns))
        return []


async def test_a_wait_asks_the_journal_of_the_turns_that_can_have_taken_its_message() -> None:
    stored = {
        "metadata": {"name": "t", "resourceVersion": "1"},
        "spec": TEAM,
        "status": {"state": "TASK_STATE_WORKING", "turn": 7, "runner": RUNNER},
    }

    async def lookup(name: str) -> ParticipantView | None:
        return ParticipantView(stored) if name == "t" else None

    records = Records()
    answers = Answers(records, lookup)  # type: ignore[arg-type]

    await answers.answered("t", "m", turn=8, running=True, since=6)  # turns 6 to 8
    await answers.fate("t", "m", since=6)  # 6 to the latest (7) and the one after it
    await answers.fate("t", "m", since=None)  # a retry: every turn
    assert not await answers.answered("t", "m", turn=5, running=False, since=6)  # none read
    assert await answers.turn_stand("t") == (7, True)
    assert await answers.turn_stand("gone") is None
    assert await answers.records("gone") == []

    assert records.asked == [[6, 7, 8], [6, 7, 8], None]


async def test_a_list_is_newest_first_and_paged_by_its_own_token(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    async with gateway(monkeypatch) as gw:
        for n in range(3):
            obj = gw.namespace.task(f"t{n}", TEAM, **PARKED)
            obj["metadata"]["managedFields"] = [{"time": f"2026-12-0{n + 1}T00:00:00Z"}]
            gw.namespace.put(obj)
        first = await gw.store.list(ListTasksRequest(page_size=2), as_("alice"))
        second = await gw.store.list(
            ListTasksRequest(page_size=2, page_token=first.next_page_token), as_("alice")
        )

    assert [t.id for t in first.tasks] == ["t2", "t1"]
    assert [t.id for t in second.tasks] == ["t0"]
    assert second.next_page_token == ""
    assert first.total_size == second.total_size == 3
