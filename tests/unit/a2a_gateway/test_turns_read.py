"""The turn records a send's wait reads (``Answers.answered``, ``.fate``): only the turns
that can have taken its message, from the one the task showed when it was written, so an open
send costs the same whatever the length of the conversation before it. Against a stand-in API
server that applies label selectors, through the real client and the real store."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.unit.kube.fake_api import FakeCollection, serving
from tiny_harness.a2a_gateway.namespace_feed import NamespaceFeed
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.tally import QuotaTally
from tiny_harness.core.history import ENTRIES, NoticeEntry, RecordEntry
from tiny_harness.core.reply_ids import refusal_id
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.turn import DrainEntry, InboundMessage
from tiny_harness.kube.journal import TurnRecords, record_name
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import KIND, TASK_LABEL, TURN_LABEL, TURN_PLURAL
from tiny_harness.kube.watching import Synced, WatchEvent

NS = "team"
UID = "uid-release-0001"
MID = "m-1"


def task(turn: int) -> dict[str, Any]:
    return {
        "metadata": {"name": "release", "uid": UID, "resourceVersion": "900"},
        "spec": {"goal": "ship", "participants": [{"id": "alice", "role": "assignee"}]},
        "status": {"state": "TASK_STATE_INPUT_REQUIRED", "turn": turn},
    }


def drained(message_id: str) -> DrainEntry:
    return DrainEntry(
        id=f"drain-{message_id}",
        messages=(InboundMessage(id=message_id, sender="alice", content="hi"),),
    )


def record(
    collection: FakeCollection, turn: int, *entries: RecordEntry, owner: str = "release"
) -> None:
    name = record_name(owner, UID, turn)
    obj = collection.put(
        name,
        spec={
            "task": owner,
            "turn": turn,
            "chunk": 0,
            "entries": ENTRIES.dump_python(entries, mode="json"),
        },
    )
    obj["metadata"] |= {
        "labels": {TASK_LABEL: label_value(owner), TURN_LABEL: str(turn)},
        "ownerReferences": [{"kind": KIND, "name": owner, "uid": UID}],
    }


def conversation(turns: int) -> FakeCollection:
    """A conversation of ``turns`` turns, each of which drained a message of its own."""
    collection = FakeCollection(NS, TURN_PLURAL, selects=True)
    for turn in range(1, turns + 1):
        record(collection, turn, drained(f"earlier-{turn}"))
    return collection


@pytest.fixture
def turns() -> FakeCollection:
    return conversation(300)


@pytest.fixture
async def api(turns: FakeCollection) -> AsyncIterator[client.ApiClient]:
    async with serving(turns) as api:
        yield api


def store_of(api: client.ApiClient, obj: dict[str, Any]) -> KubeTaskStore:
    """The store, its feed having listed ``obj`` (the task as the index holds it)."""
    feed = NamespaceFeed(NS, QuotaTally(GatewaySettings(namespace=NS)), queue_bound=8)
    feed.hear_task(WatchEvent("ADDED", obj))
    feed.hear_task(Synced())
    feed.tally.messages.synced.set()
    return KubeTaskStore(api, NS, feed=feed)


async def test_records_of_some_turns_are_read_alone_and_only_the_tasks_own() -> None:
    collection = conversation(6)
    record(collection, 5, owner="other-task")
    async with serving(collection) as api:
        read = await TurnRecords(api, NS).for_task(task(6), turns=range(4, 7))
        none = await TurnRecords(api, NS).for_task(task(6), turns=())

    assert [(r.task, r.turn) for r in read] == [("release", 4), ("release", 5), ("release", 6)]
    assert none == []
    assert collection.selectors == [f"{TASK_LABEL}=release,{TURN_LABEL} in (4,5,6)"]


async def test_a_sends_wait_reads_the_turns_since_it_was_written_whatever_came_before(
    api: client.ApiClient, turns: FakeCollection
) -> None:
    # Written at turn 300 of 300; turn 301 gave it to the model, and has ended.
    record(turns, 301, drained(MID))
    store = store_of(api, task(301))

    answered = await store.answers.answered("release", MID, turn=301, running=False, since=300)

    assert answered
    assert turns.selectors == [f"{TASK_LABEL}=release,{TURN_LABEL} in (300,301)"]


async def test_a_quiet_tick_reads_up_to_the_turn_after_the_latest_where_a_notice_may_be(
    api: client.ApiClient, turns: FakeCollection
) -> None:
    # Refused outside a turn: the notice went to the latest turn's record (300), the one the
    # task showed when the message was written.
    reason = "refused: bob is a watcher and may not complete the task"
    record(turns, 300, drained("earlier-300"), NoticeEntry(id=refusal_id(MID), text=reason))
    store = store_of(api, task(300))

    fate = await store.answers.fate("release", MID, since=300)

    assert fate.answer is not None
    assert fate.answer.text == reason
    assert turns.selectors == [f"{TASK_LABEL}=release,{TURN_LABEL} in (300,301)"]


async def test_a_status_from_before_the_message_was_written_answers_nothing_and_reads_nothing(
    api: client.ApiClient, turns: FakeCollection
) -> None:
    store = store_of(api, task(300))

    assert not await store.answers.answered("release", MID, turn=299, running=False, since=300)
    assert turns.selectors == []


async def test_a_retried_message_is_asked_of_every_turn(
    api: client.ApiClient, turns: FakeCollection
) -> None:
    # A retry's first write was long ago: turn 3 took it.
    store = store_of(api, task(300))

    fate = await store.answers.fate("release", "earlier-3", since=None)

    assert fate.taken == 3
    assert turns.selectors == [f"{TASK_LABEL}=release"]
