"""A sharded replica lists and watches only its shards' objects (operator/kopf_shards.py,
operator/priming.py), on the real API server: what its cache holds and what it is poked for
follow the shards it is told to watch, a change of shards lists the new ones before they are
read, and nothing sent during a hand-over is missed. And every object of a task tree carries
the tree's shard label, whoever wrote it (operator/labeller.py).

In the first two tests kopf runs in this process with the operator's own registry; a recording
stand-in replaces the runtime behind it (the pokes are what is looked at). The last runs the
operator process.
"""

from __future__ import annotations

import asyncio
import contextlib
import itertools
import signal
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import pytest
from kubernetes_asyncio import client

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually_async
from tests.integration.lifecycle_support import Tasks
from tiny_harness.kube.names import (
    API_VERSION,
    GROUP,
    KIND,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    PLURAL,
    SHARD_LABEL,
    VERSION,
)
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.handlers import build_registry
from tiny_harness.operator.kopf_shards import Watches
from tiny_harness.operator.priming import prime
from tiny_harness.operator.shard_deal import shard_of

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

_names = itertools.count()


class Recorder:
    """What the handlers call on the runtime: the pokes are recorded, the rest is a no-op."""

    def __init__(self) -> None:
        self.cache = Cache()
        self.metrics = self
        self.poked: list[str] = []

    def task_state(self, namespace: str, name: str, state: str | None) -> None:
        pass

    def skipped(self, kind: str) -> None:
        pass

    def owns(self, namespace: str, name: str) -> bool:
        return True

    def poke(self, namespace: str, name: str) -> None:
        self.poked.append(name)

    def poke_unless_own(self, kind: str, namespace: str, name: str, task: str, rv: str) -> None:
        self.poke(namespace, task)

    def observe_lease(self, namespace: str, name: str, runner: Any) -> None:
        pass

    def forget(self, namespace: str, name: str) -> None:
        self.cache.forget(namespace, name)

    async def until(self, condition: Callable[..., bool], within: float = 20.0) -> None:
        """Let the watches run until ``condition()`` holds: the handlers fill the cache in
        this event loop, so a short interval sees each change soon after it is made."""
        await eventually_async(
            condition, within=within, what="the watches to fill the cache", interval=0.01
        )


@pytest.fixture
async def objects(api: Any) -> client.CustomObjectsApi:
    return client.CustomObjectsApi(api)


async def create_task(objects: Any, namespace: str, name: str, shard: int | None) -> None:
    labels = {} if shard is None else {SHARD_LABEL: str(shard)}
    body = {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {"name": name, "labels": labels},
        "spec": {"goal": f"goal of {name}", "participants": [{"id": "alice", "role": "assignee"}]},
    }
    await objects.create_namespaced_custom_object(GROUP, VERSION, namespace, PLURAL, body)


async def send(objects: Any, namespace: str, task: str, shard: int) -> str:
    name = f"{task}-m{next(_names)}"
    body = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {"name": name, "labels": {SHARD_LABEL: str(shard)}},
        "spec": {"task": task, "messageId": name, "sender": "alice", "parts": [{"text": "Hi"}]},
    }
    await objects.create_namespaced_custom_object(GROUP, VERSION, namespace, MESSAGE_PLURAL, body)
    return name


@contextlib.asynccontextmanager
async def running(
    api: Any, namespace: str, recorder: Recorder, kubeconfig: Path, monkeypatch: Any
) -> AsyncIterator[tuple[Watches, asyncio.Task[None]]]:
    monkeypatch.setenv("KUBECONFIG", str(kubeconfig))
    watches = Watches(
        api,
        lambda feed: build_registry(recorder, feed),  # type: ignore[arg-type]
        lambda feed, label: prime(
            api, recorder.cache, feed, namespaces=[namespace], label_selector=label
        ),
        recorder.cache.adopt,
        recorder.cache.drop,
        namespaces=[namespace],
        sharded=True,
    )
    stop = asyncio.Event()
    run = asyncio.create_task(watches.run(stop_flag=stop))
    try:
        yield watches, run
    finally:
        stop.set()
        await asyncio.wait_for(run, 30)


def held_tasks(cache: Cache, namespace: str, names: list[str]) -> set[str]:
    return {n for n in names if cache.task(namespace, n) is not None}


async def test_a_replica_sees_only_its_shards_and_a_change_of_shards_lists_the_new_ones(
    api: Any,
    objects: Any,
    namespace: str,
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    names = [f"t-{s}" for s in range(4)]
    for shard, name in enumerate(names):
        await create_task(objects, namespace, name, shard)
    await create_task(objects, namespace, "unlabelled", None)
    recorder = Recorder()
    async with running(api, namespace, recorder, kubeconfig, monkeypatch) as (watches, run):
        watches.want({0, 1})
        await recorder.until(lambda: {"t-0", "t-1"} <= set(recorder.poked))
        assert held_tasks(recorder.cache, namespace, [*names, "unlabelled"]) == {"t-0", "t-1"}

        # Messages: those of a watched shard poke their task; the others reach no one here.
        await send(objects, namespace, "t-2", 2)
        said = await send(objects, namespace, "t-1", 1)
        await recorder.until(
            lambda: any(m.name == said for m in recorder.cache.messages(namespace, "t-1"))
        )
        assert "t-2" not in recorder.poked

        # Shards 1 and 2 now: 2's task and its earlier message are listed before being read,
        # and 0's are no longer held.
        recorder.poked.clear()
        watches.want({1, 2})
        await recorder.until(lambda: watches.changes == 2 and watches.settled())
        assert held_tasks(recorder.cache, namespace, names) == {"t-1", "t-2"}
        assert len(recorder.cache.messages(namespace, "t-2")) == 1
        # Read before its kopf instance starts; that instance's listing pokes its task.
        await recorder.until(lambda: "t-2" in recorder.poked)
        await send(objects, namespace, "t-0", 0)
        said = await send(objects, namespace, "t-2", 2)
        await recorder.until(
            lambda: any(m.name == said for m in recorder.cache.messages(namespace, "t-2"))
        )
        assert "t-0" not in recorder.poked

        # No shards at all: nothing matches, so the empty listing is read at once.
        watches.want(set())
        await recorder.until(lambda: watches.changes == 3 and watches.settled())
        assert held_tasks(recorder.cache, namespace, names) == set()
        assert not run.done()
    assert run.done()
    assert run.exception() is None


async def test_nothing_sent_while_the_shards_change_hands_is_missed(
    api: Any,
    objects: Any,
    namespace: str,
    kubeconfig: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Messages sent without pause to a task of a shard that comes and goes, and to one of a
    shard that stays, while the watched shards change ten times: each time the coming shard
    is read again, its listing holds every message sent to it so far (those sent while its
    instance was starting included), and the steady shard never misses one."""
    await create_task(objects, namespace, "steady", 0)
    await create_task(objects, namespace, "coming", 1)
    recorder = Recorder()
    sent: dict[str, list[str]] = {"steady": [], "coming": []}
    async with running(api, namespace, recorder, kubeconfig, monkeypatch) as (watches, _):
        watches.want({0})
        await recorder.until(lambda: "steady" in recorder.poked)

        async def sender(stop: asyncio.Event) -> None:
            while not stop.is_set():
                for task, shard in (("steady", 0), ("coming", 1)):
                    sent[task].append(await send(objects, namespace, task, shard))

        def holds_all(task: str) -> bool:
            return {m.name for m in recorder.cache.messages(namespace, task)} >= set(sent[task])

        for rounds in range(1, 11):
            stop = asyncio.Event()
            sending = asyncio.create_task(sender(stop))
            await asyncio.sleep(0.05)
            watches.want({0, 1} if rounds % 2 else {0})
            await recorder.until(lambda r=rounds: watches.changes == r + 1 and watches.settled())
            await asyncio.sleep(0.05)
            stop.set()
            await sending
            await recorder.until(lambda: holds_all("steady"))
            if rounds % 2:
                await recorder.until(lambda: holds_all("coming"))
            else:
                assert recorder.cache.task(namespace, "coming") is None
    assert len(sent["coming"]) > 10


async def test_a_sharded_operators_objects_all_carry_their_trees_shard(
    tasks: Tasks, operator: Operator, model_server: ModelServer, kubectl: Kubectl, namespace: str
) -> None:
    """A root task created without the label, a message applied with kubectl, a sub-task and
    the turn records: every one ends up labelled with the root's shard, and the task is
    answered (a replica that watched only labelled objects would never see an unlabelled
    one otherwise)."""
    await model_server.control.script([{"type": "text", "text": "Hello."}])
    operator(shards=4, lease_namespace=namespace, lease_seconds=3)
    created = await tasks.create("release")
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", within=30)
    expected = str(shard_of(created["metadata"]["uid"], 4))

    by_hand = f"by-hand-{next(_names)}"
    applied = kubectl.apply(
        f"apiVersion: {API_VERSION}\nkind: {MESSAGE_KIND}\nmetadata:\n  name: {by_hand}\n"
        f"spec:\n  task: release\n  messageId: {by_hand}\n  sender: alice\n"
        "  parts:\n  - text: Hello there.\n"
    )
    assert applied.returncode == 0, applied.stderr
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=1, within=30)
    await tasks.send("release", "/sub-task Draft an outline")
    await tasks.wait_agent_message("release", "Created sub-task")

    for plural in ("harnesstasks", "harnessmessages", "harnessturns"):
        items = kubectl.get_json(plural)["items"]
        assert items, plural
        shards = {i["metadata"]["name"]: i["metadata"]["labels"].get(SHARD_LABEL) for i in items}
        assert set(shards.values()) == {expected}, (plural, shards)
    assert len(kubectl.get_json("harnesstasks")["items"]) == 2  # the task and its sub-task


@pytest.mark.parametrize(("sig", "code"), [(signal.SIGTERM, 143), (signal.SIGINT, 130)])
async def test_a_signal_stops_a_sharded_operator_which_hands_its_shards_back(
    api: Any, tasks: Tasks, operator: Operator, namespace: str, sig: signal.Signals, code: int
) -> None:
    """kopf takes the signal handlers over with each instance it starts; the operator hands
    them back, so a signal still stops the process, gracefully: its Leases are let go."""
    op = operator(shards=4, lease_namespace=namespace, lease_seconds=3)
    await tasks.create("release")
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", within=30)
    leases = client.CoordinationV1Api(api)

    async def held() -> list[str]:
        listed = await leases.list_namespaced_lease(namespace)
        return [lease.spec.holder_identity for lease in listed.items if lease.spec.holder_identity]

    assert len(await held()) == 5  # its member Lease and the four shards
    op.stop(sig)
    assert op.proc is not None
    assert op.proc.returncode == code, op.log()[-2000:]
    assert await held() == []
    assert "Traceback" not in op.log()
