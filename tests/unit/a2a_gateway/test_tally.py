"""The quota tally, fed the events its watches would hear: counts by sender label and bytes
annotation alone (a message not measured yet at the most a message carries), a task live until
it ends, a listing swapped in whole, and the holds that make admission exact within a replica
(two sends at the boundary never both pass, a written object is counted once, what was not
written is let go)."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import pytest
from a2a.utils.errors import InternalError

from tiny_harness.a2a_gateway.quotas import Demand, Refused, Usage
from tiny_harness.a2a_gateway.tally import HOLD_SECONDS, Hold, QuotaTally
from tiny_harness.core.settings import GatewaySettings
from tiny_harness.core.sizes import MESSAGE_BYTES
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import BYTES_ANNOTATION, SENDER_LABEL
from tiny_harness.kube.watching import Relisted, Synced, WatchEvent, WatchType

Obj = dict[str, Any]
SETTINGS = GatewaySettings(
    namespace="team", max_messages_per_participant=2, max_live_tasks_per_participant=2
)


class Clock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def message(name: str, sender: str | None, size: int | None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name}
    if sender is not None:
        meta["labels"] = {SENDER_LABEL: label_value(sender)}
    if size is not None:
        meta["annotations"] = {BYTES_ANNOTATION: str(size)}
    return {"kind": "PartialObjectMetadata", "metadata": meta}


def task(name: str, sender: str | None, state: str | None = None) -> dict[str, Any]:
    obj: dict[str, Any] = {"metadata": {"name": name}, "spec": {"goal": "x"}}
    if sender is not None:
        obj["metadata"]["labels"] = {SENDER_LABEL: label_value(sender)}
    if state is not None:
        obj["status"] = {"state": state}
    return obj


def listed(tally: QuotaTally, *, messages: Sequence[Obj] = (), tasks: Sequence[Obj] = ()) -> None:
    """A first listing of both collections, as the watches would tell it."""
    for followed, objects in ((tally.messages, messages), (tally.tasks, tasks)):
        followed.hear(Relisted())
        for obj in objects:
            followed.hear(WatchEvent("ADDED", obj))
        followed.hear(Synced())


def event(kind: WatchType, obj: dict[str, Any]) -> WatchEvent:
    return WatchEvent(kind, obj)


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def tally(clock: Clock) -> QuotaTally:
    return QuotaTally(SETTINGS, clock=clock)


def test_messages_are_counted_by_their_sender_label_and_bytes_annotation(
    tally: QuotaTally,
) -> None:
    listed(
        tally,
        messages=[
            message("m1", "alice", 100),
            message("m2", "alice", 20),
            message("m3", "bob", 7),
            message("anonymous", None, 5),  # no sender label: the namespace's alone
        ],
    )

    assert tally.usage("alice") == (
        Usage(messages=2, message_bytes=120),
        Usage(messages=4, message_bytes=132),
    )
    assert tally.usage("carol")[0] == Usage()


def test_a_message_not_measured_yet_counts_as_the_most_a_message_carries_never_as_nothing(
    tally: QuotaTally,
) -> None:
    """Written as its participant (``kubectl harness send``), a message has no bytes annotation
    until the operator measures it: the tally errs high, then counts the measure."""
    listed(tally, messages=[message("sent", "alice", None)])

    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=MESSAGE_BYTES)

    tally.messages.hear(event("MODIFIED", message("sent", "alice", 12)))

    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=12)


def test_a_participant_id_that_is_no_label_value_is_counted_under_its_hash(
    tally: QuotaTally,
) -> None:
    account = "system:serviceaccount:team:alice"
    listed(tally, messages=[message("m1", account, 3)])

    assert label_value(account).startswith("h-")
    assert tally.usage(account)[0] == Usage(messages=1, message_bytes=3)
    assert tally.usage("system.serviceaccount.team.alice")[0] == Usage()


def test_a_task_is_live_until_it_ends_and_a_deletion_is_heard(tally: QuotaTally) -> None:
    listed(
        tally,
        tasks=[
            task("new", "alice"),  # no status yet: about to start
            task("parked", "alice", "TASK_STATE_INPUT_REQUIRED"),
            task("done", "alice", "TASK_STATE_COMPLETED"),
            task("failed", "alice", "TASK_STATE_FAILED"),
            task("child", None, "TASK_STATE_WORKING"),  # a sub-task the operator made
        ],
    )
    assert tally.usage("alice") == (Usage(live_tasks=2), Usage(live_tasks=3))

    tally.tasks.hear(event("MODIFIED", task("parked", "alice", "TASK_STATE_CANCELED")))
    tally.tasks.hear(event("DELETED", task("child", None, "TASK_STATE_WORKING")))

    assert tally.usage("alice") == (Usage(live_tasks=1), Usage(live_tasks=1))


def test_a_listing_is_swapped_in_whole_at_its_end(tally: QuotaTally) -> None:
    listed(tally, messages=[message("m1", "alice", 1), message("m2", "alice", 1)])

    tally.messages.hear(Relisted())
    tally.messages.hear(WatchEvent("ADDED", message("m2", "alice", 1)))
    during = tally.usage("alice")[0]
    tally.messages.hear(Synced())

    assert during == Usage(messages=2, message_bytes=2)  # never nothing while it is read
    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=1)  # m1 went meanwhile


def test_two_sends_at_the_boundary_in_one_replica_never_both_pass(tally: QuotaTally) -> None:
    listed(tally, messages=[message("m1", "alice", 1)])

    first = tally.admit("alice", Demand((1,)))
    with pytest.raises(Refused) as refused:
        tally.admit("alice", Demand((1,)))  # before the first is written or seen

    assert first is not None
    assert refused.value.status == 429
    assert "alice keeps 2 messages stored" in refused.value.error.message
    tally.admit("bob", Demand((1,)))  # someone else's room is their own


def test_a_written_message_is_counted_until_the_watch_delivers_it_and_never_twice(
    tally: QuotaTally,
) -> None:
    listed(tally)

    with tally.admit("alice", Demand((10,))) as hold:
        hold.wrote_message("m1")
    held = tally.usage("alice")[0]
    tally.messages.hear(event("ADDED", message("m1", "alice", 10)))

    assert held == Usage(messages=1, message_bytes=10)
    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=10)


def test_a_message_the_watch_delivered_before_the_write_returned_is_counted_once(
    tally: QuotaTally,
) -> None:
    listed(tally)

    with tally.admit("alice", Demand((10,))) as hold:
        tally.messages.hear(event("ADDED", message("m1", "alice", 10)))
        hold.wrote_message("m1")

    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=10)


def test_what_a_write_did_not_write_is_let_go(tally: QuotaTally) -> None:
    listed(tally)

    def write(hold: Hold) -> None:
        hold.wrote_task("t1")
        hold.wrote_message("m1")
        raise ConnectionError("the API server went away before the second message")

    with (
        pytest.raises(ConnectionError, match="went away"),
        tally.admit("alice", Demand((10, 20), tasks=1)) as hold,
    ):
        write(hold)

    assert tally.usage("alice")[0] == Usage(messages=1, message_bytes=10, live_tasks=1)


def test_a_hold_the_watch_never_delivers_is_let_go_after_its_time(
    tally: QuotaTally, clock: Clock
) -> None:
    listed(tally)
    with tally.admit("alice", Demand((10,))) as hold:
        hold.wrote_message("m1")  # deleted before the watch delivered it

    clock.now += HOLD_SECONDS - 1
    before = tally.usage("alice")[0]
    clock.now += 2

    assert before == Usage(messages=1, message_bytes=10)
    assert tally.usage("alice")[0] == Usage()


async def test_a_send_is_refused_when_the_first_listing_never_comes() -> None:
    tally = QuotaTally(SETTINGS, ready_seconds=0.01)

    with pytest.raises(InternalError, match="not yet read what is stored in namespace team"):
        await tally.ready()
