"""Benchmark: what the A2A gateway adds to a participant's write, measured against the same write
made directly on the Kubernetes API in the same run.

Everything real: a local control plane, the operator and a gateway as processes, the scripted
model answering at once. Two figures, each with its direct-API baseline:

- latency: SendStreamingMessage (a first message, which creates a task) to the first stream
  event, against creating the same HarnessTask and HarnessMessage directly; p50 and p99 over
  ``--messages`` sends, gateway and direct alternating, each turn let finish before the next
  measurement. Target: the gateway adds ≤ 5 ms at p50.
- throughput: ``--clients`` concurrent clients, each sending messages to its own task for
  ``--seconds`` (a gateway send counts at its first stream event), against as many direct
  writers creating HarnessMessages.

Prints figures and asserts nothing.

    python tests/bench/bench_gateway.py [--messages 200] [--clients 50] [--seconds 5]

``--clients 0`` skips the throughput figures. ``--profile FILE`` records the gateway with py-spy
(``pip install py-spy``) while it serves the throughput's sends, and only then: py-spy attaches
to the running gateway for each of its throughput runs, and the stacks (py-spy's raw format)
go to FILE, with a table of where they went (``profile_table.py``).
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import os
import shutil
import signal
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Awaitable, Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import profile_table
from a2a.client import Client, ClientConfig, ClientFactory
from a2a.types import Message, Part, Role, SendMessageRequest
from kubernetes_asyncio import client as k8s

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, Obj, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import API_VERSION, CONTEXT_ID_ANNOTATION, GROUP, KIND, PLURAL, VERSION

NAMESPACE = "bench"


def percentile(values: list[float], p: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def wait_healthy(url: str, proc: subprocess.Popen[bytes], what: str) -> None:
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit(f"{what} exited with {proc.returncode}")
        try:
            urllib.request.urlopen(url, timeout=1).close()
            return
        except OSError:
            time.sleep(0.1)
    raise SystemExit(f"{what} did not become healthy")


@contextlib.contextmanager
def processes(kubeconfig: Path, workdir: Path) -> Iterator[tuple[str, int]]:
    """The scripted model, the operator and a gateway; yields the gateway's URL and pid."""
    started: list[subprocess.Popen[bytes]] = []
    env = {**os.environ, "KUBECONFIG": str(kubeconfig), "BENCH_MODEL_KEY": "bench"}
    try:
        model = subprocess.Popen(
            [sys.executable, "-m", "tiny_harness.testing.model_server", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        started.append(model)
        assert model.stdout is not None
        model_url = model.stdout.readline().decode().strip()
        port = free_port()
        config = workdir / "config.toml"
        config.write_text(
            "\n".join(
                [
                    'provider = "openai"',
                    "[openai]",
                    'model = "scripted-model"',
                    f'base_url = "{model_url}/v1"',
                    'api_key_env = "BENCH_MODEL_KEY"',
                    "[gateway]",
                    f'bind = "127.0.0.1:{port}"',
                    f'namespace = "{NAMESPACE}"',
                    "rate_limit_per_minute = 100000000",
                    # The bench's own load, not a team's: no quota or stream limit in the way.
                    "max_live_tasks_per_participant = 1000000",
                    "max_live_tasks_per_namespace = 1000000",
                    "max_messages_per_participant = 100000000",
                    "max_messages_per_namespace = 100000000",
                    "max_streams_per_participant = 100000",
                ]
            )
            + "\n"
        )
        liveness = f"http://127.0.0.1:{free_port()}/healthz"
        operator = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tiny_harness.cli.main",
                "operator",
                "-n",
                NAMESPACE,
                "--config",
                str(config),
                "--liveness",
                liveness,
            ],
            env=env,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        started.append(operator)
        gateway_log = (workdir / "gateway.log").open("wb")
        command = [sys.executable, "-m", "tiny_harness.a2a_gateway", "--config", str(config)]
        gateway = subprocess.Popen(
            command,
            env=env,
            stdout=gateway_log,
            stderr=subprocess.STDOUT,
        )
        started.append(gateway)
        wait_healthy(liveness, operator, "the operator")
        url = f"http://127.0.0.1:{port}"
        wait_healthy(f"{url}/healthz", gateway, "the gateway")
        yield url, gateway.pid
    finally:
        for proc in reversed(started):
            proc.terminate()
            with contextlib.suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=15)
        log = workdir / "gateway.log"
        if os.environ.get("BENCH_GATEWAY_LOG") and log.exists():
            sys.stderr.write(log.read_text(errors="replace")[-6000:])


#: py-spy's sampling rate (per second); the table's CPU seconds are counted at it.
PROFILE_RATE = 200


class Profiler:
    """py-spy attached to the gateway while a block runs, each block's stacks kept apart."""

    def __init__(self, pid: int, workdir: Path) -> None:
        self.pid = pid
        self.workdir = workdir
        self.files: list[Path] = []
        self.spy = shutil.which("py-spy") or str(Path(sys.executable).with_name("py-spy"))

    @contextlib.asynccontextmanager
    async def recording(self) -> AsyncIterator[None]:
        out = self.workdir / f"profile-{len(self.files)}.txt"
        spy = await asyncio.create_subprocess_exec(
            *(self.spy, "record", "--pid", str(self.pid), "-r", str(PROFILE_RATE)),
            *("-f", "raw", "-o", str(out)),
            stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.DEVNULL,
        )
        assert spy.stdout is not None
        # It says so once it has attached; until then nothing is sampled.
        await asyncio.wait_for(spy.stdout.readline(), timeout=30)
        try:
            yield
        finally:
            # py-spy writes its stacks when interrupted.
            spy.send_signal(signal.SIGINT)
            await spy.wait()
            self.files.append(out)

    def write(self, path: Path) -> str:
        """All the blocks' stacks, summed, to ``path``; the table of where they went."""
        counts: Counter[str] = Counter()
        for file in self.files:
            for frames, count in profile_table.samples(file.read_text().splitlines()):
                counts[";".join(frames)] += count
        path.write_text("".join(f"{stack} {n}\n" for stack, n in counts.items()))
        rows, busy, whole = profile_table.table(path.read_text().splitlines())
        return profile_table.render(rows, busy, whole, rate=PROFILE_RATE)


async def a2a_client(url: str, participant: str) -> tuple[Client, httpx.AsyncClient]:
    http = httpx.AsyncClient(
        headers={"X-Participant-Id": participant},
        timeout=60,
        limits=httpx.Limits(max_connections=4),
    )
    factory = ClientFactory(
        ClientConfig(httpx_client=http, supported_protocol_bindings=["JSONRPC"])
    )
    return await factory.create_from_url(url), http


def message(text: str, task_id: str = "") -> Message:
    return Message(
        message_id=str(uuid.uuid4()), task_id=task_id, role=Role.ROLE_USER, parts=[Part(text=text)]
    )


async def first_event(a2a: Client, msg: Message) -> str:
    """Send over SendStreamingMessage and stop at the first event; the task id it names."""
    async with contextlib.aclosing(a2a.send_message(SendMessageRequest(message=msg))) as events:
        event = await anext(events)
    return str(event.task.id if event.HasField("task") else event.status_update.task_id)


class Direct:
    """The same writes the gateway makes, made directly on the API."""

    def __init__(self, api: Any) -> None:
        self.objects = k8s.CustomObjectsApi(api)
        self.messages = HarnessMessages(api, NAMESPACE)

    async def start_task(self, participant: str, text: str) -> tuple[str, Obj]:
        name = str(uuid.uuid4())
        body = {
            "apiVersion": API_VERSION,
            "kind": KIND,
            "metadata": {"name": name, "annotations": {CONTEXT_ID_ANNOTATION: name}},
            "spec": {"goal": text, "participants": [{"id": participant, "role": "assignee"}]},
        }
        created = await self.objects.create_namespaced_custom_object(
            GROUP, VERSION, NAMESPACE, PLURAL, body
        )
        await self.send(name, participant, text, created)
        return name, created

    async def send(self, task: str, participant: str, text: str, obj: Obj) -> None:
        spec = MessageSpec(
            task=task,
            message_id=str(uuid.uuid4()),
            sender=participant,
            parts=(MessagePart(text=text),),
        )
        await self.messages.send(spec, task=obj)


def gateway_mean_ms(url: str, method: str) -> float:
    """The gateway's own mean time to first byte for ``method``, from its /metrics."""
    with urllib.request.urlopen(f"{url}/metrics", timeout=5) as response:
        text = response.read().decode()
    values: dict[str, float] = {}
    for line in text.splitlines():
        for kind in ("sum", "count"):
            prefix = f'tiny_harness_gateway_request_seconds_{kind}{{method="{method}"}} '
            if line.startswith(prefix):
                values[kind] = float(line[len(prefix) :])
    return 1000 * values.get("sum", 0.0) / max(values.get("count", 1.0), 1.0)


async def timed(action: Callable[[], Awaitable[object]]) -> float:
    t0 = time.perf_counter()
    await action()
    return time.perf_counter() - t0


async def bench_latency(
    url: str, api: Any, count: int
) -> tuple[list[float], list[float], list[float]]:
    """Gateway sends, direct writes and bare HTTP round trips to the gateway, interleaved.

    Each send is timed to its first stream event (each direct write to its last write), and
    then its turn is let finish before the next measurement, so that every figure is taken on
    a quiet system rather than behind the operator's backlog.
    """
    direct = Direct(api)
    tasks = HarnessTasks(api, NAMESPACE)
    a2a, http = await a2a_client(url, "latency")
    gateway_s: list[float] = []
    direct_s: list[float] = []
    hop_s: list[float] = []

    async def via_gateway(text: str) -> float:
        t0 = time.perf_counter()
        stream = a2a.send_message(SendMessageRequest(message=message(text)))
        async with contextlib.aclosing(stream) as events:
            await anext(events)
            elapsed = time.perf_counter() - t0
            async for _ in events:  # the stream ends when the turn has answered
                pass
        return elapsed

    async def via_api(text: str) -> float:
        t0 = time.perf_counter()
        name, _ = await direct.start_task("latency", text)
        elapsed = time.perf_counter() - t0
        for _ in range(6000):  # the turn answers within a minute, or the bench is broken
            status = (await tasks.get(name)).get("status") or {}
            if status.get("state") == "TASK_STATE_INPUT_REQUIRED":
                break
            await asyncio.sleep(0.01)
        return elapsed

    for i in range(5):  # warm both paths (connections, imports, caches)
        await via_gateway(f"warm {i}")
        await via_api(f"warm {i}")
    for i in range(count):
        gateway_s.append(await via_gateway(f"gateway {i}"))
        direct_s.append(await via_api(f"direct {i}"))
        hop_s.append(await timed(lambda: http.get(f"{url}/healthz")))
    await a2a.close()
    await http.aclose()
    return gateway_s, direct_s, hop_s


def cpu_seconds(pid: int) -> float:
    """The process's CPU time so far (user and system), from /proc."""
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


@dataclass
class Throughput:
    """Messages per second each way, and the CPU each spent per message: the gateway's
    process per send, and the bench's own process per direct write (the same writes, made
    by the same client library). On a loaded machine the rates move with the load; the CPU
    per message much less."""

    gateway_rate: float
    direct_rate: float
    gateway_cpu_ms: float
    direct_cpu_ms: float
    #: The gateway's CPU per direct write while only the direct writes ran (its feed).
    feed_cpu_ms: float


async def bench_throughput(
    url: str, pid: int, api: Any, clients: int, seconds: float, profiler: Profiler | None = None
) -> Throughput:
    direct = Direct(api)
    people = [f"client-{i}" for i in range(clients)]
    tasks = [await direct.start_task(p, "Ready.") for p in people]
    connections = [await a2a_client(url, p) for p in people]

    async def run(send: Callable[[int], Awaitable[object]]) -> tuple[int, float]:
        stop = time.perf_counter() + seconds
        done = 0

        async def one(i: int) -> None:
            nonlocal done
            while time.perf_counter() < stop:
                await send(i)
                done += 1

        t0 = time.perf_counter()
        await asyncio.gather(*(one(i) for i in range(clients)))
        return done, time.perf_counter() - t0

    async def via_gateway(i: int) -> None:
        await first_event(connections[i][0], message("More.", tasks[i][0]))

    async def via_api(i: int) -> None:
        await direct.send(tasks[i][0], people[i], "More.", tasks[i][1])

    sent = {"gateway": 0, "direct": 0}
    elapsed = {"gateway": 0.0, "direct": 0.0}
    cpu = {"gateway": 0.0, "direct": 0.0, "feed": 0.0}
    for _ in range(2):  # alternate, so drift (operator backlog, etcd size) hits both alike
        own, theirs = time.process_time(), cpu_seconds(pid)
        done, took = await run(via_api)
        cpu["direct"] += time.process_time() - own
        cpu["feed"] += cpu_seconds(pid) - theirs
        sent["direct"] += done
        elapsed["direct"] += took
        async with profiler.recording() if profiler else contextlib.nullcontext():
            theirs = cpu_seconds(pid)
            done, took = await run(via_gateway)
            cpu["gateway"] += cpu_seconds(pid) - theirs
        sent["gateway"] += done
        elapsed["gateway"] += took
    for a2a, http in connections:
        await a2a.close()
        await http.aclose()
    return Throughput(
        gateway_rate=sent["gateway"] / elapsed["gateway"],
        direct_rate=sent["direct"] / elapsed["direct"],
        gateway_cpu_ms=1000 * cpu["gateway"] / max(sent["gateway"], 1),
        direct_cpu_ms=1000 * cpu["direct"] / max(sent["direct"], 1),
        feed_cpu_ms=1000 * cpu["feed"] / max(sent["direct"], 1),
    )


async def bench(
    url: str, pid: int, kubeconfig: Path, args: argparse.Namespace, profiler: Profiler | None
) -> None:
    api = await connect(kubeconfig)
    try:
        gateway_s, direct_s, hop_s = await bench_latency(url, api, args.messages)
        g = [x * 1000 for x in gateway_s]
        d = [x * 1000 for x in direct_s]
        h = [x * 1000 for x in hop_s]
        inside = gateway_mean_ms(url, "SendStreamingMessage")
        added = percentile(g, 50) - percentile(d, 50)
        paired = statistics.median(a - b for a, b in zip(g, d, strict=True))
        print(
            f"first message → first stream event over {len(g)} sends:\n"
            f"  gateway  p50 {percentile(g, 50):6.2f} ms  p99 {percentile(g, 99):6.2f} ms\n"
            f"  direct   p50 {percentile(d, 50):6.2f} ms  p99 {percentile(d, 99):6.2f} ms "
            "(create HarnessTask + HarnessMessage)\n"
            f"  inside the gateway, request to first byte (mean, from its metrics): {inside:.2f} ms"
            f" (its two API writes included)\n"
            f"  direct mean {statistics.mean(d):.2f} ms\n"
            f"  a bare HTTP round trip to the gateway (GET /healthz): "
            f"p50 {percentile(h, 50):.2f} ms\n"
            f"  median of the paired differences (each send next to its direct write): "
            f"{paired:.2f} ms\n"
            f"  the gateway adds {added:.2f} ms at p50 "
            f"(ratio {percentile(g, 50) / percentile(d, 50):.2f}); "
            f"target ≤ 5 ms: {'met' if added <= 5 else 'NOT met'}"
        )
        if args.clients == 0:
            return
        rates = await bench_throughput(url, pid, api, args.clients, args.seconds, profiler)
        print(
            f"messages per second, {args.clients} concurrent clients, {args.seconds:.0f} s twice:\n"
            f"  gateway {rates.gateway_rate:8.1f}/s (SendStreamingMessage to the first event)\n"
            f"  direct  {rates.direct_rate:8.1f}/s (create HarnessMessage)\n"
            f"  gateway / direct = {rates.gateway_rate / rates.direct_rate:.2f}\n"
            f"CPU per message: the gateway's process {rates.gateway_cpu_ms:.2f} ms a send; the "
            f"direct writer's {rates.direct_cpu_ms:.2f} ms a write (the gateway's feed meanwhile "
            f"{rates.feed_cpu_ms:.2f} ms a write)"
        )
        tasks = await HarnessTasks(api, NAMESPACE).list()
        print(f"({len(tasks)} tasks in the namespace at the end; the operator ran throughout)")
        if profiler is not None:
            print(f"the gateway's profile over its throughput runs ({args.profile}):")
            print(profiler.write(args.profile))
    finally:
        await api.close()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--messages", type=int, default=200)
    parser.add_argument("--clients", type=int, default=50)
    parser.add_argument("--seconds", type=float, default=5.0)
    parser.add_argument(
        "--profile",
        type=Path,
        default=None,
        help="record the gateway's stacks with py-spy during its throughput runs (to this file)",
    )
    args = parser.parse_args()
    with (
        LocalCluster(crds=REPO_ROOT / "crds") as cluster,
        tempfile.TemporaryDirectory() as workdir,
    ):
        subprocess.run(
            ["kubectl", f"--kubeconfig={cluster.kubeconfig}", "create", "namespace", NAMESPACE],
            check=True,
            capture_output=True,
        )
        with processes(cluster.kubeconfig, Path(workdir)) as (url, pid):
            profiler = Profiler(pid, Path(workdir)) if args.profile else None
            asyncio.run(bench(url, pid, cluster.kubeconfig, args, profiler))


if __name__ == "__main__":
    main()
