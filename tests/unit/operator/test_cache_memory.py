"""The cache within its bytes: what nobody works is kept in summary, read back by name when
its task is worked, and what a worker has pinned is never dropped (operator/cache.py,
operator/resident.py). A dict stands in for the API server's objects."""

from __future__ import annotations

import json
from typing import Any

import pytest

from tests.unit.operator.test_cache import NS, T1, message, record_obj, task
from tiny_harness.core.llm import LLMResponse, Usage
from tiny_harness.core.task import TaskUsage
from tiny_harness.core.turn import ModelEntry
from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import ENTRIES
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.feed import Feed, pack
from tiny_harness.operator.working_set import NotLoaded

BIG = "x" * 4000


def big_task(name: str, rv: str = "1", parent: str | None = None) -> dict[str, Any]:
    obj = task(name, rv, parent=parent)
    obj["spec"]["goal"] = f"{name}: {BIG}"
    return obj


def model_record(task_name: str, turn: int, rv: str, calls: int) -> dict[str, Any]:
    obj = record_obj(task_name, turn, 0, rv)
    used = Usage(input_tokens=10, output_tokens=5)
    entries = tuple(
        ModelEntry(id=f"{task_name}-t{turn}-{i}", response=LLMResponse(text="ok", usage=used))
        for i in range(calls)
    )
    obj["spec"]["entries"] = ENTRIES.dump_python(entries, mode="json")
    return obj


class Api:
    """The objects as the API server holds them, read back by name (and counted)."""

    def __init__(self) -> None:
        self.objects: dict[tuple[str, str], Obj] = {}
        self.reads: list[tuple[str, str]] = []

    def hold(self, plural: str, obj: Obj) -> Obj:
        self.objects[(plural, obj["metadata"]["name"])] = json.loads(json.dumps(obj))
        return obj

    async def fetch(self, plural: str, namespace: str, name: str) -> Obj | None:
        self.reads.append((plural, name))
        return self.objects.get((plural, name))


def fed(budget: int, api: Api, *objects: tuple[str, Obj]) -> tuple[Cache, Feed]:
    feed = Feed()
    cache = Cache(feed, budget=budget, fetch=api.fetch)
    plurals = {"tasks": "harnesstasks", "messages": "harnessmessages", "turns": "harnessturns"}
    for kind, obj in objects:
        cache.saw(feed, kind, api.hold(plurals[kind], obj))
    return cache, feed


def size_of(obj: Obj) -> int:
    return len(pack(obj).text or "")


def test_what_passes_the_budget_is_kept_in_summary_and_a_read_of_it_says_load_first() -> None:
    api = Api()
    tasks = [big_task(f"t{i}") for i in range(10)]
    cache, _ = fed(3 * size_of(tasks[0]), api, *(("tasks", t) for t in tasks))
    assert cache.resident.bytes <= cache.resident.budget
    assert cache.feeds.known() == 10
    assert cache.resident.dropped == 7
    # The newest are whole; the oldest in summary: its state and owners are still known.
    assert cache.task(NS, "t9") is not None
    with pytest.raises(NotLoaded, match="t0"):
        cache.task(NS, "t0")
    stub = cache.stub(NS, "t0")
    assert stub is not None
    assert stub["status"]["state"] == "TASK_STATE_WORKING"
    assert stub["metadata"]["uid"] == "uid-t0"


async def test_a_load_reads_back_the_task_its_messages_records_children_and_ancestors() -> None:
    api = Api()
    objects = [
        ("tasks", big_task("root")),
        ("tasks", big_task("release", parent="root")),
        ("tasks", big_task("release-docs", parent="release")),
        ("messages", message("m1", sent_at=T1, created=T1, owner="uid-release")),
        ("turns", record_obj("release", 1, 0, "3", "a note")),
        *(("tasks", big_task(f"other{i}")) for i in range(6)),
    ]
    cache, _ = fed(2 * size_of(big_task("other0")), api, *objects)
    with pytest.raises(NotLoaded):
        cache.task(NS, "release")
    with cache.working(NS, "release") as pins:
        await cache.load(NS, "release", pins)
        assert {name for _, name in api.reads} == {
            "release",
            "root",
            "release-docs",
            "m1",
            "release-t1",
        }
        # Everything a pass reads is whole now, and stays so while the worker runs.
        for i in range(6, 12):
            cache.saw(cache.feeds[None], "tasks", api.hold("harnesstasks", big_task(f"new{i}")))
        assert [m.name for m in cache.messages(NS, "release")] == ["m1"]
        assert [r.name for r in cache.records(NS, "release")] == ["release-t1"]
        assert [c["metadata"]["name"] for c in cache.children(NS, "release")] == ["release-docs"]
        assert cache.task(NS, "root") is not None
        api.reads.clear()
        await cache.load(NS, "release", pins)
        assert api.reads == []  # nothing to read back a second time
    # The worker is gone: its group makes room like any other.
    for i in range(12, 18):
        cache.saw(cache.feeds[None], "tasks", api.hold("harnesstasks", big_task(f"new{i}")))
    with pytest.raises(NotLoaded):
        cache.task(NS, "release")


async def test_an_object_gone_by_the_time_it_is_read_back_is_forgotten() -> None:
    api = Api()
    cache, feed = fed(
        1,
        api,
        ("tasks", big_task("release")),
        ("messages", message("m1", sent_at=T1, created=T1, owner="uid-release")),
    )
    del api.objects[("harnessmessages", "m1")]
    with cache.working(NS, "release") as pins:
        await cache.load(NS, "release", pins)
        assert cache.messages(NS, "release") == []
    assert feed.get("messages", NS, "m1") is None


async def test_without_a_way_to_read_back_a_load_of_dropped_objects_says_so() -> None:
    feed = Feed()
    cache = Cache(feed, budget=1)
    cache.saw(feed, "tasks", big_task("a"))
    cache.saw(feed, "tasks", big_task("b"))
    with pytest.raises(NotLoaded, match="not in memory"):
        await cache.load(NS, "a")


def test_a_trees_usage_is_summed_from_summaries_without_its_journals() -> None:
    api = Api()
    cache, _ = fed(
        1,
        api,
        ("tasks", big_task("release")),
        ("tasks", big_task("release-docs", parent="release")),
        ("turns", model_record("release", 1, "5", calls=2)),
        ("turns", model_record("release-docs", 1, "6", calls=3)),
    )
    with pytest.raises(NotLoaded):
        cache.records(NS, "release")
    assert cache.usage(NS, "release") == TaskUsage(model_calls=2, input_tokens=20, output_tokens=10)
    assert [c["metadata"]["name"] for c in cache.child_stubs(NS, "release")] == ["release-docs"]
    assert cache.usage(NS, "release-docs").model_calls == 3


def test_parsed_versions_stay_within_their_share_of_the_bytes() -> None:
    api = Api()
    tasks = [big_task(f"t{i}") for i in range(40)]
    cache, _ = fed(20 * size_of(tasks[0]), api, *(("tasks", t) for t in tasks))
    for i in range(25, 40):  # the newest, kept whole
        cache.task(NS, f"t{i}")
    assert cache.parsed_bytes <= cache.resident.budget / 2


def test_a_second_listing_of_the_same_versions_changes_nothing() -> None:
    api = Api()
    cache, feed = fed(10**6, api, ("tasks", big_task("release")))
    held = feed.get("tasks", NS, "release")
    cache.saw(feed, "tasks", big_task("release"))
    assert feed.get("tasks", NS, "release") is held
    assert cache.resident.bytes == size_of(big_task("release"))


def test_kopfs_listing_is_over_once_it_told_as_many_objects_of_each_kind_as_the_feed_holds() -> (
    None
):
    api = Api()
    _, feed = fed(
        10**6,
        api,
        ("tasks", big_task("release")),
        ("tasks", big_task("other")),
        ("messages", message("m1", sent_at=T1, created=T1, owner="uid-release")),
    )
    feed.expect_listing()
    assert not feed.listed.is_set()
    feed.told_listed("tasks")
    feed.told_listed("messages")
    assert not feed.listed.is_set()
    feed.told_listed("tasks")
    assert feed.listed.is_set()


def test_an_empty_shards_listing_is_over_at_once() -> None:
    feed = Feed()
    feed.expect_listing()
    assert feed.listed.is_set()
