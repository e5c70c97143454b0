"""The operator's read side: its feeds plus this replica's own latest writes.

The feed lags this replica's writes by a watch event. If a pass read only the feed, it would
decide on the task as it was before its own last write (and, say, take a message twice); if it
read only its own writes, it would miss everyone else's. The cache reads its own write until
the feed has delivered exactly that resourceVersion (versions are opaque: never ordered, only
compared for equality; kopf delivers an object's events in etcd's order). :func:`indices`
fills a feed as the listing does, and :func:`deliver` does what a handler does on each event.
"""

from __future__ import annotations

from typing import Any

import pytest

from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.names import FIRST_MESSAGE_ANNOTATION
from tiny_harness.operator.cache import Cache as _Cache
from tiny_harness.operator.feed import Feed, plain
from tiny_harness.operator.overlay import OVERLAY_SECONDS

NS = "team-a"
#: When the tasks here were created: the messages below were all written after.
T0 = "2026-11-30T16:00:00Z"
T1 = "2026-11-30T16:00:01Z"
T2 = "2026-11-30T16:00:02Z"


def task(
    name: str,
    rv: str,
    *,
    state: str = "TASK_STATE_WORKING",
    parent: str | None = None,
    namespace: str = NS,
    uid: str | None = None,
    owned: bool = True,
) -> dict[str, Any]:
    """A task (uid ``uid-<name>`` unless given); with ``parent``, a child the harness made
    (owned by the parent's uid), or with ``owned=False`` one that only names its parent."""
    spec: dict[str, Any] = {"goal": f"goal of {name}"}
    meta: dict[str, Any] = {
        "name": name,
        "namespace": namespace,
        "resourceVersion": rv,
        "uid": uid or f"uid-{name}",
        "creationTimestamp": T0,
    }
    if parent:
        spec["parent"] = {"taskId": parent}
        if owned:
            meta["ownerReferences"] = [owner_ref(parent)]
    return {
        "apiVersion": "harness.example/v1alpha1",
        "kind": "HarnessTask",
        "metadata": meta,
        "spec": spec,
        "status": {"state": state},
    }


def owner_ref(task_name: str, uid: str | None = None) -> dict[str, str]:
    return {"kind": "HarnessTask", "name": task_name, "uid": uid or f"uid-{task_name}"}


def record_obj(
    task_name: str, turn: int, chunk: int, rv: str, *notes: str, uid: str | None = None
) -> dict[str, Any]:
    suffix = f"-t{turn}" + (f"-c{chunk}" if chunk else "")
    return {
        "metadata": {
            "name": task_name + suffix,
            "namespace": NS,
            "resourceVersion": rv,
            "ownerReferences": [owner_ref(task_name, uid)],
        },
        "spec": {
            "task": task_name,
            "turn": turn,
            "chunk": chunk,
            "entries": [{"kind": "notice", "id": n, "text": n} for n in notes],
        },
    }


def record(task_name: str, turn: int, chunk: int, rv: str, *notes: str) -> TurnRecord:
    return TurnRecord.of(record_obj(task_name, turn, chunk, rv, *notes))


def message(
    name: str,
    *,
    sent_at: str | None,
    created: str,
    text: str = "hello",
    owner: str | None = None,
) -> dict[str, Any]:
    """A message to ``release``, written by hand (no owner) unless ``owner`` names a uid."""
    spec: dict[str, Any] = {
        "task": "release",
        "messageId": f"id-{name}",
        "sender": "alice",
        "parts": [{"text": text}],
    }
    if sent_at is not None:
        spec["sentAt"] = sent_at
    meta: dict[str, Any] = {
        "name": name,
        "namespace": NS,
        "creationTimestamp": created,
        "resourceVersion": "1",
    }
    if owner is not None:
        meta["ownerReferences"] = [owner_ref("release", owner)]
    return {"metadata": meta, "spec": spec}


#: Fills feeds as kopf's listing would before the cache under test reads them: a cache of its
#: own, so the one under test hears nothing of it (as of an object it has not been told of).
_LISTING = _Cache()


def indices(
    tasks: list[dict[str, Any]] | None = None,
    children: dict[str, list[dict[str, Any]]] | None = None,
    messages: list[dict[str, Any]] | None = None,
    turns: list[dict[str, Any]] | None = None,
) -> Feed:
    """A feed as the listing fills it, for tasks in namespace ``NS``."""
    feed = Feed()
    # Every task whose children, messages or records are given exists (its uid ``uid-<name>``)
    # unless the test gives it.
    named = {
        *(children or {}),
        *(m["spec"]["task"] for m in messages or []),
        *(r["spec"]["task"] for r in turns or []),
    }
    given = {t["metadata"]["name"] for t in tasks or []}
    for name in sorted(named - given):
        put_task(feed, task(name, "1"))
    for t in tasks or []:
        put_task(feed, t)
    for kids in (children or {}).values():
        for kid in kids:
            put_task(feed, kid)
    for m in messages or []:
        _LISTING.saw(feed, "messages", m)
    for r in turns or []:
        put_record(feed, r)
    return feed


def put_task(feed: Feed, obj: dict[str, Any]) -> None:
    """The feed holds this version of the task now, without the cache under test told."""
    _LISTING.saw(feed, "tasks", obj)


def drop_task(feed: Feed, name: str) -> None:
    feed.remove("tasks", NS, name)


def put_record(feed: Feed, obj: dict[str, Any]) -> None:
    """Add a record, replacing an older version of it, as the feed does by object."""
    _LISTING.saw(feed, "turns", obj)


def Cache(feed: Feed, clock: Clock | None = None) -> _Cache:
    """The cache over this feed, as if the listing had filled it."""
    return _Cache(feed, clock=clock or Clock())


class Clock:
    """The cache's clock, moved by the test."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


def deliver(cache: _Cache, feed: Feed, obj: dict[str, Any]) -> None:
    """The watch's event for a task: the handler gives it to the cache, which holds it and
    drops our write of that version from the overlay."""
    cache.saw(feed, "tasks", obj)


def deliver_record(cache: _Cache, feed: Feed, obj: dict[str, Any]) -> None:
    cache.saw(feed, "turns", obj)


def rv_of(obj: dict[str, Any]) -> str:
    return str(obj["metadata"]["resourceVersion"])


def state_of(obj: dict[str, Any] | None) -> str:
    assert obj is not None
    return str(obj["status"]["state"])


# -- resource versions ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("indexed", "written"),
    [
        ("10", "9"),  # a write numbered lower than the index's copy is not taken as older
        ("9", "10"),
        ("abc", "abd"),  # opaque versions, as the API conventions have them
    ],
)
def test_resource_versions_are_never_ordered_only_matched(indexed: str, written: str) -> None:
    idx = indices(tasks=[task("release", indexed)])
    cache = Cache(idx)
    cache.wrote_task(task("release", written, state="TASK_STATE_COMPLETED"))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"  # ours, until
    deliver(cache, idx, task("release", written, state="TASK_STATE_COMPLETED"))
    assert cache.overlay.tasks == {}  # the index delivered exactly our version


# -- tasks ----------------------------------------------------------------------------------------


def test_an_unknown_task_is_none() -> None:
    assert Cache(indices()).task(NS, "release") is None


def test_a_task_seen_only_by_the_index_is_read_from_it() -> None:
    cache = Cache(indices(tasks=[task("release", "10")]))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_WORKING"


def test_this_replicas_newer_write_wins_over_a_lagging_index() -> None:
    cache = Cache(indices(tasks=[task("release", "10")]))

    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_INPUT_REQUIRED"


def test_a_write_of_a_task_not_yet_in_the_index_is_read_back() -> None:
    cache = Cache(indices())

    cache.wrote_task(task("release", "3"))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_WORKING"


def test_the_latest_write_is_read_until_the_index_delivers_it() -> None:
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    cache.wrote_task(task("release", "11", state="TASK_STATE_INPUT_REQUIRED"))
    cache.wrote_task(task("release", "12", state="TASK_STATE_COMPLETED"))

    deliver(cache, idx, task("release", "11", state="TASK_STATE_INPUT_REQUIRED"))
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"

    deliver(cache, idx, task("release", "12", state="TASK_STATE_COMPLETED"))
    assert cache.overlay.tasks == {}
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"


def test_an_event_the_index_delivers_before_our_writes_own_does_not_replace_it() -> None:
    """Another writer's change committed before our write: its event comes first, and our
    write, which is after it, stays what is read."""
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    deliver(cache, idx, task("release", "11", state="TASK_STATE_WORKING"))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_INPUT_REQUIRED"


def test_the_index_wins_once_it_has_caught_up_and_the_write_is_dropped() -> None:
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    deliver(cache, idx, task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))
    deliver(cache, idx, task("release", "13", state="TASK_STATE_COMPLETED"))
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"

    # Dropped: once the task leaves the index, the old write does not bring it back.
    drop_task(idx, "release")
    assert cache.task(NS, "release") is None


def test_the_index_holding_the_very_version_written_wins() -> None:
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    put_task(idx, task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_INPUT_REQUIRED"

    drop_task(idx, "release")
    assert cache.task(NS, "release") is None


def test_tasks_of_the_same_name_in_other_namespaces_are_apart() -> None:
    cache = Cache(indices(tasks=[task("release", "10", namespace="team-b")]))

    cache.wrote_task(task("release", "4", state="TASK_STATE_COMPLETED"))

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"
    assert state_of(cache.task("team-b", "release")) == "TASK_STATE_WORKING"


def test_forgetting_a_task_drops_its_writes() -> None:
    cache = Cache(indices())
    cache.wrote_task(task("release", "3"))

    cache.forget(NS, "release")

    assert cache.task(NS, "release") is None


# -- turn records ---------------------------------------------------------------------------------


def ids(records: list[TurnRecord]) -> list[tuple[str, str]]:
    return [(r.name, r.resource_version) for r in records]


def test_records_come_in_turn_and_chunk_order_whatever_the_index_order() -> None:
    cache = Cache(
        indices(
            turns=[
                record_obj("release", 2, 0, "30"),
                record_obj("release", 1, 1, "20"),
                record_obj("release", 10, 0, "40"),
                record_obj("release", 1, 0, "10"),
            ]
        )
    )

    assert [r.name for r in cache.records(NS, "release")] == [
        "release-t1",
        "release-t1-c1",
        "release-t2",
        "release-t10",
    ]


def test_records_merge_by_name_and_keep_write_only_ones() -> None:
    idx = indices(turns=[record_obj("release", 2, 0, "20", "first")])
    cache = Cache(idx)
    deliver_record(cache, idx, record_obj("release", 1, 0, "9"))
    deliver_record(cache, idx, record_obj("release", 1, 0, "10", "hello"))
    cache.wrote_record(NS, record("release", 1, 0, "9"))  # delivered already: ignored
    cache.wrote_record(NS, record("release", 2, 0, "25", "first", "second"))
    cache.wrote_record(NS, record("release", 2, 1, "26", "third"))  # only written so far

    records = cache.records(NS, "release")

    assert ids(records) == [("release-t1", "10"), ("release-t2", "25"), ("release-t2-c1", "26")]
    assert [e.id for e in records[1].entries] == ["first", "second"]


def test_the_index_copy_of_a_record_wins_once_it_has_caught_up() -> None:
    idx = indices(turns=[record_obj("release", 1, 0, "10", "hello")])
    cache = Cache(idx)
    cache.wrote_record(NS, record("release", 1, 0, "12", "hello", "mine"))
    assert ids(cache.records(NS, "release")) == [("release-t1", "12")]

    deliver_record(cache, idx, record_obj("release", 1, 0, "12", "hello", "mine"))
    deliver_record(cache, idx, record_obj("release", 1, 0, "14", "hello", "mine", "theirs"))

    records = cache.records(NS, "release")
    assert ids(records) == [("release-t1", "14")]
    assert [e.id for e in records[0].entries] == ["hello", "mine", "theirs"]


def test_records_of_another_task_are_not_mixed_in() -> None:
    cache = Cache(indices(turns=[record_obj("changelog", 1, 0, "10")]))
    cache.wrote_record(NS, record("other", 1, 0, "11"))

    assert cache.records(NS, "release") == []


# -- children -------------------------------------------------------------------------------------


def test_children_are_the_index_ones_with_this_replicas_writes_not_yet_indexed() -> None:
    docs = task("release-docs", "10", parent="release")
    tests = task("release-tests", "11", parent="release")
    cache = Cache(indices(children={"release": [docs, tests]}))
    cache.indexed_task(NS, "release-tests", "5")  # delivered before its write's response came
    cache.indexed_task(NS, "release-tests", "11")

    cache.wrote_task(task("release-docs", "15", parent="release", state="TASK_STATE_COMPLETED"))
    cache.wrote_task(task("release-tests", "5", parent="release", state="TASK_STATE_CANCELED"))

    states = {c["metadata"]["name"]: state_of(c) for c in cache.children(NS, "release")}
    assert states == {
        "release-docs": "TASK_STATE_COMPLETED",
        "release-tests": "TASK_STATE_WORKING",
    }


def test_a_child_just_created_here_is_a_child_before_the_index_sees_it() -> None:
    cache = Cache(indices(children={"release": [task("release-docs", "10", parent="release")]}))

    cache.wrote_task(task("release-notes", "12", parent="release", state="TASK_STATE_SUBMITTED"))

    names = sorted(c["metadata"]["name"] for c in cache.children(NS, "release"))
    assert names == ["release-docs", "release-notes"]


def test_only_this_tasks_children_in_its_namespace_are_its_children() -> None:
    cache = Cache(indices())
    cache.wrote_task(task("release", "1"))  # the parent itself
    cache.wrote_task(task("other-child", "2", parent="other"))
    cache.wrote_task(task("far-child", "3", parent="release", namespace="team-b"))

    assert cache.children(NS, "release") == []


# -- messages -------------------------------------------------------------------------------------


def test_messages_come_in_the_order_their_writers_sent_them() -> None:
    """The writer's nanosecond send time orders messages the API created in the same second
    (or, across replicas of the gateway, out of order)."""
    cache = Cache(
        indices(
            messages=[
                message("m-a", sent_at="2026-11-30T16:00:02.000000002Z", created=T1),
                message("m-b", sent_at="2026-11-30T16:00:02.000000001Z", created=T2),
                message("m-c", sent_at="2026-11-30T16:00:01.500000000Z", created=T2),
            ]
        )
    )

    assert [m.name for m in cache.messages(NS, "release")] == ["m-c", "m-b", "m-a"]


def test_messages_sent_at_the_same_time_go_by_creation_then_name() -> None:
    same = "2026-11-30T16:00:02.000000000Z"
    cache = Cache(
        indices(
            messages=[
                message("m-z", sent_at=same, created=T2),
                message("m-y", sent_at=same, created=T1),
                message("m-x", sent_at=same, created=T2),
            ]
        )
    )

    assert [m.name for m in cache.messages(NS, "release")] == ["m-y", "m-x", "m-z"]


def test_messages_without_a_send_time_go_by_creation_then_name() -> None:
    cache = Cache(
        indices(
            messages=[
                message("m-z", sent_at=None, created=T2),
                message("m-y", sent_at=None, created=T1),
                message("m-x", sent_at=None, created=T2),
            ]
        )
    )

    assert [m.name for m in cache.messages(NS, "release")] == ["m-y", "m-x", "m-z"]


def test_a_task_without_messages_has_none() -> None:
    assert Cache(indices()).messages(NS, "release") == []


# -- the overlay holds only writes the watch has not shown yet -------------------------------------


def test_an_own_write_is_dropped_from_the_overlay_once_the_index_has_it() -> None:
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    put_task(idx, task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))
    cache.indexed_task(NS, "release", "12")

    assert cache.overlay.tasks == {}
    assert cache.task(NS, "release") == task("release", "12", state="TASK_STATE_INPUT_REQUIRED")


def test_a_write_whose_event_came_first_is_not_kept_in_the_overlay() -> None:
    cache = Cache(indices(tasks=[task("release", "12")], turns=[record_obj("release", 1, 0, "12")]))
    cache.wrote_task(task("release", "12"))
    cache.wrote_record(NS, record("release", 1, 0, "12"))

    assert cache.overlay.tasks == {}
    assert cache.overlay.records == {}


def test_a_write_the_index_delivered_and_then_passed_is_not_kept_in_the_overlay() -> None:
    """The watch was faster than the write's response, and a later change came too: the
    index's copy is newer than the response, and that is what is read."""
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx)
    deliver(cache, idx, task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))
    deliver(cache, idx, task("release", "13", state="TASK_STATE_COMPLETED"))

    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    assert cache.overlay.tasks == {}
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"


def test_a_write_the_watch_passed_over_is_dropped_after_a_while() -> None:
    """kopf listed afresh (410 Gone) and its listing had a later version: our write's own event
    never comes. Once other versions have come and the bound has passed, the index is read."""
    clock = Clock()
    idx = indices(tasks=[task("release", "10")])
    cache = Cache(idx, clock)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))
    deliver(cache, idx, task("release", "14", state="TASK_STATE_COMPLETED"))
    assert state_of(cache.task(NS, "release")) == "TASK_STATE_INPUT_REQUIRED"

    clock.now += OVERLAY_SECONDS

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_COMPLETED"
    assert cache.overlay.tasks == {}


def test_a_watch_that_is_away_keeps_the_write_however_long() -> None:
    clock = Clock()
    cache = Cache(indices(tasks=[task("release", "10")]), clock)
    cache.wrote_task(task("release", "12", state="TASK_STATE_INPUT_REQUIRED"))

    clock.now += 10 * OVERLAY_SECONDS

    assert state_of(cache.task(NS, "release")) == "TASK_STATE_INPUT_REQUIRED"


def test_a_record_written_here_is_dropped_once_indexed() -> None:
    cache = Cache(indices())
    cache.wrote_record(NS, record("release", 1, 0, "7", "a"))
    cache.indexed_record(NS, record("release", 1, 0, "7", "a"))
    assert cache.overlay.records == {}


# -- packed objects, parsed on read --------------------------------------------------------------


def test_a_packed_version_is_parsed_once_and_a_new_version_parses_anew() -> None:
    idx = indices(turns=[record_obj("release", 1, 0, "10", "hello")])
    cache = Cache(idx)

    first = cache.records(NS, "release")[0]
    assert cache.records(NS, "release")[0] is first  # the same version: not parsed again

    put_record(idx, record_obj("release", 1, 0, "11", "hello", "more"))
    newer_one = cache.records(NS, "release")[0]
    assert newer_one is not first
    assert [e.id for e in newer_one.entries] == ["hello", "more"]


def test_parsed_versions_kept_are_bounded_and_the_rest_parse_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr("tiny_harness.operator.parsed.PARSED_KEPT", 2)
    cache = Cache(indices(tasks=[task(name, "10") for name in ("a", "b", "c")]))

    a = cache.task(NS, "a")
    cache.task(NS, "b")
    cache.task(NS, "c")  # pushes the parsed "a" out

    assert len(cache.parsed_versions) == 2
    again = cache.task(NS, "a")
    assert again == a
    assert again is not a


def test_a_packed_task_reads_back_as_the_object_it_was() -> None:
    obj = task("release", "10", parent="boss")
    cache = Cache(indices(tasks=[obj], children={"boss": [obj]}))

    assert cache.task(NS, "release") == obj
    assert cache.children(NS, "boss") == [obj]


def test_the_first_message_a_tasks_creator_announced_survives_the_feed() -> None:
    """Row 11 of decide reads it on every pass, long after the overlay has let go of the first
    status write; the annotations the operator never reads are dropped."""
    obj = task("release", "10")
    obj["metadata"]["annotations"] = {
        FIRST_MESSAGE_ANNOTATION: "m-first",
        "kubectl.kubernetes.io/last-applied-configuration": "{}",
    }
    feed = Feed()
    cache = Cache(feed)
    deliver(cache, feed, plain(obj))  # as the handler gives it each event

    seen = cache.task(NS, "release")
    assert seen is not None
    assert seen["metadata"]["annotations"] == {FIRST_MESSAGE_ANNOTATION: "m-first"}


# -- what belongs to a task: its uid, not its name (kube/ownership.py) ---------------------------


def test_a_task_recreated_under_an_old_name_reads_none_of_the_old_ones_records() -> None:
    """The old task's records are still indexed (the garbage collector has not deleted them
    yet); the new task of the same name sees only its own."""
    cache = Cache(
        indices(
            tasks=[task("release", "50", uid="uid-new")],
            turns=[
                record_obj("release", 1, 0, "10", "old", uid="uid-old"),
                record_obj("release", 1, 0, "51", "new", uid="uid-new"),
            ],
        )
    )

    records = cache.records(NS, "release")

    assert [e.id for r in records for e in r.entries] == ["new"]


def test_a_task_recreated_under_an_old_name_reads_none_of_the_old_ones_messages() -> None:
    """An old message owned by the old uid, and one written by hand before the new task was
    created, are not the new task's; one written by hand after it was, and one it owns, are."""
    cache = Cache(
        indices(
            tasks=[task("release", "50", uid="uid-new")],
            messages=[
                message("owned-old", sent_at=None, created=T1, owner="uid-old"),
                message("by-hand-before", sent_at=None, created="2026-11-30T15:59:59Z"),
                message("by-hand-after", sent_at=None, created=T1),
                message("owned-new", sent_at=None, created=T2, owner="uid-new"),
            ],
        )
    )

    assert [m.name for m in cache.messages(NS, "release")] == ["by-hand-after", "owned-new"]


def test_a_task_that_only_names_a_parent_is_a_stray_and_not_a_child() -> None:
    """Only the harness writes a child's owner reference; a task that merely names the parent
    (written by hand, or the child of an older task of the same name) is no sub-task."""
    child = task("release-docs", "10", parent="release")
    stray = task("mallory-task", "11", parent="release", owned=False)
    orphan = task("old-child", "12", parent="release", owned=False)
    orphan["metadata"]["ownerReferences"] = [owner_ref("release", "uid-of-an-older-release")]
    cache = Cache(
        indices(tasks=[task("release", "1")], children={"release": [child, stray, orphan]})
    )

    assert [c["metadata"]["name"] for c in cache.children(NS, "release")] == ["release-docs"]
    assert sorted(c["metadata"]["name"] for c in cache.strays(NS, "release")) == [
        "mallory-task",
        "old-child",
    ]


def test_a_gone_task_has_no_records_messages_or_children() -> None:
    idx = indices(
        turns=[record_obj("release", 1, 0, "10")],
        messages=[message("m", sent_at=None, created=T1)],
        children={"release": [task("release-docs", "10", parent="release")]},
    )
    drop_task(idx, "release")
    cache = Cache(idx)

    assert cache.records(NS, "release") == []
    assert cache.messages(NS, "release") == []
    assert cache.children(NS, "release") == []
