"""Benchmark: turns on the real operator, local control plane, scripted model at zero delay.

Prints figures and asserts nothing. Everything runs in one process run on one control plane,
and every latency is printed beside the reference measured in that same run: a raw status
PATCH round trip (merge-patch of the status subresource of one HarnessTask with the async
client, exactly as ``HarnessTasks.patch_status`` sends it, on a task in a namespace no operator
watches). The machine is shared, so absolute milliseconds drift between runs; the ratios less.

Targets (2 cores):

- message → parked p50 ≤ 6 x the raw PATCH p50;
- ≤ 1 API read per simple turn (and the operator's writes are printed beside it);
- ≥ 60 turns/s with 100 concurrent conversations;
- operator RSS ≤ 300 MB with 10,000 parked tasks.

::

    python tests/bench/bench_turns.py [--turns 10] [--serial 40] [--patches 3]
        [--parked 10000] [--create-concurrency 100] [--providers responses,messages]
        [--memory-provider responses]

What it prints, per model wire format (``--providers``; each runs its own operator, in its own
namespace, on the same control plane):

(a) the raw status PATCH round trip p50/p99 — the reference. ``--patches`` of them are sent
    before each serial turn (after a short settle), so the reference sees the same machine as
    the turns do;
(b) message → parked p50/p99 for one conversation (``--serial`` turns, one after another),
    from just before the message is created to the watch event that shows the task parked on
    its new turn, and its ratio to the raw PATCH p50;
(c) API requests per simple turn over those serial turns, from kube-apiserver's own
    ``apiserver_request_total`` counters: the participant's message create, then the
    operator's writes and reads by verb and resource. WATCH requests are long-lived (kopf's
    and this bench's), counted only when they end, so they are left out; the bench's own
    reference PATCHes are subtracted;
(d) turns/s with 1, 10 and 100 concurrent conversations (``--turns`` each, every conversation
    sending its next message as soon as its previous turn parked), with message → parked
    p50/p99 and CPU milliseconds per turn of each process (operator, kube-apiserver, etcd,
    scripted model server, this bench): on 2 cores, 2000 / the sum is the ceiling on turns/s.
    Beside it, the milliseconds per turn each of the operator and kube-apiserver spent
    runnable but waiting for a CPU (schedstat): large values mean the machine was busy.

Then, once, with a fresh operator of ``--memory-provider`` in a namespace of its own:

(e) operator RSS when idle, and with 1,000 and ``--parked`` parked tasks (created concurrently,
    ``--create-concurrency`` creates in flight, each waited for until the operator has
    initialised it; the creation time and rate are printed), plus the peak RSS; then turns/s
    with 100 conversations among those parked tasks, since a per-pass cost that grows with
    the number of tasks shows there.

Changes from the earlier version of this bench: the memory figure is at ``--parked`` tasks
(default 10,000, was 1,000; use e.g. ``--parked 2000`` for a quick run) on an operator of its
own; ``--turns`` is unchanged; the scripted model server runs as a subprocess (in-process it
shared this bench's event loop and slowed the measuring side); the serial phase has its own
``--serial`` count (was a fixed 20).

The bench uses the OpenAI Responses adapter (``provider = "openai"``, ``api = "responses"``)
as it always did, and the Anthropic Messages adapter (``provider = "anthropic"``) beside it;
the scripted model server speaks both. ``--providers chat`` adds OpenAI Chat Completions.

The first line printed names the commit measured and any uncommitted change under
``tiny_harness/``. ``tests/bench/profile_turn.py`` breaks one turn's milliseconds down
(timestamps, py-spy) and measures candidate changes to the operator before they are made.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections import Counter
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from kubernetes_asyncio import client, watch

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import GROUP, PLURAL, VERSION
from tiny_harness.testing.otlp_collector import Collector

REF_NS = "bench-ref"
PARKED = "TASK_STATE_INPUT_REQUIRED"
WRITE_VERBS = ("CREATE", "POST", "PATCH", "UPDATE", "PUT", "DELETE", "APPLY")

#: Targets, printed beside the figures.
TARGET_RATIO = 6.0
TARGET_READS = 1.0
TARGET_TURNS_100 = 60.0
TARGET_RSS_MB = 300.0
TARGET_PARKED = 10_000

PROVIDERS = {
    "responses": "OpenAI Responses (provider openai, api responses)",
    "messages": "Anthropic Messages (provider anthropic)",
    "chat": "OpenAI Chat Completions (provider openai, api chat)",
}


def percentile(values: Sequence[float], p: float) -> float:
    if not values:
        return float("nan")
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, round(p / 100 * (len(ordered) - 1)))]


def p50_p99(ms: Sequence[float]) -> str:
    return f"p50 {percentile(ms, 50):6.1f} ms, p99 {percentile(ms, 99):6.1f} ms"


# -- watching tasks park ------------------------------------------------------------------------


class Parked:
    """Follows one namespace's tasks and wakes whoever waits for a task to park on a turn.

    ``on_event`` (if set) hears every parked event with its arrival time, for the profiler.
    """

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self.api = api
        self.namespace = namespace
        self.turns: dict[str, int] = {}
        #: Each task's metadata as last seen: a client sends with the task it has read, so a
        #: message carries the task's shard label (kube/labels.py).
        self.tasks: dict[str, dict[str, Any]] = {}
        self._waiters: dict[str, list[tuple[int, asyncio.Future[float]]]] = {}
        self.on_event: Callable[[str, int, float], None] | None = None
        self._task: asyncio.Task[None] | None = None

    async def start(self) -> None:
        self._task = asyncio.create_task(self._follow())
        await asyncio.sleep(0.3)  # let the watch open before the first write

    async def stop(self) -> None:
        if self._task is not None:
            self._task.cancel()
            await asyncio.gather(self._task, return_exceptions=True)

    async def _follow(self) -> None:
        objects = client.CustomObjectsApi(self.api).list_namespaced_custom_object
        while True:
            w = watch.Watch()
            try:
                async with w.stream(
                    objects, GROUP, VERSION, self.namespace, PLURAL, timeout_seconds=3600
                ) as stream:
                    async for event in stream:
                        self._seen(event["object"], time.perf_counter())
            except asyncio.CancelledError:
                raise
            except Exception as exc:  # a dropped watch: open it again (LIST replays the state)
                first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
                print(f"    (watch on {self.namespace} opened again: {first})", file=sys.stderr)
                await asyncio.sleep(0.1)

    def _seen(self, obj: dict[str, Any], now: float) -> None:
        self.tasks[obj["metadata"]["name"]] = {"metadata": obj["metadata"]}
        status = obj.get("status") or {}
        if status.get("state") != PARKED or status.get("runner"):
            return
        name = obj["metadata"]["name"]
        turn = int(status.get("turn", 0))
        if turn <= self.turns.get(name, -1):
            return
        self.turns[name] = turn
        if self.on_event is not None:
            self.on_event(name, turn, now)
        waiters = self._waiters.get(name)
        if waiters:
            keep = []
            for want, fut in waiters:
                if turn >= want:
                    if not fut.done():
                        fut.set_result(now)
                else:
                    keep.append((want, fut))
            if keep:
                self._waiters[name] = keep
            else:
                del self._waiters[name]

    async def until(self, name: str, turn: int) -> float:
        """perf_counter() when the watch showed ``name`` parked on ``turn`` (or later)."""
        if self.turns.get(name, -1) >= turn:
            return time.perf_counter()
        fut: asyncio.Future[float] = asyncio.get_running_loop().create_future()
        self._waiters.setdefault(name, []).append((turn, fut))
        return await fut


# -- processes ------------------------------------------------------------------------------------


def rss_mb(pid: int, field_name: str = "VmRSS") -> float:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith(field_name + ":"):
            return int(line.split()[1]) / 1024
    return float("nan")


_TICK = os.sysconf("SC_CLK_TCK")


def cpu_seconds(pid: int) -> float:
    """User + system CPU of a process (all its threads), from /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return float("nan")
    fields = stat[stat.rindex(")") + 2 :].split()
    return (int(fields[11]) + int(fields[12])) / _TICK


def run_queue_wait(pid: int) -> float:
    """Seconds the process's threads spent runnable but waiting for a CPU (schedstat)."""
    total = 0
    try:
        for task in Path(f"/proc/{pid}/task").iterdir():
            try:
                total += int((task / "schedstat").read_text().split()[1])
            except (OSError, IndexError, ValueError):
                continue
    except OSError:
        return float("nan")
    return total / 1e9


class CpuMeter:
    """CPU seconds (and run-queue waits) of named processes between two points."""

    def __init__(self, pids: dict[str, int]) -> None:
        self.pids = pids
        self.start = {k: cpu_seconds(p) for k, p in pids.items()}
        self.start_wait = {k: run_queue_wait(p) for k, p in pids.items()}

    def per(self, count: int) -> dict[str, float]:
        """CPU milliseconds per unit (turn) since the meter started."""
        return {
            k: (cpu_seconds(p) - self.start[k]) * 1000 / max(count, 1) for k, p in self.pids.items()
        }

    def waits(self, count: int) -> dict[str, float]:
        """Milliseconds per unit spent waiting for a CPU (a busy machine shows here)."""
        return {
            k: (run_queue_wait(p) - self.start_wait[k]) * 1000 / max(count, 1)
            for k, p in self.pids.items()
        }


def format_cpu(per_turn: dict[str, float], waits: dict[str, float] | None = None) -> str:
    total = sum(per_turn.values())
    parts = ", ".join(f"{k} {v:.1f}" for k, v in per_turn.items())
    text = f"CPU ms/turn: {parts}; total {total:.1f} (→ ≤ {2000 / max(total, 1e-9):.0f} turns/s)"
    if waits:
        text += "; waiting for a CPU, ms/turn: " + ", ".join(
            f"{k} {v:.1f}" for k, v in waits.items() if k in ("operator", "apiserver")
        )
    return text


class ModelServerProcess:
    """The scripted model server in a process of its own (plain text replies, no delay)."""

    def __init__(self) -> None:
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tiny_harness.testing.model_server", "--port", "0"],
            stdout=subprocess.PIPE,
            stderr=subprocess.DEVNULL,
        )
        assert self.proc.stdout is not None
        self.base_url = self.proc.stdout.readline().decode().strip()
        if not self.base_url.startswith("http"):
            raise SystemExit("the scripted model server did not start")

    def config(self, provider: str) -> str:
        if provider == "messages":
            return (
                'provider = "anthropic"\n[anthropic]\nmodel = "bench"\n'
                f'base_url = "{self.base_url}"\napi_key_env = "BENCH_KEY"\n'
            )
        api = "chat" if provider == "chat" else "responses"
        return (
            f'provider = "openai"\n[openai]\nmodel = "bench"\napi = "{api}"\n'
            f'base_url = "{self.base_url}/v1"\napi_key_env = "BENCH_KEY"\n'
        )

    def stop(self) -> None:
        self.proc.terminate()
        self.proc.wait(timeout=10)


_LIVENESS_PORTS = iter(range(18740, 18800))


class OperatorProcess:
    """``tiny-harness operator -n NS`` as a subprocess, with the given provider section.

    ``wrap`` prefixes the command (a profiler); ``entry`` replaces the entry point (anything
    after ``python`` that takes the CLI's arguments), ``env`` adds to the environment,
    ``operator`` to the [operator] settings.
    """

    def __init__(
        self,
        cluster: LocalCluster,
        namespace: str,
        provider_config: str,
        tmp: Path,
        *,
        wrap: Sequence[str] = (),
        entry: Sequence[str] = ("-m", "tiny_harness.cli.main"),
        env: dict[str, str] | None = None,
        log: Path | None = None,
        operator: dict[str, Any] | None = None,
        identity: str | None = None,
    ) -> None:
        settings = {"lease_seconds": 15, **(operator or {})}
        config = tmp / f"config-{namespace}-{identity or 'op'}.toml"
        config.write_text(
            provider_config
            + "[operator]\n"
            + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
        )
        self.liveness = f"http://127.0.0.1:{next(_LIVENESS_PORTS)}/healthz"
        out = open(log, "wb") if log else subprocess.DEVNULL  # noqa: SIM115
        self.proc = subprocess.Popen(
            [
                *wrap,
                sys.executable,
                *entry,
                "operator",
                "-n",
                namespace,
                "--config",
                str(config),
                "--liveness",
                self.liveness,
                *(["--identity", identity] if identity else []),
            ],
            env={
                **os.environ,
                "KUBECONFIG": str(cluster.kubeconfig),
                "BENCH_KEY": "x",
                **(env or {}),
            },
            stdout=out,
            stderr=out,
        )
        self._pid: int | None = None

    @property
    def pid(self) -> int:
        """The operator's own pid (the Python process, below a profiler if wrapped)."""
        if self._pid is None:
            self._pid = self.proc.pid
            # Under a wrapper the Python process is the wrapper's child.
            children = Path(f"/proc/{self.proc.pid}/task/{self.proc.pid}/children")
            if children.exists():
                kids = children.read_text().split()
                if kids and "python" not in Path(f"/proc/{self.proc.pid}/comm").read_text():
                    self._pid = int(kids[0])
        return self._pid

    async def ready(self, within: float = 60) -> None:
        deadline = time.monotonic() + within
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise SystemExit(f"the operator exited with code {self.proc.returncode}")
            try:
                await asyncio.to_thread(urllib.request.urlopen, self.liveness, None, 1)
                return
            except OSError:
                await asyncio.sleep(0.1)
        raise SystemExit("the operator did not become live")

    def stop(self) -> None:
        self.proc.terminate()
        try:
            self.proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


# -- the API server's counters --------------------------------------------------------------------


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


# -- the bench's own traffic ----------------------------------------------------------------------


@dataclass
class Bench:
    cluster: LocalCluster
    api: client.ApiClient
    model: ModelServerProcess
    tmp: Path
    pids: dict[str, int] = field(default_factory=dict)

    def meter(self, operator: OperatorProcess) -> CpuMeter:
        etcd, apiserver = self.cluster.pids[:2]
        return CpuMeter(
            {
                "operator": operator.pid,
                "apiserver": apiserver,
                "etcd": etcd,
                "model": self.model.proc.pid,
                "bench": os.getpid(),
            }
        )


class Reference:
    """The raw status PATCH round trip, on a task no operator watches."""

    def __init__(self, api: client.ApiClient) -> None:
        self.api = api
        self.tasks = HarnessTasks(api, REF_NS)
        self.rv: str | None = None
        self.sent = 0
        self.ms: list[float] = []

    async def setup(self) -> None:
        await client.CoreV1Api(self.api).create_namespace({"metadata": {"name": REF_NS}})
        obj = await self.tasks.create(
            "reference",
            {"goal": "reference", "participants": [{"id": "alice", "role": "assignee"}]},
        )
        self.rv = obj["metadata"]["resourceVersion"]
        for _ in range(5):  # warm the connection
            await self.patch(record=False)

    async def patch(self, *, record: bool = True) -> float:
        """One merge-patch of the status, conditional on the version last written (as the
        operator's status writes are); the round trip in ms."""
        self.sent += 1
        t0 = time.perf_counter()
        obj = await self.tasks.patch_status(
            "reference",
            {
                "state": PARKED,
                "subState": "TASK_SUB_STATE_AWAITING_NEXT_MESSAGE",
                "message": f"reference {self.sent}",
                "runner": None,
            },
            resource_version=self.rv,
        )
        ms = (time.perf_counter() - t0) * 1000
        self.rv = obj["metadata"]["resourceVersion"]
        if record:
            self.ms.append(ms)
        return ms


async def send(
    messages: HarnessMessages, name: str, turn: int, task: dict[str, Any] | None = None
) -> None:
    await messages.send(
        MessageSpec(
            task=name,
            message_id=f"{name}-{turn}",
            sender="alice",
            parts=(MessagePart(text=f"message {turn}"),),
        ),
        task=task,
    )


async def one_turn(
    messages: HarnessMessages, parked: Parked, name: str, turn: int
) -> tuple[float, float]:
    """Send the message for ``turn``; (t0, parked time) in perf_counter seconds."""
    t0 = time.perf_counter()
    await send(messages, name, turn, parked.tasks.get(name))
    return t0, await parked.until(name, turn)


async def conversation(
    messages: HarnessMessages, parked: Parked, name: str, first: int, turns: int
) -> list[float]:
    latencies = []
    for turn in range(first, first + turns):
        t0, t1 = await one_turn(messages, parked, name, turn)
        latencies.append(t1 - t0)
    return latencies


async def create_parked(
    tasks: HarnessTasks, parked: Parked, names: Sequence[str], concurrency: int = 20
) -> tuple[float, float]:
    """Create tasks concurrently and wait for each to be parked by the operator.

    Returns (seconds until every create returned, seconds until every task was parked)."""
    sem = asyncio.Semaphore(concurrency)
    t0 = time.perf_counter()
    created: list[float] = []

    async def one(name: str) -> None:
        async with sem:
            await tasks.create(
                name, {"goal": "benchmark", "participants": [{"id": "alice", "role": "assignee"}]}
            )
            created.append(time.perf_counter())
        await parked.until(name, 0)

    await asyncio.gather(*(one(n) for n in names))
    return (max(created) - t0 if created else 0.0), time.perf_counter() - t0


# -- the phases -----------------------------------------------------------------------------------


@dataclass
class TurnFigures:
    provider: str
    ref_ms: list[float] = field(default_factory=list)
    serial_ms: list[float] = field(default_factory=list)
    writes: dict[tuple[str, str], float] = field(default_factory=dict)
    reads: dict[tuple[str, str], float] = field(default_factory=dict)
    participant: float = 0.0
    rates: dict[int, tuple[float, list[float], dict[str, float], dict[str, float]]] = field(
        default_factory=dict
    )


async def serial_phase(
    bench: Bench,
    ref: Reference,
    namespace: str,
    parked: Parked,
    figures: TurnFigures,
    serial: int,
    patches: int,
    *,
    before_turn: Callable[[int], Awaitable[None]] | None = None,
    after_turn: Callable[[int, float, float], Awaitable[None]] | None = None,
) -> None:
    tasks = HarnessTasks(bench.api, namespace)
    messages = HarnessMessages(bench.api, namespace)
    await create_parked(tasks, parked, ["solo"])
    await one_turn(messages, parked, "solo", 1)  # warm-up turn, not counted
    await asyncio.sleep(0.3)
    ref_before = len(ref.ms)
    sent_before = ref.sent
    before = apiserver_requests(bench.cluster)
    for turn in range(2, serial + 2):
        await asyncio.sleep(0.05)  # let the previous turn's tail (watch events) settle
        for _ in range(patches):
            await ref.patch()
        await asyncio.sleep(0.01)
        if before_turn is not None:
            await before_turn(turn)
        t0, t1 = await one_turn(messages, parked, "solo", turn)
        figures.serial_ms.append((t1 - t0) * 1000)
        if after_turn is not None:
            await after_turn(turn, t0, t1)
    await asyncio.sleep(0.3)  # the operator's last requests land in the counters
    diff = apiserver_requests(bench.cluster) - before
    diff[("PATCH", "harnesstasks/status")] -= ref.sent - sent_before
    figures.ref_ms = ref.ms[ref_before:]
    writes = {k: v / serial for k, v in diff.items() if k[0] in WRITE_VERBS and v}
    figures.participant = sum(v for (verb, res), v in writes.items() if res == "harnessmessages")
    figures.writes = {k: v for k, v in writes.items() if k[1] != "harnessmessages"}
    figures.reads = {
        k: v / serial for k, v in diff.items() if k[0] not in WRITE_VERBS and k[0] != "WATCH" and v
    }


async def concurrency_phase(
    bench: Bench,
    operator: OperatorProcess,
    namespace: str,
    parked: Parked,
    figures: TurnFigures,
    levels: Sequence[int],
    turns: int,
    prefix: str = "c",
) -> None:
    tasks = HarnessTasks(bench.api, namespace)
    messages = HarnessMessages(bench.api, namespace)
    for concurrency in levels:
        names = [f"{prefix}{concurrency}-{i}" for i in range(concurrency)]
        await create_parked(tasks, parked, names, concurrency=min(concurrency, 50))
        await asyncio.sleep(0.5)
        meter = bench.meter(operator)
        t0 = time.perf_counter()
        results = await asyncio.gather(
            *(conversation(messages, parked, n, 1, turns) for n in names)
        )
        elapsed = time.perf_counter() - t0
        lat = [x * 1000 for r in results for x in r]
        figures.rates[concurrency] = (
            len(lat) / elapsed,
            lat,
            meter.per(len(lat)),
            meter.waits(len(lat)),
        )


def print_turn_figures(f: TurnFigures) -> None:
    ref50 = percentile(f.ref_ms, 50)
    print(f"\n== {PROVIDERS[f.provider]}")
    print(
        f"(a) raw status PATCH round trip ({len(f.ref_ms)} samples, interleaved with the turns): "
        f"{p50_p99(f.ref_ms)}   [the reference]"
    )
    s50 = percentile(f.serial_ms, 50)
    print(
        f"(b) message → parked, one conversation ({len(f.serial_ms)} turns): "
        f"{p50_p99(f.serial_ms)}; p50 = {s50 / ref50:.1f}x raw PATCH p50 "
        f"(target ≤ {TARGET_RATIO:.0f}x, i.e. ≤ {TARGET_RATIO * ref50:.1f} ms in this run); "
        f"p99 = {percentile(f.serial_ms, 99) / ref50:.1f}x"
    )
    reads = sum(f.reads.values())
    writes = sum(f.writes.values())
    print(
        f"(c) API requests per simple turn: participant {f.participant:.2f} (message create); "
        f"operator {writes:.2f} writes, {reads:.2f} reads (target reads ≤ {TARGET_READS:.0f}); "
        "WATCH not counted (long-lived)"
    )
    for (verb, res), v in sorted(f.writes.items()):
        print(f"        write {verb:6} {res:28} {v:.2f}/turn")
    for (verb, res), v in sorted(f.reads.items()):
        print(f"        read  {verb:6} {res:28} {v:.2f}/turn")
    for concurrency, (rate, lat, cpu, waits) in sorted(f.rates.items()):
        target = f" (target ≥ {TARGET_TURNS_100:.0f} turns/s)" if concurrency == 100 else ""
        print(
            f"(d) {concurrency:>3} concurrent conversations: {rate:6.1f} turns/s{target}; "
            f"message → parked {p50_p99(lat)} "
            f"(p50 = {percentile(lat, 50) / ref50:.1f}x raw PATCH p50)"
        )
        print(f"        {format_cpu(cpu, waits)}")


async def turn_phases(
    bench: Bench, ref: Reference, provider: str, args: argparse.Namespace
) -> TurnFigures:
    namespace = f"bench-{provider}"
    await client.CoreV1Api(bench.api).create_namespace({"metadata": {"name": namespace}})
    operator = OperatorProcess(
        bench.cluster,
        namespace,
        bench.model.config(provider),
        bench.tmp,
        env=args.collector.env() if args.collector else None,
    )
    parked = Parked(bench.api, namespace)
    figures = TurnFigures(provider)
    try:
        await operator.ready()
        await parked.start()
        await serial_phase(bench, ref, namespace, parked, figures, args.serial, args.patches)
        await concurrency_phase(
            bench, operator, namespace, parked, figures, (1, 10, 100), args.turns
        )
    finally:
        await parked.stop()
        operator.stop()
    return figures


async def memory_phase(bench: Bench, ref: Reference, args: argparse.Namespace) -> None:
    namespace = "bench-idle"
    provider = args.memory_provider
    await client.CoreV1Api(bench.api).create_namespace({"metadata": {"name": namespace}})
    operator = OperatorProcess(bench.cluster, namespace, bench.model.config(provider), bench.tmp)
    parked = Parked(bench.api, namespace)
    tasks = HarnessTasks(bench.api, namespace)
    print(
        f"\n== operator memory ({PROVIDERS[provider]} operator of its own, namespace {namespace})"
    )
    try:
        await operator.ready()
        await parked.start()
        await asyncio.sleep(1)
        print(f"(e) operator RSS idle, no tasks: {rss_mb(operator.pid):.0f} MB")
        existing = 0
        steps = sorted({n for n in (1000, args.parked) if n <= args.parked})
        for target in steps:
            names = [f"idle-{i}" for i in range(existing, target)]
            created, done = await create_parked(tasks, parked, names, args.create_concurrency)
            existing = target
            # kopf keeps a per-object worker for a few seconds after its last event; let them go.
            await asyncio.sleep(8)
            mark = (
                f"target ≤ {TARGET_RSS_MB:.0f} MB at {TARGET_PARKED:,}"
                if target == args.parked
                else ""
            )
            print(
                f"(e) operator RSS with {existing:,} parked tasks: {rss_mb(operator.pid):.0f} MB "
                f"(peak so far {rss_mb(operator.pid, 'VmHWM'):.0f} MB) {mark}"
            )
            print(
                f"        created {len(names):,} more ({args.create_concurrency} in flight): "
                f"all created in {created:.1f} s, all parked in {done:.1f} s "
                f"({len(names) / max(done, 1e-9):.0f} tasks/s)"
            )
        sample = await tasks.get("idle-0")
        size = len(json.dumps(sample))
        managed = len(json.dumps(sample["metadata"].get("managedFields", [])))
        print(
            f"        one parked task is {size:,} bytes of JSON, of which metadata.managedFields "
            f"{managed:,} bytes ({managed / size * 100:.0f}%)"
        )
        figures = TurnFigures(provider)
        ref_start = len(ref.ms)
        for _ in range(20):
            await ref.patch()
        await concurrency_phase(
            bench, operator, namespace, parked, figures, (100,), args.turns, prefix="m"
        )
        rate, lat, cpu, waits = figures.rates[100]
        ref50 = percentile(ref.ms[ref_start:], 50)
        print(
            f"(e) 100 concurrent conversations among {existing:,} parked tasks: {rate:.1f} turns/s "
            f"(target ≥ {TARGET_TURNS_100:.0f}); message → parked {p50_p99(lat)} "
            f"(raw PATCH p50 now {ref50:.1f} ms)"
        )
        print(f"        {format_cpu(cpu, waits)}")
        print(f"(e) operator RSS after those turns: {rss_mb(operator.pid):.0f} MB")
    finally:
        await parked.stop()
        operator.stop()


async def main_async(args: argparse.Namespace) -> None:
    model = ModelServerProcess()
    # --traced: the operators export every span over OTLP/HTTP to a collector in this process.
    args.collector = Collector() if args.traced else None
    try:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster, tempfile.TemporaryDirectory() as tmp:
            api = await connect(cluster.kubeconfig)
            bench = Bench(cluster, api, model, Path(tmp))
            ref = Reference(api)
            await ref.setup()
            providers = [p.strip() for p in args.providers.split(",") if p.strip()]
            print(f"code: {revision()}")
            print(
                f"bench_turns: providers {', '.join(providers)}; {args.serial} serial turns, "
                f"{args.turns} turns per conversation, {args.parked:,} parked tasks; "
                f"load average {os.getloadavg()[0]:.2f} at start"
            )
            results = []
            for provider in providers:
                figures = await turn_phases(bench, ref, provider, args)
                print_turn_figures(figures)
                results.append(figures)
            if args.parked > 0:
                await memory_phase(bench, ref, args)
            if args.collector:
                print(f"\ntraced: the collector received {len(args.collector.spans):,} spans")
            print(
                f"\nraw status PATCH over the whole run ({len(ref.ms)} samples): "
                f"{p50_p99(ref.ms)}; load average {os.getloadavg()[0]:.2f} at the end"
            )
            await api.close()
    finally:
        model.stop()
        if args.collector:
            args.collector.close()


def revision() -> str:
    """The commit measured, and any uncommitted change to the code under test (the tree is
    shared: figures from two runs compare only with this line beside them)."""
    root = REPO_ROOT
    try:
        head = subprocess.run(
            ["git", "-C", str(root), "log", "-1", "--format=%h %s"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "-C", str(root), "status", "--porcelain", "--", "tiny_harness"],
            capture_output=True,
            text=True,
            check=True,
        ).stdout.split("\n")
    except (OSError, subprocess.CalledProcessError):
        return "unknown (no git)"
    changed = [line[3:] for line in dirty if line.strip()]
    return head[:90] + (f"; uncommitted in tiny_harness: {', '.join(changed)}" if changed else "")


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=10, help="turns per concurrent conversation")
    parser.add_argument("--serial", type=int, default=40, help="turns of the serial conversation")
    parser.add_argument(
        "--patches", type=int, default=3, help="reference PATCHes before each serial turn"
    )
    parser.add_argument(
        "--parked", type=int, default=TARGET_PARKED, help="parked tasks for memory (0: skip)"
    )
    parser.add_argument(
        "--create-concurrency", type=int, default=100, help="task creates in flight"
    )
    parser.add_argument(
        "--providers",
        default="responses,messages",
        help="comma-separated wire formats: responses, messages, chat",
    )
    parser.add_argument(
        "--memory-provider", default="responses", choices=sorted(PROVIDERS), help="for (e)"
    )
    parser.add_argument(
        "--traced",
        action="store_true",
        help="turn tracing on: operators export spans over OTLP/HTTP to a collector here",
    )
    return parser


def main() -> None:
    asyncio.run(main_async(build_parser().parse_args()))


if __name__ == "__main__":
    main()
