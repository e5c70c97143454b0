"""Benchmark: turns on the real operator, local control plane, scripted model at zero delay.

Prints figures and asserts nothing. Targets on 2 cores: ≥ 50 turns/s, ≤ 4 API writes per
simple turn, message → parked p50 ≤ 100 ms, ≤ 300 MB operator memory at 1,000 parked tasks.

    python tests/bench/bench_turns.py [--turns 10] [--parked 1000]

- turns/s with 1, 10 and 100 concurrent conversations, each sending its next message as soon
  as the previous turn parked;
- message → parked latency: from just before the message is created to the watch event that
  shows the task parked on its new turn;
- API requests per simple turn, read from kube-apiserver's own request counters, split into
  the participant's write (the message) and the operator's writes and reads;
- the operator's resident memory with 100 and 1,000 parked tasks.
"""

from __future__ import annotations

import argparse
import asyncio
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from kubernetes_asyncio import client, watch

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import GROUP, PLURAL, VERSION
from tiny_harness.testing.model_server import ScriptedModelServer

NS = "bench"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


class Parked:
    """Follows the namespace's tasks and wakes whoever waits for a task to park on a turn."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.turns: dict[str, int] = {}
        self.changed = asyncio.Condition()

    async def follow(self) -> None:
        w = watch.Watch()
        objects = client.CustomObjectsApi(self.api).list_namespaced_custom_object
        while True:
            async with w.stream(objects, GROUP, VERSION, NS, PLURAL, timeout_seconds=3600) as s:
                async for event in s:
                    obj = event["object"]
                    status = obj.get("status") or {}
                    if status.get("state") == "TASK_STATE_INPUT_REQUIRED" and not status.get(
                        "runner"
                    ):
                        async with self.changed:
                            self.turns[obj["metadata"]["name"]] = int(status.get("turn", 0))
                            self.changed.notify_all()

    async def until(self, name: str, turn: int) -> float:
        async with self.changed:
            await self.changed.wait_for(lambda: self.turns.get(name, -1) >= turn)
        return time.perf_counter()


def rss_mb(pid: int) -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1]) / 1024
    return float("nan")


def apiserver_requests(cluster: LocalCluster) -> Counter[tuple[str, str]]:
    """kube-apiserver's request counters for our resources, by (verb, resource)."""
    text = cluster.admin().request("GET", "/metrics").body.decode()
    counts: Counter[tuple[str, str]] = Counter()
    for line in text.splitlines():
        if not line.startswith("apiserver_request_total{"):
            continue
        labels = dict(
            part.split("=", 1) for part in line[line.index("{") + 1 : line.index("}")].split(",")
        )
        resource = labels.get("resource", "").strip('"')
        if resource.startswith("harness") or resource == "events":
            sub = labels.get("subresource", "").strip('"')
            key = (labels["verb"].strip('"'), resource + (f"/{sub}" if sub else ""))
            counts[key] += int(float(line.rsplit(" ", 1)[1]))
    return counts


async def conversation(
    tasks: HarnessTasks, messages: HarnessMessages, parked: Parked, name: str, turns: int
) -> list[float]:
    latencies = []
    for turn in range(1, turns + 1):
        t0 = time.perf_counter()
        await messages.send(
            MessageSpec(
                task=name,
                message_id=f"{name}-{turn}",
                sender="alice",
                parts=(MessagePart(text=f"message {turn}"),),
            )
        )
        latencies.append(await parked.until(name, turn) - t0)
    return latencies


async def create_parked(tasks: HarnessTasks, parked: Parked, names: list[str]) -> None:
    sem = asyncio.Semaphore(20)

    async def one(name: str) -> None:
        async with sem:
            await tasks.create(
                name, {"goal": "benchmark", "participants": [{"id": "alice", "role": "assignee"}]}
            )
            await parked.until(name, 0)

    await asyncio.gather(*(one(n) for n in names))


async def run(cluster: LocalCluster, op_pid: int, turns: int, parked_total: int) -> None:
    api = await connect(cluster.kubeconfig)
    tasks = HarnessTasks(api, NS)
    messages = HarnessMessages(api, NS)
    parked = Parked(api)
    follower = asyncio.create_task(parked.follow())
    await asyncio.sleep(0.5)

    # API requests per simple turn, on one conversation, measured serially.
    await create_parked(tasks, parked, ["solo"])
    before = apiserver_requests(cluster)
    serial = await conversation(tasks, messages, parked, "solo", 20)
    after = apiserver_requests(cluster)
    diff = after - before
    writes = {
        k: v
        for k, v in diff.items()
        if k[0] in ("CREATE", "POST", "PATCH", "UPDATE", "PUT", "DELETE")
    }
    reads = {k: v for k, v in diff.items() if k not in writes and k[0] not in ("WATCH",)}
    participant = sum(v for (verb, res), v in writes.items() if res == "harnessmessages")
    operator_writes = sum(writes.values()) - participant
    print(
        f"API writes per simple turn: operator {operator_writes / 20:.2f} "
        f"(+ {participant / 20:.2f} for the participant's message) (target ≤ 4)"
    )
    for (verb, res), v in sorted(writes.items()):
        print(f"    {verb:7} {res:28} {v / 20:.2f}/turn")
    print(f"API reads per simple turn: {sum(reads.values()) / 20:.2f}")
    for (verb, res), v in sorted(reads.items()):
        print(f"    {verb:7} {res:28} {v / 20:.2f}/turn")
    ms = [x * 1000 for x in serial]
    print(
        f"message → parked, one conversation: p50 {percentile(ms, 50):.1f} ms, "
        f"p99 {percentile(ms, 99):.1f} ms (target p50 ≤ 100 ms)"
    )

    for concurrency in (1, 10, 100):
        names = [f"c{concurrency}-{i}" for i in range(concurrency)]
        await create_parked(tasks, parked, names)
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(conversation(tasks, messages, parked, n, turns) for n in names)
        )
        elapsed = time.perf_counter() - t0
        lat = [x * 1000 for r in results for x in r]
        print(
            f"{concurrency:>3} concurrent conversations: {len(lat) / elapsed:.1f} turns/s, "
            f"message → parked p50 {percentile(lat, 50):.1f} ms p99 {percentile(lat, 99):.1f} ms"
            " (target ≥ 50 turns/s)"
        )

    existing = len(parked.turns)
    for target in (100, parked_total):
        missing = [f"idle-{i}" for i in range(existing, target)]
        if missing:
            await create_parked(tasks, parked, missing)
            existing = target
        await asyncio.sleep(2)
        print(
            f"operator memory with {len(parked.turns)} parked tasks: {rss_mb(op_pid):.0f} MB "
            "(target ≤ 300 MB at 1,000)"
        )
    follower.cancel()
    await api.close()


def start_operator(cluster: LocalCluster, config: Path, liveness: str) -> subprocess.Popen[bytes]:
    subprocess.run(
        ["kubectl", f"--kubeconfig={cluster.kubeconfig}", "create", "ns", NS],
        check=True,
        capture_output=True,
    )
    return subprocess.Popen(
        [
            sys.executable,
            "-m",
            "tiny_harness.cli.main",
            "operator",
            "-n",
            NS,
            "--config",
            str(config),
            "--liveness",
            liveness,
        ],
        env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "BENCH_KEY": "x"},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )


async def main_async(args: argparse.Namespace) -> None:
    async with ScriptedModelServer() as model:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster, tempfile.TemporaryDirectory() as tmp:
            config = Path(tmp) / "config.toml"
            config.write_text(
                'provider = "openai"\n[openai]\nmodel = "bench"\n'
                f'base_url = "{model.openai_base_url}"\napi_key_env = "BENCH_KEY"\n'
                "[operator]\nlease_seconds = 15\n"
            )
            liveness = "http://127.0.0.1:18732/healthz"
            op = start_operator(cluster, config, liveness)
            try:
                deadline = time.monotonic() + 60
                while time.monotonic() < deadline:
                    try:
                        await asyncio.to_thread(urllib.request.urlopen, liveness, None, 1)
                        break
                    except OSError:
                        await asyncio.sleep(0.1)
                await run(cluster, op.pid, args.turns, args.parked)
            finally:
                op.terminate()
                op.wait(timeout=15)


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="turns per conversation")
    parser.add_argument("--parked", type=int, default=1000, help="parked tasks for memory")
    asyncio.run(main_async(parser.parse_args()))


if __name__ == "__main__":
    main()
