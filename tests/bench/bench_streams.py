"""Benchmark: what open ``SubscribeToTask`` streams cost one gateway replica, how fast one status
write reaches many subscribers, and how ``ListTasks`` scales with the tasks in the namespace.

Issue 28. Prints figures and asserts nothing. Everything real: a local control plane, and one
gateway (``python -m tiny_harness.a2a_gateway``, header identity, as bench_gateway.py starts it)
as a process of its own. The bench reaches the gateway only through its public surface (the
A2A HTTP+JSON binding with SSE: ``GET /rest/tasks/{id}:subscribe``, ``GET /rest/tasks``, with
``A2A-Version: 1.0`` and ``X-Participant-Id``), and the Kubernetes API directly for setup and
for the writes that cause events, so it measures the gateway whatever it does inside.

No operator runs: each task is created as the gateway would create it (the sender label, the
context id annotation, the participant as its assignee) and given the status the operator
writes when a conversation parks (``INPUT_REQUIRED``, ``awaiting-next-message``, a status
message). The status writes of the fan-out are the operator's kind of write too (a new status
message), made directly, so nothing but the gateway stands between a write and its subscribers.

1. ``--streams`` streams over ``--tasks`` tasks, held by ``--clients`` client processes (raw
   aiohttp, one TCP connection per stream; the gateway's memory is its own), opened in two
   batches of half each: the gateway's RSS (``VmRSS``) before, once the first half is open
   and once all are, open and idle, per stream over all, and per stream of each batch (the
   second's is the marginal cost of a stream at steady state: the allocator keeps what the
   first batch's opening burst took, and the second reuses it); the API server's WATCH
   requests (``apiserver_longrunning_requests``) before, with the streams open and after they
   are closed; the time to open them all, and each open's time to its first event.
2. Fan-out, with those streams still open: ``--subscribers`` streams on one task, and
   ``--writes`` status writes to it, one at a time; for each, the time from the write to each
   subscriber seeing it (p50 and p99 over every receipt, and of the last subscriber per
   write), beside a raw watch of the same task on the API server (the floor).
3. ``ListTasks`` as a participant on 10 tasks, among each total of ``--list-tasks`` tasks in
   the namespace (others' tasks made up the rest; created concurrently, with progress lines):
   p50 and p99 over ``--list-calls`` calls, beside the floor (a direct API list of that
   participant's tasks by its sender label) and, for scale, a direct list of the whole
   namespace.

::

    python tests/bench/bench_streams.py [--streams 10000] [--tasks 1000] [--subscribers 100]
        [--writes 30] [--list-tasks 10000,100000] [--list-calls 50]

A quick run (under a minute): ``--streams 200 --tasks 100 --subscribers 20 --writes 20
--list-tasks 1000``; ``--streams 0`` skips part 1, ``--subscribers 0`` part 2 and
``--list-tasks ''`` part 3. Figures go to stdout, progress lines to stderr. The RSS before is
read after a few streams were opened and closed, so what the gateway loads once is not counted
per stream; what it grows by once under load (some 30 MiB today) still is, so a few hundred
streams overstate the figure. The fan-out's subscribers, its raw watch and its writes are all
in the bench's own process: one clock.

The gateway and each client may hold as many descriptors as the hard ``ulimit -n`` (raised to
it). A gateway that keeps an API watch per stream needs two descriptors per stream, so at a
limit of 20,000 it cannot hold 10,000: the streams that failed to open, or ended once open,
are counted with the reasons the clients saw, and the figures are per open stream. The fan-out
then runs once the other streams are closed, since its own would fail as well.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import json
import math
import os
import resource
import ssl
import subprocess
import sys
import tempfile
import time
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client as k8s

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_gateway import free_port, percentile, wait_healthy

from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import (
    API_VERSION,
    CONTEXT_ID_ANNOTATION,
    GROUP,
    KIND,
    PLURAL,
    SENDER_LABEL,
    VERSION,
)

NAMESPACE: Final = "bench-streams"
FANOUT_TASK: Final = "fanout"
LISTER: Final = "lister"
LISTER_TASKS: Final = 10
#: Others' tasks are spread over this many participants.
OTHERS: Final = 1000
#: The most streams one client process holds, well under its descriptor limit.
STREAMS_PER_CLIENT: Final = 2500
#: A stream not open (its first event seen) this long after it was asked for has failed.
OPEN_TIMEOUT: Final = 120.0
#: How long after the streams were closed the watches are counted again, if some remained.
LINGER_SECONDS: Final = 60.0
A2A_HEADERS: Final = {"A2A-Version": "1.0", "Accept": "text/event-stream"}


def progress(line: str) -> None:
    print(f"  .. {line}", file=sys.stderr, flush=True)


def raise_descriptor_limit() -> int:
    """The soft limit on open files raised to the hard one; the limit now."""
    _, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    resource.setrlimit(resource.RLIMIT_NOFILE, (hard, hard))
    return hard


def ms(values: Sequence[float]) -> str:
    if not values:
        return "n/a (no samples)"
    v = [x * 1000 for x in values]
    return f"p50 {percentile(v, 50):8.2f} ms  p99 {percentile(v, 99):8.2f} ms  (n={len(v)})"


# -- what the operator would have written -------------------------------------------------------


def task_body(name: str, participant: str, goal: str) -> dict[str, Any]:
    """A task as the gateway creates it for ``participant``'s first message."""
    return {
        "apiVersion": API_VERSION,
        "kind": KIND,
        "metadata": {
            "name": name,
            "labels": {SENDER_LABEL: label_value(participant)},
            "annotations": {CONTEXT_ID_ANNOTATION: name},
        },
        "spec": {"goal": goal, "participants": [{"id": participant, "role": "assignee"}]},
    }


def parked_status(text: str, message_id: str) -> dict[str, Any]:
    """The status of a conversation parked after its first turn, as the operator writes it."""
    now = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    return {
        "state": "TASK_STATE_INPUT_REQUIRED",
        "subState": "awaiting-next-message",
        "lifecycle": "conversation",
        "model": "scripted-model",
        "message": text,
        "messageId": message_id,
        "turn": 1,
        "observedGeneration": 1,
        "startTime": now,
        "waitingSince": now,
    }


async def create_parked(
    api: Any, tasks: Sequence[tuple[str, str]], *, concurrency: int, what: str
) -> float:
    """Create each (name, participant) task and write its parked status, ``concurrency`` at a
    time, with a progress line every few seconds; the seconds it took."""
    objects = k8s.CustomObjectsApi(api)
    store = HarnessTasks(api, NAMESPACE)
    todo = iter(tasks)
    done = 0
    t0 = time.perf_counter()

    async def worker() -> None:
        nonlocal done
        for name, participant in todo:
            body = task_body(name, participant, f"{what}: benchmark")
            await objects.create_namespaced_custom_object(GROUP, VERSION, NAMESPACE, PLURAL, body)
            await store.patch_status(name, parked_status("Ready.", f"{name}-ready"))
            done += 1

    async def report() -> None:
        while True:
            await asyncio.sleep(5)
            rate = done / (time.perf_counter() - t0)
            progress(f"{what}: {done:,}/{len(tasks):,} tasks created and parked ({rate:.0f}/s)")

    reporter = asyncio.create_task(report())
    try:
        await asyncio.gather(*(worker() for _ in range(concurrency)))
    finally:
        reporter.cancel()
    return time.perf_counter() - t0


# -- what the processes cost --------------------------------------------------------------------


def rss_kib(pid: int) -> int:
    for line in Path(f"/proc/{pid}/status").read_text().splitlines():
        if line.startswith("VmRSS:"):
            return int(line.split()[1])
    return 0


def cpu_seconds(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def apiserver_pid(cluster: LocalCluster) -> int:
    for pid in cluster.pids:
        with contextlib.suppress(OSError):
            if b"kube-apiserver" in Path(f"/proc/{pid}/cmdline").read_bytes():
                return pid
    raise SystemExit("no kube-apiserver among the cluster's processes")


@dataclass(frozen=True)
class Watches:
    """The API server's open WATCH requests: on HarnessTasks, and on anything."""

    tasks: int | None
    total: int | None

    def __str__(self) -> str:
        if self.total is None:
            return "n/a (no apiserver_longrunning_requests in the API server's /metrics)"
        return f"{self.tasks:,} on harnesstasks ({self.total:,} in all)"


def watches(cluster: LocalCluster) -> Watches:
    """From kube-apiserver's ``apiserver_longrunning_requests`` gauge, verb WATCH."""
    text = cluster.admin().request("GET", "/metrics", timeout=30).body.decode()
    found, tasks, total = False, 0, 0
    for line in text.splitlines():
        if not line.startswith("apiserver_longrunning_requests{"):
            continue
        found = True
        labels = line[line.index("{") + 1 : line.rindex("}")]
        if 'verb="WATCH"' not in labels:
            continue
        count = int(float(line.rsplit(" ", 1)[1]))
        total += count
        if f'resource="{PLURAL}"' in labels:
            tasks += count
    return Watches(tasks, total) if found else Watches(None, None)


async def settled_watches(
    cluster: LocalCluster, reached: Callable[[int], bool], quiet: float = 5.0
) -> Watches:
    """The watch count once the count on harnesstasks has ``reached`` what is awaited, or has
    stopped moving for ``quiet`` seconds (a gateway that does not watch per stream never
    reaches a count per stream)."""
    last, since = watches(cluster), time.monotonic()
    deadline = time.monotonic() + 180
    while time.monotonic() < deadline and last.tasks is not None and not reached(last.tasks):
        await asyncio.sleep(0.5)
        now = watches(cluster)
        if now != last:
            last, since = now, time.monotonic()
        elif time.monotonic() - since >= quiet:
            break
    return last


# -- the gateway --------------------------------------------------------------------------------


@dataclass
class Gateway:
    url: str
    proc: subprocess.Popen[bytes]
    log: Path

    def tail(self, lines: int = 12) -> str:
        text = self.log.read_text(errors="replace").splitlines() if self.log.exists() else []
        return "\n".join(f"    | {line[:200]}" for line in text[-lines:])


@contextlib.contextmanager
def gateway_process(kubeconfig: Path, workdir: Path) -> Iterator[Gateway]:
    port = free_port()
    config = workdir / "gateway.toml"
    config.write_text(
        "[gateway]\n"
        f'bind = "127.0.0.1:{port}"\n'
        f'namespace = "{NAMESPACE}"\n'
        'participant_identity = "header"\n'
        "rate_limit_per_minute = 100000000\n"
    )
    log = workdir / "gateway.log"
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "tiny_harness.a2a_gateway", "--config", str(config)],
            env={**os.environ, "KUBECONFIG": str(kubeconfig)},
            stdout=out,
            stderr=subprocess.STDOUT,
            # As many descriptors as the machine lets a process have: each stream holds one.
            preexec_fn=raise_descriptor_limit,
        )
    gateway = Gateway(f"http://127.0.0.1:{port}", proc, log)
    try:
        wait_healthy(f"{gateway.url}/healthz", proc, "the gateway")
        yield gateway
    finally:
        proc.terminate()
        try:
            proc.wait(timeout=30)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait()
        if os.environ.get("BENCH_GATEWAY_LOG"):
            sys.stderr.write(gateway.tail(60) + "\n")


def subscribe_url(url: str, task: str) -> str:
    return f"{url}/rest/tasks/{task}:subscribe"


# -- the client processes that hold the streams -------------------------------------------------


async def hold_streams() -> None:
    """A client process: reads its orders (one JSON line) from stdin, says ``ready``, opens
    its streams on ``go`` and reports, holds them (saying how many are still open at each
    ``count``) until ``close``, then closes them all."""
    limit = raise_descriptor_limit()
    orders = json.loads(sys.stdin.readline())
    url: str = orders["url"]
    streams: list[list[str]] = orders["streams"]
    gate = asyncio.Semaphore(int(orders["concurrency"]))
    opened: list[float] = []
    failed: Counter[str] = Counter()
    ended: Counter[str] = Counter()

    def say(**what: object) -> None:
        print(json.dumps(what), flush=True)

    async def hold(session: aiohttp.ClientSession, task: str, participant: str) -> None:
        headers = {**A2A_HEADERS, "X-Participant-Id": participant}
        response: aiohttp.ClientResponse | None = None
        is_open = False
        try:
            async with gate:
                t0 = time.perf_counter()
                async with asyncio.timeout(OPEN_TIMEOUT):
                    response = await session.get(subscribe_url(url, task), headers=headers)
                    if response.status != 200:
                        failed[f"HTTP {response.status} {(await response.text())[:80]}"] += 1
                        return
                    async for line in response.content:
                        if line.startswith(b"data:"):
                            break
                    else:
                        failed["the stream ended before its first event"] += 1
                        return
                opened.append(time.perf_counter() - t0)
                is_open = True
            last = b""
            async for line in response.content:  # pings, and changes of the task
                if line.startswith(b"data:") and last.startswith(b"event: error"):
                    ended[line[5:].strip()[:100].decode(errors="replace")] += 1
                    return
                last = line
            ended["the gateway ended the stream"] += 1
        except TimeoutError:
            failed[f"no first event within {OPEN_TIMEOUT:.0f} s"] += 1
        except (aiohttp.ClientError, OSError) as exc:
            if is_open:
                ended[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
            else:
                failed[f"{type(exc).__name__}: {str(exc)[:80]}"] += 1
        finally:
            if response is not None:
                response.close()

    loop = asyncio.get_running_loop()
    reader = asyncio.StreamReader()
    await loop.connect_read_pipe(lambda: asyncio.StreamReaderProtocol(reader), sys.stdin)
    connector = aiohttp.TCPConnector(limit=0, force_close=True)
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=OPEN_TIMEOUT)
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, read_bufsize=1 << 20
    ) as session:
        say(ready=True, limit=limit)
        await reader.readline()  # go
        t0 = time.perf_counter()
        holders = [asyncio.create_task(hold(session, t, p)) for t, p in streams]

        async def report() -> None:
            while len(opened) + sum(failed.values()) < len(streams):
                await asyncio.sleep(1)
                say(opened=len(opened), failed=sum(failed.values()))

        await report()
        say(done=True, seconds=time.perf_counter() - t0, opened=opened, failed=dict(failed))
        while (await reader.readline()).strip() == b"count":
            say(holding=len(opened) - ended.total(), ended=dict(ended))
        for holder in holders:
            holder.cancel()
        await asyncio.gather(*holders, return_exceptions=True)
        say(closed=True, ended_early=ended.total())


@dataclass
class ClientProcess:
    proc: asyncio.subprocess.Process
    streams: int
    opened: int = 0
    failed: int = 0
    done: dict[str, Any] = field(default_factory=dict)

    async def said(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = await self.proc.stdout.readline()
        if not line:
            raise SystemExit(f"a client process exited with {await self.proc.wait()}")
        heard: dict[str, Any] = json.loads(line)
        return heard

    async def tell(self, what: str) -> None:
        assert self.proc.stdin is not None
        self.proc.stdin.write(f"{what}\n".encode())
        await self.proc.stdin.drain()


@contextlib.asynccontextmanager
async def stream_clients(
    url: str, streams: Sequence[tuple[str, str]], clients: int, concurrency: int
) -> AsyncIterator[list[ClientProcess]]:
    """``clients`` processes, each given its share of ``streams`` and ready to open them."""
    shares = [list(streams[i::clients]) for i in range(clients)]
    started: list[ClientProcess] = []
    try:
        for share in shares:
            proc = await asyncio.create_subprocess_exec(
                sys.executable,
                __file__,
                "--hold-streams",
                stdin=asyncio.subprocess.PIPE,
                stdout=asyncio.subprocess.PIPE,
                limit=1 << 24,
            )
            started.append(ClientProcess(proc, len(share)))
            orders = {
                "url": url,
                "streams": share,
                "concurrency": max(1, concurrency // clients),
            }
            await started[-1].tell(json.dumps(orders))
        for c in started:
            await c.said()  # ready
        yield started
    finally:
        for c in started:
            if c.proc.returncode is None:
                c.proc.kill()
                await c.proc.wait()


async def open_all(clients: list[ClientProcess]) -> float:
    """Tell every client to open its streams; the seconds until all were opened or failed."""
    t0 = time.perf_counter()
    for c in clients:
        await c.tell("go")

    async def follow(c: ClientProcess) -> None:
        while not c.done:
            heard = await c.said()
            if heard.get("done"):
                c.done = heard
            else:
                c.opened, c.failed = heard["opened"], heard["failed"]

    async def report() -> None:
        while True:
            await asyncio.sleep(5)
            total = sum(c.streams for c in clients)
            opened = sum(len(c.done["opened"]) if c.done else c.opened for c in clients)
            failed = sum(sum(c.done["failed"].values()) if c.done else c.failed for c in clients)
            progress(f"streams: {opened:,} open, {failed:,} failed of {total:,}")

    reporter = asyncio.create_task(report())
    try:
        await asyncio.gather(*(follow(c) for c in clients))
    finally:
        reporter.cancel()
    return time.perf_counter() - t0


async def holding(clients: list[ClientProcess]) -> tuple[int, Counter[str]]:
    """How many streams are open now, and why those that ended after opening ended."""
    held, ended = 0, Counter[str]()
    for c in clients:
        await c.tell("count")
        heard = await c.said()
        held += int(heard["holding"])
        ended.update(heard["ended"])
    return held, ended


async def close_all(clients: list[ClientProcess]) -> int:
    """Close every stream; how many had ended before they were closed."""
    ended = 0
    for c in clients:
        await c.tell("close")
    for c in clients:
        ended += int((await c.said())["ended_early"])
        await c.proc.wait()
    return ended


# -- fan-out ------------------------------------------------------------------------------------


@dataclass
class Receipts:
    """Who has seen the write being timed (by its marker), and when, since it was made."""

    expected: int
    marker: bytes = b""
    t0: float = 0.0
    seen: dict[int, float] = field(default_factory=dict)
    all_seen: asyncio.Event = field(default_factory=asyncio.Event)

    def start(self, marker: str) -> None:
        self.marker, self.seen = marker.encode(), {}
        self.all_seen.clear()
        self.t0 = time.perf_counter()

    def line(self, who: int, line: bytes) -> None:
        if self.marker and self.marker in line and who not in self.seen:
            self.seen[who] = time.perf_counter() - self.t0
            if len(self.seen) == self.expected:
                self.all_seen.set()


def admin_ssl(cluster: LocalCluster) -> ssl.SSLContext:
    pki = cluster.pki
    context = ssl.create_default_context(cafile=str(pki.ca_cert))
    context.load_cert_chain(str(pki.admin_cert), str(pki.admin_key))
    return context


async def bench_fanout(
    cluster: LocalCluster, api: Any, url: str, subscribers: int, writes: int, others: int
) -> None:
    """Time ``writes`` status writes to the fan-out task, to each of ``subscribers`` streams
    on it and to a raw watch, with ``others`` streams (on other tasks) open meanwhile."""
    store = HarnessTasks(api, NAMESPACE)
    gateway = Receipts(subscribers)
    floor = Receipts(1)
    watch_url = (
        f"{cluster.server}/apis/{GROUP}/{VERSION}/namespaces/{NAMESPACE}/{PLURAL}"
        f"?watch=1&fieldSelector=metadata.name%3D{FANOUT_TASK}&timeoutSeconds=3600"
    )
    headers = {**A2A_HEADERS, "X-Participant-Id": FANOUT_TASK}
    connector = aiohttp.TCPConnector(limit=0, ssl=admin_ssl(cluster))
    timeout = aiohttp.ClientTimeout(total=None, sock_connect=OPEN_TIMEOUT)
    opened = asyncio.Semaphore(0)
    # Why a stream ended: once one has, the receipts it would have made never come.
    broken: list[str] = []
    stop = asyncio.Event()

    async def read(session: aiohttp.ClientSession, url: str, **kw: Any) -> AsyncIterator[bytes]:
        try:
            async with session.get(url, **kw) as response:
                if response.status != 200:
                    raise aiohttp.ClientError(f"HTTP {response.status}")
                opened.release()
                async for line in response.content:
                    yield line
            broken.append("a stream ended")
        except (aiohttp.ClientError, OSError) as exc:
            broken.append(f"{type(exc).__name__}: {exc}")
        opened.release()
        stop.set()

    async def subscriber(session: aiohttp.ClientSession, who: int) -> None:
        async for line in read(session, subscribe_url(url, FANOUT_TASK), headers=headers):
            gateway.line(who, line)

    async def raw_watch(session: aiohttp.ClientSession) -> None:
        async for line in read(session, watch_url):
            floor.line(0, line)

    every: list[float] = []
    last: list[float] = []
    floor_s: list[float] = []
    missed = 0
    async with aiohttp.ClientSession(
        connector=connector, timeout=timeout, read_bufsize=1 << 20
    ) as session:
        readers = [asyncio.create_task(subscriber(session, i)) for i in range(subscribers)]
        readers.append(asyncio.create_task(raw_watch(session)))
        try:
            async with asyncio.timeout(OPEN_TIMEOUT):
                for _ in readers:
                    await opened.acquire()
            # The first write is not timed: it also proves every subscription is in place.
            for k in range(writes + 1):
                if broken:
                    break
                marker = f"fanout-{k}-{uuid.uuid4().hex[:8]}"
                gateway.start(marker)
                floor.start(marker)
                status = {"message": f"Update {k}.", "messageId": marker}
                await store.patch_status(FANOUT_TASK, status)
                waits: list[asyncio.Future[Any]] = [
                    asyncio.gather(gateway.all_seen.wait(), floor.all_seen.wait()),
                    asyncio.ensure_future(stop.wait()),
                ]
                await asyncio.wait(waits, timeout=60, return_when="FIRST_COMPLETED")
                for waiting in waits:
                    waiting.cancel()
                missed += subscribers - len(gateway.seen)
                if k == 0:
                    continue
                every.extend(gateway.seen.values())
                last.append(max(gateway.seen.values(), default=math.inf))
                floor_s.extend(floor.seen.values())
                await asyncio.sleep(0.1)
        except TimeoutError:
            broken.append(f"not every stream opened within {OPEN_TIMEOUT:.0f} s")
        finally:
            for reader in readers:
                reader.cancel()
            await asyncio.gather(*readers, return_exceptions=True)
    print(
        f"fan-out: {len(last)} status writes to one task with {subscribers} subscribers, "
        f"{others:,} other streams open (write sent → event seen):\n"
        f"  each subscriber       {ms(every)}\n"
        f"  the last of {subscribers:<4}     {ms(last)}\n"
        f"  raw API watch (floor) {ms(floor_s)}"
        + (f"\n  {missed} receipts never came" if missed else "")
        + (f"\n  stopped early: {Counter(broken).most_common(3)}" if broken else ""),
        flush=True,
    )


# -- ListTasks ----------------------------------------------------------------------------------


async def bench_list(
    api: Any, gateway: Gateway, total: int, existing: int, calls: int, concurrency: int
) -> int:
    """Fill the namespace up to ``total`` tasks and time ListTasks for the lister; the tasks
    in the namespace now. A call refused is counted, with its reason, and not timed."""
    if existing < total:
        fillers = [(f"f-{i:06d}", f"other-{i % OTHERS}") for i in range(existing, total)]
        seconds = await create_parked(api, fillers, concurrency=concurrency, what=f"to {total:,}")
        progress(f"{len(fillers):,} others' tasks created and parked in {seconds:.0f} s")
        existing = total
    objects = k8s.CustomObjectsApi(api)
    headers = {"A2A-Version": "1.0", "X-Participant-Id": LISTER}
    selector = f"{SENDER_LABEL}={label_value(LISTER)}"
    via_gateway: list[float] = []
    direct: list[float] = []
    whole: list[float] = []
    sizes: set[int] = set()
    refused: Counter[str] = Counter()
    whole_bytes = 0
    async with aiohttp.ClientSession(timeout=aiohttp.ClientTimeout(total=600)) as session:

        async def list_gateway() -> bool:
            async with session.get(f"{gateway.url}/rest/tasks", headers=headers) as response:
                body = await response.read()
                if response.status != 200:
                    refused[f"HTTP {response.status}: {body[:160].decode(errors='replace')}"] += 1
                    return False
                sizes.add(len(json.loads(body).get("tasks") or []))
                return True

        async def list_direct() -> None:
            await objects.list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, label_selector=selector
            )

        for _ in range(3):  # warm both paths
            await list_gateway()
            await list_direct()
        t_start = time.perf_counter()
        for i in range(calls):
            t0 = time.perf_counter()
            if await list_gateway():
                via_gateway.append(time.perf_counter() - t0)
            t0 = time.perf_counter()
            await list_direct()
            direct.append(time.perf_counter() - t0)
            if time.perf_counter() - t_start > 10 and i % 10 == 9:
                progress(f"ListTasks among {total:,}: {i + 1}/{calls} calls")
        for _ in range(3):
            t0 = time.perf_counter()
            response = await objects.list_namespaced_custom_object(
                GROUP, VERSION, NAMESPACE, PLURAL, _preload_content=False
            )
            whole_bytes = len(await response.read())
            response.close()
            whole.append(time.perf_counter() - t0)
    seen = ", ".join(str(n) for n in sorted(sizes))
    print(
        f"ListTasks for a participant of {LISTER_TASKS} tasks among {existing:,} "
        f"(it listed {seen}):\n"
        f"  gateway ListTasks                  {ms(via_gateway)}\n"
        f"  direct list by sender label (floor) {ms(direct)}\n"
        f"  for scale: direct list of the whole namespace {ms(whole)}, "
        f"{whole_bytes / 1e6:.0f} MB",
        flush=True,
    )
    for reason, count in refused.most_common(3):
        print(f"  gateway ListTasks refused ({count}): {reason}")
    if refused:
        print(f"  the gateway's log ends:\n{gateway.tail(20)}", flush=True)
    return existing


# -- the run ------------------------------------------------------------------------------------


async def warm_up(url: str, streams: Sequence[tuple[str, str]]) -> None:
    """Open and close a few streams, so that what the gateway loads once is not counted."""
    async with aiohttp.ClientSession() as session:
        for task, participant in streams:
            headers = {**A2A_HEADERS, "X-Participant-Id": participant}
            async with session.get(subscribe_url(url, task), headers=headers) as response:
                response.raise_for_status()
                async for line in response.content:
                    if line.startswith(b"data:"):
                        break
    await asyncio.sleep(1)


async def bench(cluster: LocalCluster, workdir: Path, args: argparse.Namespace) -> None:
    api = await connect(cluster.kubeconfig, max_connections=args.create_concurrency + 8)
    try:
        names = [(f"s-{i:05d}", f"p-{i:05d}") for i in range(args.tasks)]
        names += [(FANOUT_TASK, FANOUT_TASK)]
        names += [(f"{LISTER}-{i}", LISTER) for i in range(LISTER_TASKS)]
        seconds = await create_parked(
            api, names, concurrency=args.create_concurrency, what="streams' tasks"
        )
        progress(f"{len(names):,} tasks created and parked in {seconds:.1f} s")
        with gateway_process(cluster.kubeconfig, workdir) as gateway:
            await bench_gateway_streams(cluster, api, gateway, args)
            if gateway.proc.poll() is not None:
                print(f"the gateway exited with {gateway.proc.returncode}:\n{gateway.tail()}")
                return
            existing = len(names)
            for total in args.list_tasks:
                existing = await bench_list(
                    api, gateway, total, existing, args.list_calls, args.create_concurrency
                )
    finally:
        await api.close()


async def bench_gateway_streams(
    cluster: LocalCluster, api: Any, gateway: Gateway, args: argparse.Namespace
) -> None:
    if args.streams == 0:
        if args.subscribers:
            await bench_fanout(cluster, api, gateway.url, args.subscribers, args.writes, others=0)
        return
    apiserver = apiserver_pid(cluster)
    per_task = math.ceil(args.streams / max(args.tasks, 1))
    streams = [(f"s-{i % args.tasks:05d}", f"p-{i % args.tasks:05d}") for i in range(args.streams)]
    await warm_up(gateway.url, streams[:5])
    before = watches(cluster)
    rss0, api_rss0 = rss_kib(gateway.proc.pid), rss_kib(apiserver)
    cpu0 = cpu_seconds(gateway.proc.pid)
    clients = args.clients or max(1, math.ceil(args.streams / STREAMS_PER_CLIENT))
    # Two batches: the first opens on a gateway that has opened nothing yet, the second on
    # one that already holds the first, whose opening burst the allocator keeps: the second's
    # cost per stream is what one more stream costs at steady state.
    first, second = streams[: len(streams) // 2], streams[len(streams) // 2 :]
    per_batch = max(1, clients // 2)
    async with (
        stream_clients(gateway.url, first, per_batch, args.open_concurrency) as batch_1,
        stream_clients(gateway.url, second, per_batch, args.open_concurrency) as batch_2,
    ):
        procs = [*batch_1, *batch_2]
        seconds = 0.0
        marks: list[tuple[int, int]] = []  # (RSS, streams open) after each batch
        for batch in (batch_1, batch_2):
            seconds += await open_all(batch)
            opened_now = sum(len(c.done["opened"]) for c in procs if c.done)
            target = (before.tasks or 0) + opened_now
            during = await settled_watches(cluster, lambda now, t=target: now >= t)
            await asyncio.sleep(2)
            alive = gateway.proc.poll() is None
            held_now, _ = await holding([c for c in procs if c.done])
            marks.append((rss_kib(gateway.proc.pid) if alive else 0, held_now))
            if not alive:
                break
        opened = [s for c in procs if c.done for s in c.done["opened"]]
        failed: Counter[str] = Counter()
        for c in procs:
            failed.update(c.done.get("failed") or {})
        alive = gateway.proc.poll() is None
        rss1 = marks[-1][0]
        api_rss1 = rss_kib(apiserver)
        cpu1 = cpu_seconds(gateway.proc.pid) if alive else cpu0
        held, ended = await holding([c for c in procs if c.done])
        n = max(held, 1)
        (rss_a, held_a), (rss_b, held_b) = marks[0], marks[-1]
        marginal = (rss_b - rss_a) / max(held_b - held_a, 1)
        print(
            f"{args.streams:,} SubscribeToTask streams over {args.tasks:,} tasks "
            f"(~{per_task} per task), {len(procs)} client processes, "
            f"{args.open_concurrency} opening at a time, in two batches:\n"
            f"  opened: {len(opened):,}   failed to open: {sum(failed.values()):,}   "
            f"ended since: {ended.total():,}   open now: {held:,}\n"
            f"  time to open them all: {seconds:.1f} s "
            f"({len(opened) / seconds:.0f} streams/s); each open to its first event: "
            f"{ms(opened)}\n"
            f"  gateway CPU while opening: {cpu1 - cpu0:.1f} s "
            f"({1000 * (cpu1 - cpu0) / max(len(opened), 1):.2f} ms per stream opened)\n"
            f"  gateway RSS: {rss0 / 1024:.0f} MiB before, {rss1 / 1024:.0f} MiB with them open "
            f"and idle: {(rss1 - rss0) / n:.0f} KiB per open stream\n"
            f"  of which the first batch ({held_a:,} streams): "
            f"{(rss_a - rss0) / max(held_a, 1):.0f} KiB per stream; the second "
            f"({held_b - held_a:,} more, the first's burst already kept): "
            f"{marginal:.0f} KiB per stream\n"
            f"  API server RSS: {api_rss0 / 1024:.0f} MiB before, {api_rss1 / 1024:.0f} MiB "
            f"after: {(api_rss1 - api_rss0) / n:.0f} KiB per open stream\n"
            f"  API-server watches: before {before}; with the streams open {during}",
            flush=True,
        )
        for reason, count in failed.most_common(5):
            print(f"  failed to open ({count:,}): {reason}")
        for reason, count in ended.most_common(5):
            print(f"  ended once open ({count:,}): {reason}")
        if failed or ended:
            print(f"  the gateway's log ends:\n{gateway.tail()}")
        if not alive:
            print(f"  the gateway exited with {gateway.proc.returncode}")
            return
        # With no room left in the gateway (streams refused or ended) the fan-out's streams
        # would fail too: it is then measured once the others are closed.
        room = not failed and not ended
        if args.subscribers and room:
            await bench_fanout(
                cluster, api, gateway.url, args.subscribers, args.writes, others=held
            )
        early = await close_all(procs)
    after = await settled_watches(cluster, lambda now: now <= (before.tasks or 0))
    print(
        f"after closing every stream ({early:,} had ended before): API-server watches {after}; "
        f"gateway RSS {rss_kib(gateway.proc.pid) / 1024:.0f} MiB",
        flush=True,
    )
    if (after.tasks or 0) > (before.tasks or 0):
        # Slow to let go, or never letting go: a while later tells them apart.
        await asyncio.sleep(LINGER_SECONDS)
        print(f"  {LINGER_SECONDS:.0f} s later: API-server watches {watches(cluster)}", flush=True)
    if args.subscribers and not room:
        await bench_fanout(cluster, api, gateway.url, args.subscribers, args.writes, others=0)


def sizes(value: str) -> list[int]:
    return [int(v.replace("_", "")) for v in value.split(",") if v.strip()]


def main() -> None:
    if sys.argv[1:] == ["--hold-streams"]:
        asyncio.run(hold_streams())
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--streams", type=int, default=10_000)
    parser.add_argument("--tasks", type=int, default=1_000)
    parser.add_argument("--subscribers", type=int, default=100, help="0 skips the fan-out")
    parser.add_argument("--writes", type=int, default=30)
    parser.add_argument("--list-tasks", type=sizes, default=[10_000, 100_000])
    parser.add_argument("--list-calls", type=int, default=50)
    parser.add_argument("--clients", type=int, default=0, help="default: 1 per 2,500 streams")
    parser.add_argument("--open-concurrency", type=int, default=64)
    parser.add_argument("--create-concurrency", type=int, default=48)
    args = parser.parse_args()
    if args.tasks < 1:
        parser.error("--tasks must be at least 1")
    limit = raise_descriptor_limit()
    print(
        f"(open files per process: {limit:,}; the gateway needs one per stream, and one per "
        "API watch it holds)",
        flush=True,
    )
    with (
        LocalCluster(crds=REPO_ROOT / "crds") as cluster,
        tempfile.TemporaryDirectory() as workdir,
    ):
        subprocess.run(
            ["kubectl", f"--kubeconfig={cluster.kubeconfig}", "create", "namespace", NAMESPACE],
            check=True,
            capture_output=True,
        )
        asyncio.run(bench(cluster, Path(workdir), args))


if __name__ == "__main__":
    main()
