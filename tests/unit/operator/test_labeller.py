"""The labeller (operator/labeller.py): which shard an unlabelled object belongs to, and who
writes the label. A plain in-memory stand-in for the API server's objects holds the tasks."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.kube.names import MESSAGE_PLURAL, PLURAL, SHARD_LABEL, TURN_PLURAL
from tiny_harness.operator.labeller import Labeller
from tiny_harness.operator.shard_deal import shard_of

NS = "team-a"
SHARDS = 8


def task(name: str, uid: str, *, parent: str | None = None, shard: str | None = None) -> Any:
    spec: dict[str, Any] = {"goal": name}
    if parent:
        spec["parent"] = {"taskId": parent}
    labels = {SHARD_LABEL: shard} if shard is not None else {}
    return {"metadata": {"name": name, "namespace": NS, "uid": uid, "labels": labels}, "spec": spec}


def message(name: str, task_name: str) -> Any:
    return {"metadata": {"name": name, "namespace": NS}, "spec": {"task": task_name}}


class Objects:
    """The two calls the labeller makes, on a dict of tasks; writes are recorded."""

    def __init__(self, *tasks: Any) -> None:
        self.tasks = {t["metadata"]["name"]: t for t in tasks}
        self.writes: list[tuple[str, str, Any, str]] = []
        self.fail_with: int | None = None

    async def get_namespaced_custom_object(
        self, group: str, version: str, namespace: str, plural: str, name: str
    ) -> Any:
        if name not in self.tasks:
            raise ApiException(status=404)
        return self.tasks[name]

    async def patch_namespaced_custom_object(
        self,
        group: str,
        version: str,
        namespace: str,
        plural: str,
        name: str,
        body: Any,
        _content_type: str,
    ) -> Any:
        if self.fail_with is not None:
            raise ApiException(status=self.fail_with)
        self.writes.append((plural, name, body, _content_type))
        return {}


def labeller(objects: Objects, held: set[int]) -> Labeller:
    out = Labeller(None, namespaces=[NS], shards=SHARDS, holds=held.__contains__)
    out.objects = objects
    return out


def label(shard: int) -> Any:
    return {"metadata": {"labels": {SHARD_LABEL: str(shard)}}}


async def test_a_new_root_task_is_labelled_with_its_uids_shard_by_the_holder() -> None:
    root = task("release", "uid-1")
    objects = Objects(root)
    shard = shard_of("uid-1", SHARDS)
    await labeller(objects, {shard}).seen(PLURAL, "ADDED", root)
    assert objects.writes == [(PLURAL, "release", label(shard), "application/merge-patch+json")]


async def test_a_child_takes_its_nearest_labelled_ancestors_shard() -> None:
    root = task("release", "uid-1", shard="5")
    middle = task("release-docs", "uid-2", parent="release")
    leaf = task("release-docs-fix", "uid-3", parent="release-docs")
    objects = Objects(root, middle, leaf)
    await labeller(objects, {5}).seen(PLURAL, "ADDED", leaf)
    assert [w[:3] for w in objects.writes] == [(PLURAL, "release-docs-fix", label(5))]


async def test_a_child_of_unlabelled_ancestors_takes_the_roots_uid_and_an_orphan_its_own() -> None:
    root = task("release", "uid-1")
    child = task("release-docs", "uid-2", parent="release")
    orphan = task("lost", "uid-9", parent="gone")
    objects = Objects(root, child, orphan)
    everything = set(range(SHARDS))
    await labeller(objects, everything).seen(PLURAL, "ADDED", child)
    await labeller(objects, everything).seen(PLURAL, "ADDED", orphan)
    assert [w[2] for w in objects.writes] == [
        label(shard_of("uid-1", SHARDS)),
        label(shard_of("uid-9", SHARDS)),
    ]


async def test_a_parent_loop_ends_at_the_depth_bound() -> None:
    a = task("a", "uid-a", parent="b")
    b = task("b", "uid-b", parent="a")
    objects = Objects(a, b)
    await labeller(objects, set(range(SHARDS))).seen(PLURAL, "ADDED", a)
    assert len(objects.writes) == 1


@pytest.mark.parametrize("plural", [MESSAGE_PLURAL, TURN_PLURAL])
async def test_a_message_or_record_takes_its_tasks_shard_and_one_of_no_task_is_left(
    plural: str,
) -> None:
    objects = Objects(task("release", "uid-1", shard="3"))
    unit = labeller(objects, {3})
    await unit.seen(plural, "ADDED", message("release-m1", "release"))
    await unit.seen(plural, "ADDED", message("ghost-m1", "ghost"))
    assert [w[:3] for w in objects.writes] == [(plural, "release-m1", label(3))]
    assert unit.pending == {}


async def test_an_object_of_a_shard_held_elsewhere_waits_until_this_replica_takes_it() -> None:
    objects = Objects(task("release", "uid-1", shard="3"))
    held: set[int] = set()
    unit = labeller(objects, held)
    await unit.seen(MESSAGE_PLURAL, "ADDED", message("release-m1", "release"))
    await unit.seen(MESSAGE_PLURAL, "ADDED", message("release-m2", "release"))
    await unit.seen(MESSAGE_PLURAL, "DELETED", message("release-m2", "release"))
    assert objects.writes == []
    held.add(3)
    unit.acquired(3)
    await asyncio.gather(*unit._background)
    assert [w[1] for w in objects.writes] == ["release-m1"]
    assert unit.pending == {}


async def test_an_object_labelled_meanwhile_is_left_alone() -> None:
    objects = Objects()
    await labeller(objects, {2}).seen(PLURAL, "MODIFIED", task("release", "uid-1", shard="2"))
    assert objects.writes == []


async def test_a_failed_write_stays_pending_and_a_vanished_object_is_dropped(
    caplog: pytest.LogCaptureFixture,
) -> None:
    root = task("release", "uid-1", shard="1")
    objects = Objects(root)
    unit = labeller(objects, {1})
    objects.fail_with = 500
    await unit.seen(MESSAGE_PLURAL, "ADDED", message("release-m1", "release"))
    assert unit.pending == {1: {(MESSAGE_PLURAL, NS, "release-m1")}}
    assert "could not label harnessmessages team-a/release-m1" in caplog.text
    objects.fail_with = 404
    unit.acquired(1)
    await asyncio.gather(*unit._background)
    assert unit.pending == {}
    objects.fail_with = None
    unit.acquired(1)
    assert objects.writes == []
