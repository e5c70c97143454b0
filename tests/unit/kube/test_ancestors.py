"""The one walk up a tree of tasks (kube/ownership.ancestors_of), which the operator's cache
and the gateway both count a task's depth with: a parent counts only when the child is owned
by its uid, and the walk stops at MAX_TREE_DEPTH, the deepest a sub-task may be."""

from __future__ import annotations

from typing import Any

from tiny_harness.core.sizes import MAX_TREE_DEPTH
from tiny_harness.kube.names import KIND
from tiny_harness.kube.ownership import ancestors_of

Obj = dict[str, Any]


def task(name: str, parent: Obj | None = None, *, owned: bool = True) -> Obj:
    meta: Obj = {"name": name, "uid": f"uid-{name}"}
    spec: Obj = {"goal": name}
    if parent is not None:
        spec["parent"] = {"taskId": parent["metadata"]["name"]}
        if owned:
            meta["ownerReferences"] = [{"kind": KIND, "uid": parent["metadata"]["uid"]}]
    return {"metadata": meta, "spec": spec}


def chain(length: int) -> dict[str, Obj]:
    tasks = {"t0": task("t0")}
    for i in range(1, length + 1):
        tasks[f"t{i}"] = task(f"t{i}", tasks[f"t{i - 1}"])
    return tasks


def names(objs: Any) -> list[str]:
    return [o["metadata"]["name"] for o in objs]


def test_a_task_has_its_parents_up_to_its_root_nearest_first() -> None:
    tasks = chain(3)
    assert names(ancestors_of(tasks["t3"], tasks.get)) == ["t2", "t1", "t0"]
    assert names(ancestors_of(tasks["t0"], tasks.get)) == []


def test_a_task_that_only_names_a_parent_has_none() -> None:
    root = task("root")
    stray = task("stray", root, owned=False)
    assert names(ancestors_of(stray, {"root": root}.get)) == []


def test_a_parent_gone_ends_the_walk() -> None:
    tasks = chain(2)
    del tasks["t0"]
    assert names(ancestors_of(tasks["t2"], tasks.get)) == ["t1"]


def test_the_walk_goes_as_deep_as_a_sub_task_may_be_and_no_further() -> None:
    tasks = chain(MAX_TREE_DEPTH + 4)
    deepest = tasks[f"t{MAX_TREE_DEPTH + 4}"]
    assert len(names(ancestors_of(deepest, tasks.get))) == MAX_TREE_DEPTH
    at_bound = tasks[f"t{MAX_TREE_DEPTH}"]
    assert names(ancestors_of(at_bound, tasks.get))[-1] == "t0"
