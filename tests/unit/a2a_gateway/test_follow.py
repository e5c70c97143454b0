"""The one stream that follows a task (``a2a_gateway/follow.py``), every way it ends, with no
network: the namespace feed (its index and fan-out) heard in memory, as its watch would tell
it, and the follow read as a stream's client reads it."""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncIterator, Collection
from typing import Any

import pytest
from a2a.types import TaskArtifactUpdateEvent, TaskStatusUpdateEvent

from tests.unit.a2a_gateway.fakes import NS, RUNNER, Namespace, spec
from tiny_harness.a2a_gateway.artifacts import ArtifactFollower
from tiny_harness.a2a_gateway.follow import Start, follow
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.stream import StreamCut, TaskStreams, VisibleChange
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.core.artifact_index import ArtifactChunk, ArtifactPart
from tiny_harness.core.reason_codes import ReasonCode, reason_of
from tiny_harness.core.settings import GatewaySettings

PARKED = {"state": "TASK_STATE_INPUT_REQUIRED", "subState": "awaiting-next-message", "turn": 1}
RUNNING = {"state": "TASK_STATE_WORKING", "turn": 2, "runner": RUNNER}


def namespace(bound: int = 16) -> tuple[Namespace, TaskStreams]:
    feed = NamespaceFeed(NS, QuotaTally(GatewaySettings(namespace=NS)), queue_bound=bound)
    # The API client is only for a resume's history, which no follow reads.
    return Namespace(feed), TaskStreams(feed, None)


def start(ns: Namespace, streams: TaskStreams, task: str = "t") -> Start:
    """A follow from the task as it is: subscribed before the read, as every method does."""
    subscription = streams.follow(task)
    return Start(subscription, int(ns.objects[task]["metadata"]["resourceVersion"]))


async def read(events: AsyncIterator[Any]) -> list[Any]:
    out: list[Any] = []
    async with asyncio.timeout(5):
        async for event in events:
            out.append(event)
    return out


async def test_it_ends_on_the_change_that_ends_the_task_and_sends_that_change_last() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    begun = start(ns, streams)
    ns.change("t", **RUNNING)
    ns.change("t", **{**RUNNING, "runner": {**RUNNER, "renewTime": "2026-12-01T00:00:20Z"}})
    ns.change("t", state="TASK_STATE_COMPLETED", message="Done.")
    ns.change("t", state="TASK_STATE_COMPLETED", message="A change after the end.")

    events = await read(follow(streams, begun))

    assert len(events) == 2  # the renewal is no change a participant sees
    assert events[-1].status.message.parts[0].text == "Done."


async def test_it_ends_quietly_when_its_task_is_deleted_after_what_was_queued() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    begun = start(ns, streams)
    ns.change("t", **RUNNING)
    ns.delete("t")

    events = await read(follow(streams, begun))

    assert len(events) == 1


async def test_it_ends_quietly_at_its_lifetime() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    until = asyncio.get_running_loop().time() + 0.02

    assert await read(follow(streams, start(ns, streams), until=until)) == []


async def test_a_reader_behind_is_cut_with_its_code_and_the_last_version_it_read() -> None:
    ns, streams = namespace(bound=1)
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    begun = start(ns, streams)
    ns.change("t", **RUNNING)
    shown = int(ns.objects["t"]["metadata"]["resourceVersion"])
    ns.change("t", **PARKED, message="unread")

    events = follow(streams, begun)
    first = await anext(events)
    with pytest.raises(StreamCut) as cut:
        await anext(events)

    assert isinstance(first, TaskStatusUpdateEvent)
    assert reason_of(cut.value) is ReasonCode.STREAM_BEHIND
    assert cut.value.data is not None
    assert cut.value.data["last_event_id"] == str(shown)
    assert f"Last-Event-ID: {shown}" in cut.value.message


class Answered:
    """An ending that ends the follow on a status message with id ``answer``, and at a quiet
    tick on ``note`` when it has one."""

    first_tick = 0.01
    tick_cap = 0.02

    def __init__(self, answer: str = "", note: TaskStatusUpdateEvent | None = None) -> None:
        self.answer = answer
        self.note = note
        self.ticks = 0
        self.three_ticks = asyncio.Event()

    async def at_change(self, change: VisibleChange) -> bool:
        return change.event.status.message.message_id == self.answer

    async def at_quiet(self) -> TaskStatusUpdateEvent | None:
        self.ticks += 1
        if self.ticks == 3:
            self.three_ticks.set()
        return self.note


async def test_its_ending_ends_it_after_the_change_it_names() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    begun = start(ns, streams)
    ns.change("t", **RUNNING)
    ns.change("t", **PARKED, message="The reply.", messageId="cmd-m-1")
    ns.change("t", **RUNNING)

    events = await read(follow(streams, begun, ending=Answered("cmd-m-1")))

    assert [e.status.message.message_id for e in events][-1] == "cmd-m-1"
    assert len(events) == 2


async def test_a_quiet_tick_ends_it_on_the_note_its_ending_gives_sent_last() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    note = TaskStatusUpdateEvent(task_id="t")
    note.status.message.message_id = "waiting-m-1"
    quiet = Answered(note=None)

    ticking = follow(streams, start(ns, streams), ending=quiet)
    pending = asyncio.ensure_future(anext(ticking))
    await asyncio.wait_for(quiet.three_ticks.wait(), 5)
    assert not pending.done()  # ticks that find nothing: it follows on
    pending.cancel()
    with contextlib.suppress(asyncio.CancelledError):
        await pending
    events = await read(follow(streams, start(ns, streams), ending=Answered(note=note)))

    assert events == [note]


async def test_each_changes_new_artifact_chunks_come_before_it() -> None:
    ns, streams = namespace()
    ns.task("t", spec(("alice", "assignee")), **PARKED)
    row = {
        "artifactId": "a1",
        "name": "notes.md",
        "size": 2,
        "chunks": [{"turn": 2, "entry": "e1", "size": 2}],
    }
    asked: list[Collection[int]] = []

    async def chunks(task: str, turns: Collection[int]) -> dict[tuple[int, str], ArtifactChunk]:
        asked.append(sorted(turns))
        chunk = ArtifactChunk(
            artifact_id="a1", name="notes.md", parts=(ArtifactPart(text="hi"),), size=2
        )
        return {(2, "e1"): chunk}

    begun = start(ns, streams)
    artifacts = ArtifactFollower(chunks, "t", "t", ())
    ns.change("t", **{**PARKED, "turn": 2}, artifacts=[row])
    ns.change("t", state="TASK_STATE_COMPLETED")

    events = await read(follow(streams, begun, artifacts=artifacts))

    assert [type(e) for e in events] == [
        TaskArtifactUpdateEvent,
        TaskStatusUpdateEvent,
        TaskStatusUpdateEvent,
    ]
    assert asked == [[2]]
