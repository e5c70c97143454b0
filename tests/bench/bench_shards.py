"""Benchmark: operator replicas splitting the tasks by shard, on the local control plane.

Prints figures and asserts nothing. For each replica count (``--replicas``, default 1, 2, 4),
in a namespace of its own, with the scripted model at zero delay:

(a) the shard split once the replicas have settled (shards held by each);
(b) ``--tasks`` tasks created and parked, and how many each replica owns (by its shards and
    the tasks' shard labels), with the largest distance from an even split;
(c) ``--conversations`` conversations among them, ``--turns`` turns each, all at once: turns/s,
    the turns each replica ran (from its own /metrics), and operator CPU milliseconds per turn,
    each replica's and their sum, beside kube-apiserver's and etcd's (on 2 cores the machine,
    not the operator, is the ceiling: what should stay flat is the operator's CPU per turn);
(d) with two or more replicas: one is SIGKILLed and every task it owned is sent a message at
    once; the time until the first and the last of them is answered by the others (the lease
    time, ``--lease``, is the floor: a dead replica's Leases must be seen unrenewed that long).

::

    python tests/bench/bench_shards.py [--replicas 1,2,4] [--tasks 1000] [--conversations 100]
        [--turns 5] [--shards 16] [--lease 6]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import signal
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from pathlib import Path

from kubernetes_asyncio import client

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_turns import (
    CpuMeter,
    ModelServerProcess,
    OperatorProcess,
    Parked,
    conversation,
    cpu_seconds,
    create_parked,
    percentile,
    revision,
    send,
)

from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.operator.shard_deal import labelled
from tiny_harness.operator.shard_lease_writes import ROLE_LABEL

_METRICS_PORTS = iter(range(18820, 18900))


def turns_finished(port: int) -> float:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
            text = resp.read().decode()
    except OSError:
        return float("nan")
    return sum(
        float(line.rsplit(" ", 1)[1])
        for line in text.splitlines()
        if line.startswith("tiny_harness_turns_finished_total{")
    )


async def shard_holders(api: client.ApiClient, namespace: str) -> dict[int, str]:
    listed = await client.CoordinationV1Api(api).list_namespaced_lease(
        namespace, label_selector=f"{ROLE_LABEL}=shard"
    )
    out = {}
    for lease in listed.items:
        if lease.spec.holder_identity:
            out[int(lease.metadata.name.rsplit("-", 1)[1])] = lease.spec.holder_identity
    return out


async def settled(api: client.ApiClient, namespace: str, replicas: int, shards: int) -> float:
    """Seconds until every shard is held and no replica holds two more than another."""
    started = time.perf_counter()
    while True:
        held = await shard_holders(api, namespace)
        counts = Counter(held.values())
        even = bool(counts) and max(counts.values()) - min(counts.values()) <= 1
        if len(held) == shards and len(counts) == replicas and even:
            return time.perf_counter() - started
        await asyncio.sleep(0.2)


async def one_count(
    cluster: LocalCluster,
    api: client.ApiClient,
    model: ModelServerProcess,
    tmp: Path,
    replicas: int,
    args: argparse.Namespace,
) -> None:
    namespace = f"bench-shards-{replicas}"
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": namespace}})
    ports = {f"op-{i}": next(_METRICS_PORTS) for i in range(replicas)}
    operators = {
        identity: OperatorProcess(
            cluster,
            namespace,
            model.config("responses"),
            tmp,
            identity=identity,
            log=args.logs / f"{namespace}-{identity}.log" if args.logs else None,
            operator={
                "lease_seconds": args.lease,
                "shards": args.shards,
                "lease_namespace": namespace,
                "metrics_bind": f"127.0.0.1:{port}",
            },
        )
        for identity, port in ports.items()
    }
    parked = Parked(api, namespace)
    try:
        await asyncio.gather(*(op.ready() for op in operators.values()))
        took = await settled(api, namespace, replicas, args.shards)
        held = Counter((await shard_holders(api, namespace)).values())
        print(
            f"\n{replicas} replica(s): shards held {'/'.join(str(held[i]) for i in ports)} "
            f"(settled {took:.1f}s after start)"
        )

        await parked.start()
        names = [f"t-{i}" for i in range(args.tasks)]
        created, all_parked = await create_parked(
            HarnessTasks(api, namespace), parked, names, concurrency=50
        )
        holders = await shard_holders(api, namespace)
        listed = await HarnessTasks(api, namespace).list()
        shards = {
            t["metadata"]["name"]: labelled(t["metadata"].get("labels"), args.shards)
            for t in listed
        }
        owner = {
            n: holders.get(shards[n], "unlabelled") if shards[n] is not None else "unlabelled"
            for n in names
        }
        owned = Counter(owner.values())
        fair = args.tasks / replicas
        worst = max(abs(owned[i] - fair) / fair for i in ports) * 100
        # A uid's shard is a fair coin: one replica's count is binomial around the even share.
        spread = (args.tasks * (1 / replicas) * (1 - 1 / replicas)) ** 0.5 / fair * 100
        print(
            f"    {args.tasks} tasks created in {created:.1f}s, all parked at {all_parked:.1f}s; "
            f"owned per replica {'/'.join(str(owned[i]) for i in ports)} "
            f"(largest distance from even: {worst:.1f}%; one standard deviation of a uniform "
            f"hash: {spread:.1f}%)"
        )

        etcd, apiserver = cluster.pids[:2]
        meter = CpuMeter(
            {**{i: op.pid for i, op in operators.items()}, "apiserver": apiserver, "etcd": etcd}
        )
        before = {i: turns_finished(p) for i, p in ports.items()}
        messages = HarnessMessages(api, namespace)
        t0 = time.perf_counter()
        latencies = await asyncio.gather(
            *(conversation(messages, parked, n, 1, args.turns) for n in names[: args.conversations])
        )
        elapsed = time.perf_counter() - t0
        total = args.conversations * args.turns
        ran = {i: turns_finished(p) - before[i] for i, p in ports.items()}
        cpu = meter.per(total)
        operator_cpu = sum(cpu[i] for i in ports)
        flat = [lat for conv in latencies for lat in conv]
        print(
            f"    {args.conversations} conversations x {args.turns} turns: "
            f"{total / elapsed:.1f} turns/s; message → parked p50 "
            f"{percentile(flat, 50) * 1000:.0f} ms, p99 {percentile(flat, 99) * 1000:.0f} ms"
        )
        print(f"    turns per replica: {'/'.join(f'{ran[i]:.0f}' for i in ports)}")
        print(
            f"    operator CPU ms/turn: {operator_cpu:.1f} "
            f"({', '.join(f'{i} {cpu[i]:.1f}' for i in ports)}); "
            f"apiserver {cpu['apiserver']:.1f}, etcd {cpu['etcd']:.1f}"
        )

        if replicas >= 2:
            victim = f"op-{replicas - 1}"
            theirs = [n for n in names if owner[n] == victim]
            operators[victim].proc.send_signal(signal.SIGKILL)
            operators[victim].proc.wait()
            killed = time.perf_counter()
            active = set(names[: args.conversations])
            answered = await asyncio.gather(
                *(
                    one_more(messages, parked, n, args.turns + 1 if n in active else 1)
                    for n in theirs
                )
            )
            first, last = min(answered) - killed, max(answered) - killed
            print(
                f"    failover: {victim} SIGKILLed; its {len(theirs)} tasks, each sent a message "
                f"at once, answered by the others {first:.1f}s (first) to {last:.1f}s (last) "
                f"after the kill (lease {args.lease:g}s)"
            )
    finally:
        await parked.stop()
        for op in operators.values():
            if op.proc.poll() is None:
                op.stop()


async def one_more(messages: HarnessMessages, parked: Parked, name: str, turn: int) -> float:
    """Send the message for ``turn``; the perf_counter() time the task parked on it."""
    await send(messages, name, turn, parked.tasks.get(name))
    return await parked.until(name, turn)


async def main_async(args: argparse.Namespace) -> None:
    model = ModelServerProcess()
    try:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster, tempfile.TemporaryDirectory() as tmp:
            api = await connect(cluster.kubeconfig)
            print(f"code: {revision()}")
            counts = [int(r) for r in args.replicas.split(",") if r.strip()]
            print(
                f"bench_shards: replicas {counts}, {args.shards} shards, lease {args.lease:g}s, "
                f"{args.tasks} tasks, {args.conversations} conversations x {args.turns} turns; "
                f"{os.cpu_count()} CPUs, load average {os.getloadavg()[0]:.2f}"
            )
            bench_cpu = cpu_seconds(os.getpid())
            for replicas in counts:
                await one_count(cluster, api, model, Path(tmp), replicas, args)
            print(f"\nthis bench's own CPU: {cpu_seconds(os.getpid()) - bench_cpu:.1f}s")
            await api.close()
    finally:
        model.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--replicas", default="1,2,4", help="comma-separated replica counts")
    parser.add_argument("--tasks", type=int, default=2000, help="tasks created per count")
    parser.add_argument("--conversations", type=int, default=100, help="of them, active")
    parser.add_argument("--turns", type=int, default=5, help="turns per conversation")
    parser.add_argument("--shards", type=int, default=16)
    parser.add_argument("--lease", type=float, default=6.0, help="lease seconds")
    parser.add_argument("--logs", type=Path, help="keep each operator's log in this folder")
    return parser


def main() -> None:
    asyncio.run(main_async(build_parser().parse_args()))


if __name__ == "__main__":
    main()
