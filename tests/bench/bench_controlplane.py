"""Benchmark: warm start of the local control plane, and create → status-initialised latency.

Prints figures and asserts nothing. Targets (2 cores): warm start ≤ 10 s; create → initialised
p50 ≤ 50 ms, measured over 200 tasks created one after another with the operator running as a
subprocess, from just before the create request to the watch event carrying the new status.

    python tests/bench/bench_controlplane.py [--tasks 200] [--starts 3]
"""

from __future__ import annotations

import argparse
import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from pathlib import Path

from kubernetes_asyncio import client, watch

from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.names import GROUP, PLURAL, VERSION


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def bench_warm_start(starts: int) -> list[float]:
    times = []
    for _ in range(starts):
        t0 = time.perf_counter()
        cluster = LocalCluster(crds=REPO_ROOT / "crds").start()
        times.append(time.perf_counter() - t0)
        cluster.stop()
    return times


async def bench_initialise(kubeconfig: Path, tasks: int) -> list[float]:
    api = await connect(kubeconfig)
    ns = "bench"
    await client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
    store = HarnessTasks(api, ns)
    latencies: list[float] = []
    seen: dict[str, float] = {}
    events: asyncio.Queue[str] = asyncio.Queue()

    async def follow() -> None:
        w = watch.Watch()
        objects = client.CustomObjectsApi(api).list_namespaced_custom_object
        async with w.stream(objects, GROUP, VERSION, ns, PLURAL, timeout_seconds=600) as stream:
            async for event in stream:
                obj = event["object"]
                if (obj.get("status") or {}).get("state"):
                    name = obj["metadata"]["name"]
                    if name not in seen:
                        seen[name] = time.perf_counter()
                        await events.put(name)

    follower = asyncio.create_task(follow())
    await asyncio.sleep(0.5)  # let the watch open before the first create
    for i in range(tasks):
        name = f"bench-{i}"
        t0 = time.perf_counter()
        await store.create(name, {"goal": f"benchmark task {i}"})
        while (await events.get()) != name:
            pass
        latencies.append(seen[name] - t0)
    follower.cancel()
    await api.close()
    return latencies


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tasks", type=int, default=200)
    parser.add_argument("--starts", type=int, default=3)
    args = parser.parse_args()

    LocalCluster(crds=REPO_ROOT / "crds").start().stop()  # build or warm the binaries first
    starts = bench_warm_start(args.starts)
    print(
        f"control plane warm start: median {statistics.median(starts):.2f} s, "
        f"max {max(starts):.2f} s over {len(starts)} starts (target ≤ 10 s)"
    )

    with LocalCluster(crds=REPO_ROOT / "crds") as cluster, tempfile.TemporaryDirectory() as tmp:
        # New conversation tasks park without a model call, so no model is ever reached.
        config = Path(tmp) / "config.toml"
        config.write_text(
            'provider = "openai"\n[openai]\nmodel = "unused"\n'
            'base_url = "http://127.0.0.1:9/v1"\napi_key_env = "BENCH_KEY"\n'
        )
        liveness = "http://127.0.0.1:18731/healthz"
        op = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tiny_harness.cli.main",
                "operator",
                "-n",
                "bench",
                "--liveness",
                liveness,
                "--config",
                str(config),
            ],
            env={**os.environ, "KUBECONFIG": str(cluster.kubeconfig), "BENCH_KEY": "unused"},
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        try:
            deadline = time.monotonic() + 60
            while time.monotonic() < deadline:
                if op.poll() is not None:
                    raise SystemExit(f"the operator exited with code {op.returncode}")
                try:
                    urllib.request.urlopen(liveness, timeout=1).close()
                    break
                except OSError:
                    time.sleep(0.1)
            lat = asyncio.run(bench_initialise(cluster.kubeconfig, args.tasks))
        finally:
            op.terminate()
            op.wait(timeout=15)
    ms = [x * 1000 for x in lat]
    print(
        f"create → status initialised over {len(ms)} tasks: p50 {percentile(ms, 50):.1f} ms, "
        f"p99 {percentile(ms, 99):.1f} ms, max {max(ms):.1f} ms (target p50 ≤ 50 ms)"
    )


if __name__ == "__main__":
    main()
