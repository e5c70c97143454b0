"""Benchmark: what a task costs etcd per message and per turn, and how long collecting a
finished one takes, on the local control plane (etcd, kube-apiserver, kube-controller-manager's
garbage collector) with the real operator and the scripted model at zero delay.

Prints figures and asserts nothing::

    python tests/bench/bench_retention.py [--turns 200]

What it prints:

(a) the size of each kind of object as the API server stores it (its JSON), averaged: a
    message, a turn record (one simple turn: the message drained, one model call, the reply),
    and the task itself after the turns;
(b) etcd's live database size (``etcd_mvcc_db_total_size_in_use_in_bytes``) before the turns,
    after them with the history of every write still kept, and after compacting that history
    (what the API server does every five minutes): the last, divided by the turns, is what a
    turn costs etcd for as long as the task is kept;
(c) the time per turn as the conversation grows (each turn sends the whole conversation to
    the model, so it grows with the history);
(d) the task cancelled with ``ttlSecondsAfterFinished: 0``: the time until the task and every
    message and turn record are gone, and etcd's live size after compacting again.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import sys
import tempfile
import time
import urllib.request
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_turns import ModelServerProcess, OperatorProcess, revision

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, TURN_PLURAL, VERSION

NAMESPACE = "retention"


def etcd_in_use(cluster: LocalCluster) -> int:
    """etcd's live database size in bytes (its own metric)."""
    url = f"http://127.0.0.1:{cluster.etcd_port}/metrics"
    with urllib.request.urlopen(url, timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("etcd_mvcc_db_total_size_in_use_in_bytes "):
                return int(float(line.split()[1]))
    raise SystemExit("etcd reported no etcd_mvcc_db_total_size_in_use_in_bytes")


def etcd_compact(cluster: LocalCluster) -> None:
    """Compact etcd's history up to now, as the API server does every five minutes, and
    wait for the live size to settle."""

    def post(path: str, body: dict[str, Any]) -> dict[str, Any]:
        request = urllib.request.Request(
            f"http://127.0.0.1:{cluster.etcd_port}{path}",
            data=json.dumps(body).encode(),
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(request, timeout=30) as resp:
            return dict(json.loads(resp.read()))

    revision_now = int(post("/v3/kv/range", {"key": "AA=="})["header"]["revision"])
    post("/v3/kv/compaction", {"revision": revision_now, "physical": True})


async def sizes(api: Any, plural: str) -> list[int]:
    from kubernetes_asyncio import client

    objects = client.CustomObjectsApi(api)
    listed = await objects.list_namespaced_custom_object(GROUP, VERSION, NAMESPACE, plural)
    return [len(json.dumps(o, separators=(",", ":"))) for o in listed["items"]]


async def until_turn(tasks: HarnessTasks, name: str, turn: int) -> None:
    while True:
        status = (await tasks.get(name)).get("status") or {}
        if (
            status.get("turn", 0) >= turn
            and not status.get("runner")
            and status.get("state") == "TASK_STATE_INPUT_REQUIRED"
        ):
            return
        await asyncio.sleep(0.003)


async def main_async(args: argparse.Namespace) -> None:
    model = ModelServerProcess()
    try:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster, tempfile.TemporaryDirectory() as tmp:
            api = await connect(cluster.kubeconfig)
            from kubernetes_asyncio import client

            await client.CoreV1Api(api).create_namespace({"metadata": {"name": NAMESPACE}})
            operator = OperatorProcess(cluster, NAMESPACE, model.config("responses"), Path(tmp))
            await operator.ready()
            print(f"code: {revision()}")
            print(f"bench_retention: {args.turns} turns of one conversation")
            tasks = HarnessTasks(api, NAMESPACE)
            messages = HarnessMessages(api, NAMESPACE)

            etcd_compact(cluster)
            before = etcd_in_use(cluster)
            spec = {
                "goal": "Talk.",
                "participants": [{"id": "alice", "role": "assignee"}],
                "ttlSecondsAfterFinished": 0,
            }
            task = await tasks.create("long", spec)
            await until_turn(tasks, "long", 0)
            started = last = time.monotonic()
            for turn in range(1, args.turns + 1):
                said = MessageSpec(
                    task="long",
                    message_id=f"m-{turn}",
                    sender="alice",
                    parts=(MessagePart(text=f"message {turn}"),),
                )
                await messages.send(said, task=task)
                await until_turn(tasks, "long", turn)
                if turn % max(args.turns // 5, 1) == 0:
                    now = time.monotonic()
                    block = max(args.turns // 5, 1)
                    print(
                        f"(c) turns {turn - block + 1}-{turn}: "
                        f"{(now - last) / block * 1000:.1f} ms per turn"
                    )
                    last = now
            elapsed = time.monotonic() - started
            print(f"    {args.turns} turns in {elapsed:.1f}s")

            message_sizes = await sizes(api, MESSAGE_PLURAL)
            record_sizes = await sizes(api, TURN_PLURAL)
            task_size = len(json.dumps(await tasks.get("long"), separators=(",", ":")))
            print(
                f"(a) a message: {sum(message_sizes) / len(message_sizes):,.0f} bytes; "
                f"a turn record: {sum(record_sizes) / len(record_sizes):,.0f} bytes; "
                f"the task: {task_size:,} bytes"
            )
            with_history = etcd_in_use(cluster)
            etcd_compact(cluster)
            await asyncio.sleep(1)
            compacted = etcd_in_use(cluster)
            print(
                f"(b) etcd in use: {before:,} bytes before; {with_history:,} after the turns "
                f"with their history; {compacted:,} compacted: "
                f"{(compacted - before) / args.turns:,.0f} bytes per turn kept "
                f"({(with_history - before) / args.turns:,.0f} until compaction)"
            )

            await messages.send(
                MessageSpec(task="long", message_id="stop", sender="alice", control="cancel"),
                task=task,
            )
            cancelled = time.monotonic()
            from kubernetes_asyncio.client.exceptions import ApiException

            objects = client.CustomObjectsApi(api)
            while True:
                left = 0
                for plural in ("harnesstasks", MESSAGE_PLURAL, TURN_PLURAL):
                    try:
                        listed = await objects.list_namespaced_custom_object(
                            GROUP, VERSION, NAMESPACE, plural
                        )
                    except ApiException:
                        continue
                    left += len(listed["items"])
                if not left:
                    break
                if time.monotonic() - cancelled > 300:
                    print(f"(d) still {left} objects after 300 s")
                    break
                await asyncio.sleep(0.1)
            print(
                f"(d) cancelled to collected (task, {len(message_sizes) + 1} messages, "
                f"{len(record_sizes)} turn records): {time.monotonic() - cancelled:.1f}s"
            )
            etcd_compact(cluster)
            await asyncio.sleep(1)
            print(f"    etcd in use after collection, compacted: {etcd_in_use(cluster):,} bytes")
            operator.stop()
            await api.close()
    finally:
        model.stop()
    print(f"load average {os.getloadavg()[0]:.2f} at the end")


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=200, help="turns of the conversation")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
