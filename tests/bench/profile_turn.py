"""Profile one simple turn: where the milliseconds between a message and its parked status go.

Starts the same set-up as ``bench_turns.py`` (local control plane, scripted model server as a
subprocess, the operator as a subprocess) but runs the operator through this file, which wraps
a few of its functions to write timestamps to a trace file. Timestamps are
``time.perf_counter()``, which is CLOCK_MONOTONIC on Linux and so comparable across processes.
Nothing under ``tiny_harness/`` is changed: the wrapping happens in the operator's process, at
start-up, here. py-spy must be installed in the venv for ``--pyspy`` (``pip install py-spy``).

::

    python tests/bench/profile_turn.py [--provider responses] [--turns 30] [--pyspy]
        [--concurrency N] [--conc-turns 10] [--experiments a,b] [--keep DIR]
    python tests/bench/profile_turn.py --memory 1000,4000,10000 [--memory-turns 5]
        [--tracemalloc] [--experiments a,b] [--operator-env KEY=VALUE]

1. ``--turns`` serial turns on one conversation, with the trace on: a table of the median
   milliseconds between milestones (message create → kopf sees the event → worker acts →
   status WORKING written → model request → model response → record written → parked status
   on the wire → the bench's watch sees it), plus the raw status PATCH reference measured just
   before each turn, the API server's own mean time per request kind (from its
   ``apiserver_request_duration_seconds`` histogram), the watch events and worker actions per
   turn, CPU per turn of every process, and the operator's event-loop lag.
2. With ``--pyspy``: the same number of turns again with py-spy sampling the operator
   (``--gil``: only the thread running Python, so idle waits are not counted; py-spy pauses
   the process for each sample, so latencies under it are not the figures of 1.), then the
   samples summed by component, in CPU ms per turn (py-spy's own overhead inflates them by
   roughly a third: compare with the CPU line of 1.).
3. With ``--concurrency N``: N conversations at once, ``--conc-turns`` turns each: the same
   breakdown (queueing shows as event-loop lag), then with ``--pyspy`` a second round under
   py-spy.

``--memory`` instead creates parked tasks in steps and prints the operator's RSS at each (after
its watch has gone quiet), what the runtime keeps per task, and with ``--tracemalloc`` where
the live Python memory was allocated. ``--experiments`` patches candidate changes into the
operator's process (see ``EXPERIMENTS``) so their effect is measured before anyone makes them.
"""

from __future__ import annotations

import argparse
import asyncio
import functools
import itertools
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
CHILD_ENTRY = str(Path(__file__).resolve())

# -- the operator's side: wrap, then run the CLI -------------------------------------------------


def _child(argv: list[str]) -> int:
    """Wrap a few operator functions to write ``time, event, task, detail`` lines, then run
    the CLI. The task is a context variable set when a worker starts, so everything a worker
    and its turn do (asyncio tasks inherit the context) is attributed to its task."""
    import contextvars

    trace_path = os.environ["PROFILE_TURN_TRACE"]
    out = open(trace_path, "a", buffering=1)  # noqa: SIM115 - open for the process's life
    clock = time.perf_counter
    current: contextvars.ContextVar[str] = contextvars.ContextVar("task", default="-")

    def trace(event: str, detail: str = "", task: str | None = None) -> None:
        out.write(f"{clock():.6f}\t{event}\t{task or current.get()}\t{detail}\n")

    def wrap_async(owner: Any, attr: str, label: Any, *, sets_task: bool = False) -> None:
        original = getattr(owner, attr)

        @functools.wraps(original)
        async def wrapper(*args: Any, **kwargs: Any) -> Any:
            detail = label(*args, **kwargs)
            if sets_task:
                current.set(detail)
            trace(f"{attr}>", detail)
            try:
                return await original(*args, **kwargs)
            finally:
                trace(f"{attr}<", detail)

        setattr(owner, attr, wrapper)

    import httpx2
    from kopf._cogs.clients import watching
    from kubernetes_asyncio.client import rest

    from tiny_harness.core.loop import CoreLoop
    from tiny_harness.kube.journal import TurnRecords
    from tiny_harness.operator import runtime, status_writer, worker
    from tiny_harness.operator.metrics import MeteredAdapter

    original_watch = watching.infinite_watch

    async def infinite_watch(*args: Any, **kwargs: Any) -> Any:
        async for raw in original_watch(*args, **kwargs):
            if isinstance(raw, dict) and isinstance(raw.get("object"), dict):
                obj = raw["object"]
                status = obj.get("status") or {}
                kind = obj.get("kind")
                task = (
                    obj["metadata"].get("name")
                    if kind == "HarnessTask"
                    else (obj.get("spec") or {}).get("task", "-")
                )
                trace(
                    "raw",
                    f"{kind} {raw.get('type')} {status.get('state', '')} "
                    f"{bool(status.get('runner'))} {status.get('turn', '')}",
                    task,
                )
            yield raw

    watching.infinite_watch = infinite_watch

    runtimes: list[Any] = []
    original_init = runtime.Runtime.__init__

    def init(self: Any, *args: Any, **kwargs: Any) -> None:
        original_init(self, *args, **kwargs)
        runtimes.append(self)

    runtime.Runtime.__init__ = init  # type: ignore[method-assign]

    original_poke = runtime.Runtime.poke

    def poke(self: Any, namespace: str, name: str) -> None:
        trace("poke", "", name)
        original_poke(self, namespace, name)

    runtime.Runtime.poke = poke  # type: ignore[method-assign]

    original_own = runtime.Runtime.poke_unless_own

    def poke_unless_own(
        self: Any, kind: str, namespace: str, name: str, task: str, rv: str
    ) -> None:
        own = rv in self._written.get((kind, namespace, name), ())
        trace("own_event" if own else "poke_event", kind, task)
        original_own(self, kind, namespace, name, task, rv)

    runtime.Runtime.poke_unless_own = poke_unless_own  # type: ignore[method-assign]

    wrap_async(worker.TaskWorker, "run", lambda self: self.name, sets_task=True)
    wrap_async(worker.TaskWorker, "act", lambda self, snap, action: type(action).__name__)
    wrap_async(
        status_writer.StatusWriter,
        "write",
        lambda self, patch, **kw: str(patch.get("state", "-")),
    )
    wrap_async(TurnRecords, "append", lambda self, task, turn, *a, **kw: str(turn))
    wrap_async(CoreLoop, "run_turn", lambda self, host, turn: str(turn.turn))
    wrap_async(MeteredAdapter, "complete", lambda self, request: "")
    wrap_async(httpx2.AsyncClient, "send", lambda self, request, **kw: str(request.url.path))
    wrap_async(rest.RESTClientObject, "request", lambda self, method, url, *a, **kw: method)

    if os.environ.get("PROFILE_TURN_TRACEMALLOC"):
        install_memory_dump(os.environ["PROFILE_TURN_TRACEMALLOC"])

    def trim(*_: Any) -> None:
        """gc.collect() and glibc's malloc_trim(0): what RSS is free memory kept by malloc?
        Also counts what the runtime keeps per task, into the trace."""
        import ctypes
        import gc

        gc.collect()
        ctypes.CDLL("libc.so.6").malloc_trim(0)
        for rt in runtimes:
            trace(
                "counts",
                f"overlay tasks {len(rt.cache.overlay.tasks)}, overlay records "
                f"{sum(len(v) for v in rt.cache.overlay.records.values())}, written "
                f"{len(rt._written)}, workers {len(rt._workers)}, "
                f"states {len(rt.metrics._states)}, leases seen {len(rt.leases._seen)}; "
                f"live Python blocks {sys.getallocatedblocks():,}, "
                f"gc-tracked objects {len(gc.get_objects()):,}, {_pymalloc_arenas()}",
                "-",
            )

    def _pymalloc_arenas() -> str:
        """pymalloc's arenas in use and the bytes of their pools, from its own statistics:
        how much of the RSS is small-object arenas, used or kept for a few live blocks."""
        import re as regex

        read, write = os.pipe()
        saved = os.dup(2)
        try:
            os.dup2(write, 2)
            sys._debugmallocstats()
        finally:
            os.dup2(saved, 2)
            os.close(write)
            os.close(saved)
        with os.fdopen(read) as pipe:
            text = pipe.read()
        wanted = (
            "arenas allocated current",
            "bytes in allocated blocks",
            "bytes in available blocks",
            "bytes in unused pools",
        )
        found = []
        for label in wanted:
            match = regex.search(rf"# {label}\s*=\s*([\d,]+)", text)
            if match:
                found.append(f"{label} {match.group(1)}")
        return "pymalloc: " + "; ".join(found)

    signal.signal(signal.SIGUSR2, trim)
    experiments = [e for e in os.environ.get("PROFILE_TURN_EXPERIMENTS", "").split(",") if e]
    apply_experiments(experiments)

    import tiny_harness.cli.main as cli
    from tiny_harness.operator import process as operator_runner

    original_run = operator_runner.run_operator

    async def lag_monitor() -> None:
        """The event loop's lag: how late a 5 ms sleep wakes up."""
        while True:
            t = clock()
            await asyncio.sleep(0.005)
            trace("lag", f"{(clock() - t - 0.005) * 1000:.3f}", "-")

    async def run_operator(*args: Any, **kwargs: Any) -> None:
        monitor = asyncio.create_task(lag_monitor())
        try:
            await original_run(*args, **kwargs)
        finally:
            monitor.cancel()

    # The CLI imports run_operator from the runner when the subcommand runs.
    operator_runner.run_operator = run_operator  # type: ignore[assignment]
    return cli.main(argv)


#: Candidate changes to measure before making them: name -> what it changes. Each entry is a
#: branch in ``apply_experiments`` that patches the operator's process at start-up. (The last
#: set, an untransformed model request, async index functions, no diff base, quiet per-request
#: loggers and a capped connection pool, were measured here and are now in tiny_harness.)
EXPERIMENTS: dict[str, str] = {}


def apply_experiments(names: list[str]) -> None:
    """Apply the named candidate changes (see ``EXPERIMENTS``) in the operator's process."""
    unknown = set(names) - set(EXPERIMENTS)
    if unknown:
        raise SystemExit(f"unknown experiments: {sorted(unknown)} (known: {sorted(EXPERIMENTS)})")


def install_memory_dump(path: str) -> None:
    """On SIGUSR1, write where the live Python memory was allocated (tracemalloc, attributed to
    the innermost frame in tiny_harness or kopf) and the commonest object types to ``path``."""
    import gc
    import tracemalloc

    tracemalloc.start(12)

    def site(tb: Any) -> str:
        for frame in reversed(tb):  # innermost first... tracemalloc lists oldest call first
            name = frame.filename
            if "/tiny_harness/" in name or "/kopf/" in name:
                short = name.split("/site-packages/")[-1].split("/work/main/")[-1]
                return f"{short}:{frame.lineno}"
        frame = tb[-1]
        short = frame.filename.split("/site-packages/")[-1]
        return f"{short}:{frame.lineno} (no tiny_harness/kopf frame)"

    def dump(*_: Any) -> None:
        gc.collect()
        snap = tracemalloc.take_snapshot()
        by_site: Counter[str] = Counter()
        by_file: Counter[str] = Counter()
        for stat in snap.statistics("traceback"):
            key = site(stat.traceback)
            by_site[key] += stat.size
            by_file[key.rsplit(":", 1)[0]] += stat.size
        types = Counter(type(o).__name__ for o in gc.get_objects())
        with open(path, "w") as f:
            total = sum(by_site.values())
            f.write(f"traced total {total / 2**20:.1f} MB\n")
            f.write("by file (innermost tiny_harness/kopf frame):\n")
            for key, size in by_file.most_common(20):
                f.write(f"  {size / 2**20:8.2f} MB  {key}\n")
            f.write("by line:\n")
            for key, size in by_site.most_common(30):
                f.write(f"  {size / 2**20:8.2f} MB  {key}\n")
            f.write("gc-tracked objects by type:\n")
            for name, n in types.most_common(15):
                f.write(f"  {n:9d}  {name}\n")

    signal.signal(signal.SIGUSR1, dump)


# -- the bench's side ------------------------------------------------------------------------------


sys.path.insert(0, str(HERE))

import bench_turns as bt  # noqa: E402


def apiserver_durations(cluster: Any) -> dict[tuple[str, str], tuple[float, int]]:
    """(sum seconds, count) of apiserver_request_duration_seconds, by (verb, resource)."""
    text = cluster.admin().request("GET", "/metrics").body.decode()
    out: dict[tuple[str, str], list[float]] = defaultdict(lambda: [0.0, 0])
    for line in text.splitlines():
        for suffix, slot in (("_sum{", 0), ("_count{", 1)):
            prefix = "apiserver_request_duration_seconds" + suffix
            if not line.startswith(prefix):
                continue
            labels = dict(
                p.split("=", 1) for p in line[line.index("{") + 1 : line.index("}")].split(",")
            )
            resource = labels.get("resource", "").strip('"')
            if not resource.startswith("harness"):
                continue
            sub = labels.get("subresource", "").strip('"')
            key = (labels["verb"].strip('"'), resource + (f"/{sub}" if sub else ""))
            out[key][slot] += float(line.rsplit(" ", 1)[1])
    return {k: (v[0], int(v[1])) for k, v in out.items()}


Row = tuple[float, str, str, str]  # time, event, task, detail


def read_trace(path: Path) -> dict[str, list[Row]]:
    """The trace's rows by task, in time order."""
    by_task: dict[str, list[Row]] = defaultdict(list)
    for line in path.read_text().splitlines():
        t, event, task, detail = line.split("\t", 3)
        by_task[task].append((float(t), event, task, detail))
    return by_task


MILESTONES = [
    ("t0", "bench: message create sent"),
    ("posted", "bench: message create returned"),
    ("raw_msg", "kopf: message watch event read"),
    ("poke", "handler ran: worker poked"),
    ("act", "worker: RunTurn decided (snapshot, facts, decide)"),
    ("w1_wire", "status WORKING: request on the wire"),
    ("w1_done", "status WORKING: written (response parsed)"),
    ("loop", "core loop started"),
    ("model", "model adapter called (drain, context assembled)"),
    ("http", "model HTTP request sent (SDK request built)"),
    ("http_done", "model HTTP response received"),
    ("model_done", "model adapter returned (response parsed)"),
    ("rec_wire", "turn record: request on the wire"),
    ("rec_done", "turn record: written"),
    ("w2_wire", "status parked: request on the wire"),
    ("seen", "bench: watch shows the task parked"),
]


def milestones(rows: list[Row], t0: float, posted: float, seen: float) -> dict[str, float] | None:
    """The milestones of one turn from its task's trace rows; None if one is missing."""
    window = [r for r in rows if t0 - 0.001 <= r[0] <= seen + 1.0]
    m: dict[str, float] = {"t0": t0, "posted": posted, "seen": seen}

    def first(pred: Any, after: float) -> float | None:
        for t, event, _task, detail in window:
            if t >= after and pred(event, detail):
                return t
        return None

    msg = first(lambda e, d: e == "raw" and d.startswith("HarnessMessage "), t0)
    if msg is None:
        return None
    m["raw_msg"] = msg
    steps = [
        ("poke", lambda e, d: e == "poke"),
        ("act", lambda e, d: e == "act>" and d == "RunTurn"),
        ("w1_wire", lambda e, d: e == "request>" and d == "PATCH"),
        ("w1_done", lambda e, d: e == "write<"),
        ("loop", lambda e, d: e == "run_turn>"),
        ("model", lambda e, d: e == "complete>"),
        ("http", lambda e, d: e == "send>"),
        ("http_done", lambda e, d: e == "send<"),
        ("model_done", lambda e, d: e == "complete<"),
        ("rec_wire", lambda e, d: e == "request>" and d == "POST"),
        ("rec_done", lambda e, d: e == "append<"),
        ("w2_wire", lambda e, d: e == "request>" and d == "PATCH"),
        ("w2_done", lambda e, d: e == "write<"),
    ]
    after = msg
    for key, pred in steps:
        t = first(pred, after)
        if t is None:
            return None
        m[key] = after = t
    return m


def loop_lag(by_task: dict[str, list[Row]], start: float, end: float) -> str:
    lags = [float(d) for t, e, _, d in by_task.get("-", []) if e == "lag" and start <= t <= end]
    if not lags:
        return "operator event-loop lag: no samples"
    return (
        "operator event-loop lag (a 5 ms sleep wakes late by): "
        f"p50 {bt.percentile(lags, 50):.1f} ms, "
        f"p90 {bt.percentile(lags, 90):.1f} ms, p99 {bt.percentile(lags, 99):.1f} ms, "
        f"max {max(lags):.1f} ms"
    )


def report_milestones(all_m: list[dict[str, float]], ref_ms: list[float]) -> None:
    keys = [k for k, _ in MILESTONES]
    labels = dict(MILESTONES)
    total = statistics.median((m["seen"] - m["t0"]) * 1000 for m in all_m)
    ref50 = statistics.median(ref_ms)
    print(
        f"\none simple turn, median over {len(all_m)} turns: message → parked {total:.1f} ms "
        f"= {total / ref50:.1f}x the raw status PATCH p50 ({ref50:.1f} ms)\n"
    )
    print(f"  {'from → to':<78} {'p50 ms':>7} {'mean':>7}")
    for a, b in itertools.pairwise(keys):
        gaps = [(m[b] - m[a]) * 1000 for m in all_m]
        print(
            f"  {labels[a][:36]:<36} → {labels[b][:39]:<39} "
            f"{statistics.median(gaps):7.2f} {statistics.fmean(gaps):7.2f}"
        )
    groups = [
        ("message create round trip (bench's POST)", "t0", "posted"),
        ("watch: POST returned → kopf has the message event", "posted", "raw_msg"),
        ("kopf: event → our handler (indexing, causes, handler call)", "raw_msg", "poke"),
        ("worker: poke → RunTurn decided", "poke", "act"),
        ("status WORKING write, total (client + wire)", "act", "w1_done"),
        ("turn set-up → model adapter called", "w1_done", "model"),
        ("model SDK: build request", "model", "http"),
        ("model HTTP round trip (loopback, scripted server)", "http", "http_done"),
        ("model SDK: parse response", "http_done", "model_done"),
        ("model done → record request on the wire", "model_done", "rec_wire"),
        ("turn record write", "rec_wire", "rec_done"),
        ("record done → parked status on the wire", "rec_done", "w2_wire"),
        ("parked status write → the bench's watch shows it", "w2_wire", "seen"),
    ]
    gaps = [(m["w2_done"] - m["w2_wire"]) * 1000 for m in all_m]
    print(
        "  (the parked status write's response: "
        f"{statistics.median(gaps):.2f} ms after it was sent)"
    )
    print(f"\n  {'segment':<62} {'p50 ms':>7} {'share':>6}")
    for label, a, b in groups:
        gaps = [(m[b] - m[a]) * 1000 for m in all_m]
        p50 = statistics.median(gaps)
        print(f"  {label:<62} {p50:7.2f} {p50 / total * 100:5.0f}%")


# py-spy's raw output: "frame;frame;...;frame count"; a frame is "function (path:line)".
COMPONENTS = [  # leaf-most match wins: where the CPU is actually spent
    ("openai/_utils/_transform", "openai SDK: request params transform"),
    ("openai/", "openai SDK: other"),
    ("anthropic/", "anthropic SDK"),
    ("httpcore2/", "httpx2/httpcore2 (model HTTP)"),
    ("httpx2/", "httpx2/httpcore2 (model HTTP)"),
    ("kubernetes_asyncio/client/api_client", "kubernetes_asyncio: (de)serialise"),
    ("kubernetes_asyncio/", "kubernetes_asyncio: other"),
    ("aiohttp/", "aiohttp (API HTTP)"),
    ("ssl.py", "TLS"),
    ("json/", "json"),
    ("kopf/_cogs/clients/watching", "kopf: watch stream"),
    ("kopf/_core/reactor/processing", "kopf: event processing"),
    ("kopf/_core/engines/indexing", "kopf: indexing"),
    ("kopf/_cogs/structs/diffs", "kopf: diffs"),
    ("kopf/_cogs/configs/diffbase", "kopf: diff-base"),
    ("kopf/_core/actions", "kopf: handler execution"),
    ("kopf/_core/intents", "kopf: causes/registries"),
    ("kopf/_cogs/structs", "kopf: structs (bodies, patches)"),
    ("kopf/", "kopf: other"),
    ("prometheus_client/", "prometheus metrics"),
    ("tiny_harness/core/", "tiny_harness core"),
    ("tiny_harness/operator/", "tiny_harness operator"),
    ("tiny_harness/kube/", "tiny_harness kube"),
    ("tiny_harness/models/", "tiny_harness models"),
    ("pydantic", "pydantic"),
    ("logging/", "logging"),
    ("asyncio/", "asyncio event loop"),
    ("anyio/", "anyio"),
]

CALLERS = [  # any frame in the stack: what the CPU was spent *for* (asyncio tasks are separate)
    ("process_resource_event", "kopf: processing watch events (all kinds)"),
    ("index_resource", "  of which: indexing (kopf + our index functions)"),
    ("register_indexes.<locals>", "    of which: our index functions"),
    ("run_in_executor", "    of which: handing sync index functions to a thread"),
    ("_detect_causes", "  of which: kopf cause detection (diff-base, diff)"),
    ("build_registry.<locals>.on_", "  of which: our event handlers"),
    ("infinite_watch", "kopf: reading + parsing watch streams"),
    ("TaskWorker.step", "worker passes (step: snapshot, decide, act; not the turn)"),
    ("TaskWorker.snapshot", "  of which: snapshot (cache + pydantic)"),
    ("Fences.take_lease", "  of which: status WORKING write"),
    ("CoreLoop.run_turn", "the turn (core loop task)"),
    ("MeteredAdapter.complete", "  of which: model adapter call"),
    ("async_maybe_transform", "    of which: openai params transform"),
    ("assemble_context", "  of which: context assembly"),
    ("TurnRecords.append", "  of which: turn record write"),
    ("end_turn", "  of which: end_turn (record + parked status)"),
    ("api_client.py", "kubernetes_asyncio ApiClient (any request)"),
    ("posting", "kopf: posting k8s Events"),
    ("Cache.children", "any: Cache.children (scans the whole overlay)"),
    ("task_state", "any: metrics.task_state (tallies every task)"),
]


def summarise_pyspy(path: Path, rate: int, turns: int) -> None:
    leaf: Counter[str] = Counter()
    inclusive: Counter[str] = Counter()
    total = 0
    for line in path.read_text().splitlines():
        stack, _, count_s = line.rpartition(" ")
        if not stack:
            continue
        count = int(count_s)
        total += count
        frames = stack.split(";")
        for frame in reversed(frames):
            hit = next((label for key, label in COMPONENTS if key in frame), None)
            if hit:
                leaf[hit] += count
                break
        else:
            leaf["other"] += count
        joined = stack
        for key, label in CALLERS:
            if key in joined:
                inclusive[label] += count
    per = 1000 / rate / max(turns, 1)
    print(
        f"\npy-spy: {total} samples at {rate}/s over {turns} turns = "
        f"{total * per:.1f} ms of operator CPU per turn"
    )
    print("  where (leaf-most component):")
    for label, n in leaf.most_common():
        print(f"    {label:<48} {n * per:6.2f} ms/turn {n / total * 100:5.1f}%")
    print("  for what (inclusive):")
    for _, label in CALLERS:
        n = inclusive.get(label, 0)
        print(f"    {label:<48} {n * per:6.2f} ms/turn {n / total * 100:5.1f}%")


class PySpy:
    def __init__(self, pid: int, out: Path, rate: int) -> None:
        self.out = out
        self.rate = rate
        spy = Path(sys.executable).parent / "py-spy"
        self.proc = subprocess.Popen(
            [
                str(spy),
                "record",
                "--pid",
                str(pid),
                "--rate",
                str(rate),
                "--format",
                "raw",
                "--output",
                str(out),
                "--gil",
                "--full-filenames",
            ],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.PIPE,
        )
        time.sleep(1.0)

    def stop(self) -> None:
        self.proc.send_signal(signal.SIGINT)
        try:
            _, err = self.proc.communicate(timeout=30)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            _, err = self.proc.communicate()
        if not self.out.exists():
            print(f"py-spy wrote nothing: {err.decode()[-500:]}", file=sys.stderr)


async def concurrent_round(
    args: argparse.Namespace,
    round_: str,
    bench: Any,
    operator: Any,
    ref: Any,
    tasks: Any,
    messages: Any,
    parked: Any,
    trace_path: Path,
    keep: Path,
) -> None:
    names = [f"{round_[0]}{i}" for i in range(args.concurrency)]
    await bt.create_parked(tasks, parked, names, 50)
    await asyncio.sleep(1)
    ref_ms = [await ref.patch() for _ in range(20)]
    out = keep / f"pyspy-c{args.concurrency}.txt"
    spy = PySpy(operator.pid, out, args.rate) if round_ == "py-spy" else None
    samples: list[tuple[str, float, float, float]] = []

    async def talk(name: str) -> None:
        for turn in range(1, args.conc_turns + 1):
            t0 = time.perf_counter()
            await bt.send(messages, name, turn)
            posted = time.perf_counter()
            samples.append((name, t0, posted, await parked.until(name, turn)))

    meter = bench.meter(operator)
    start = time.perf_counter()
    await asyncio.gather(*(talk(n) for n in names))
    elapsed = time.perf_counter() - start
    cpu, waits = meter.per(len(samples)), meter.waits(len(samples))
    if spy is not None:
        spy.stop()
    lat = [(s[3] - s[1]) * 1000 for s in samples]
    print(
        f"\n== {args.concurrency} concurrent conversations ({round_}): "
        f"{len(samples) / elapsed:.1f} turns/s, message → parked {bt.p50_p99(lat)}"
    )
    print(f"  {bt.format_cpu(cpu, waits)}")
    if spy is None:
        await asyncio.sleep(0.2)
        by_task = read_trace(trace_path)
        all_m = [
            m
            for name, t0, posted, seen in samples
            if (m := milestones(by_task[name], t0, posted, seen)) is not None
        ]
        if all_m:
            report_milestones(all_m, ref_ms)
        print("  " + loop_lag(by_task, start_wall := samples[0][1], max(x[3] for x in samples)))
        del start_wall
    elif out.exists():
        summarise_pyspy(out, args.rate, len(samples))


def wait_quiet(trace: Path, quiet: float = 5.0, limit: float = 900.0) -> float:
    """Wait until the operator has read no watch event for ``quiet`` seconds (it may lag far
    behind the bench's own watch under tracemalloc); the seconds waited."""
    start = time.perf_counter()
    while time.perf_counter() - start < limit:
        last = 0.0
        with trace.open("rb") as f:
            f.seek(max(0, trace.stat().st_size - 200_000))
            for line in f.read().decode(errors="replace").splitlines():
                parts = line.split("\t")
                if len(parts) > 1 and parts[1] == "raw":
                    try:
                        last = float(parts[0])
                    except ValueError:
                        continue
        if time.perf_counter() - last >= quiet:
            break
        time.sleep(1.0)
    return time.perf_counter() - start


def memory_dump(pid: int, dump: Path) -> str:
    """Ask the operator for its tracemalloc summary and wait for it."""
    dump.unlink(missing_ok=True)
    os.kill(pid, signal.SIGUSR1)
    while not dump.exists():
        time.sleep(0.5)
    time.sleep(1)
    return dump.read_text()


async def memory_profile(args: argparse.Namespace, keep: Path) -> None:
    """Parked tasks on an operator under tracemalloc: where the memory per task goes."""
    from kubernetes_asyncio import client

    from tiny_harness.devcluster import LocalCluster
    from tiny_harness.kube.client import HarnessTasks, connect
    from tiny_harness.kube.crd import REPO_ROOT
    from tiny_harness.kube.messages import HarnessMessages

    model = bt.ModelServerProcess()
    dump = keep / "memory.txt"
    try:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster:
            api = await connect(cluster.kubeconfig)
            ns = "bench-idle"
            await client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
            operator = bt.OperatorProcess(
                cluster,
                ns,
                model.config(args.provider),
                keep,
                entry=(CHILD_ENTRY, "--child"),
                env={
                    "PROFILE_TURN_TRACE": str(keep / "trace.tsv"),
                    "PROFILE_TURN_EXPERIMENTS": args.experiments,
                    **({"PROFILE_TURN_TRACEMALLOC": str(dump)} if args.tracemalloc else {}),
                    **dict(kv.split("=", 1) for kv in args.operator_env),
                },
                log=keep / "operator.log",
            )
            parked = bt.Parked(api, ns)
            try:
                await operator.ready()
                await parked.start()
                done = 0
                for count in (0, *(int(n) for n in args.memory.split(","))):
                    names = [f"idle-{i}" for i in range(done, count)]
                    t0 = time.perf_counter()
                    await bt.create_parked(HarnessTasks(api, ns), parked, names, 100)
                    took = time.perf_counter() - t0
                    done = count
                    waited = await asyncio.to_thread(wait_quiet, keep / "trace.tsv")
                    await asyncio.sleep(3)
                    print(
                        f"\n== {count} parked tasks (experiments: {args.experiments or 'none'}"
                        f"{'; env ' + ' '.join(args.operator_env) if args.operator_env else ''}): "
                        f"operator RSS {bt.rss_mb(operator.pid):.0f} MB, "
                        f"peak {bt.rss_mb(operator.pid, 'VmHWM'):.0f} MB"
                        + (" (under tracemalloc)" if args.tracemalloc else "")
                        + (f"; created and parked in {took:.1f} s" if names else "")
                        + f"; the operator's watch went quiet {waited:.0f} s later"
                    )
                    os.kill(operator.pid, signal.SIGUSR2)
                    await asyncio.sleep(2)
                    counts = [
                        d
                        for _, e, _, d in read_trace(keep / "trace.tsv").get("-", [])
                        if e == "counts"
                    ]
                    print(
                        "    after gc.collect() + malloc_trim(0): "
                        f"RSS {bt.rss_mb(operator.pid):.0f} MB; runtime keeps: "
                        + (counts[-1] if counts else "?")
                    )
                    if args.tracemalloc:
                        print(await asyncio.to_thread(memory_dump, operator.pid, dump))
                if args.memory_turns:
                    tasks = HarnessTasks(api, ns)
                    messages = HarnessMessages(api, ns)
                    names = [f"m{i}" for i in range(100)]
                    await bt.create_parked(tasks, parked, names, 50)
                    await asyncio.sleep(2)
                    out = keep / "pyspy-memory-turns.txt"
                    spy = PySpy(operator.pid, out, args.rate) if args.pyspy else None
                    meter = bt.CpuMeter({"operator": operator.pid})
                    t0 = time.perf_counter()
                    res = await asyncio.gather(
                        *(bt.conversation(messages, parked, n, 1, args.memory_turns) for n in names)
                    )
                    n = sum(len(r) for r in res)
                    if spy is not None:
                        spy.stop()
                        summarise_pyspy(out, args.rate, n)
                    print(
                        f"100 conversations among {done} parked tasks: "
                        f"{n / (time.perf_counter() - t0):.1f} turns/s, operator CPU "
                        f"{meter.per(n)['operator']:.1f} ms/turn"
                    )
            finally:
                await parked.stop()
                operator.stop()
                await api.close()
    finally:
        model.stop()


async def profile(args: argparse.Namespace, keep: Path) -> None:
    from kubernetes_asyncio import client

    from tiny_harness.devcluster import LocalCluster
    from tiny_harness.kube.client import HarnessTasks, connect
    from tiny_harness.kube.crd import REPO_ROOT
    from tiny_harness.kube.messages import HarnessMessages

    model = bt.ModelServerProcess()
    trace_path = keep / "trace.tsv"
    trace_path.unlink(missing_ok=True)
    try:
        with LocalCluster(crds=REPO_ROOT / "crds") as cluster:
            api = await connect(cluster.kubeconfig)
            bench = bt.Bench(cluster, api, model, keep)
            ref = bt.Reference(api)
            await ref.setup()
            ns = f"bench-{args.provider}"
            await client.CoreV1Api(api).create_namespace({"metadata": {"name": ns}})
            operator = bt.OperatorProcess(
                cluster,
                ns,
                model.config(args.provider),
                keep,
                entry=(CHILD_ENTRY, "--child"),
                env={
                    "PROFILE_TURN_TRACE": str(trace_path),
                    "PROFILE_TURN_EXPERIMENTS": args.experiments,
                },
                log=keep / "operator.log",
            )
            parked = bt.Parked(api, ns)
            tasks = HarnessTasks(api, ns)
            messages = HarnessMessages(api, ns)
            try:
                await operator.ready()
                await parked.start()
                await bt.create_parked(tasks, parked, ["solo"])
                for turn in (1, 2, 3):  # warm-up
                    await bt.one_turn(messages, parked, "solo", turn)
                await asyncio.sleep(0.3)
                print(
                    f"profile_turn: {bt.PROVIDERS[args.provider]}, {args.turns} serial turns, "
                    f"experiments: {args.experiments or 'none'}; "
                    f"load average {os.getloadavg()[0]:.2f}"
                )
                # 1. timestamps
                durations_before = apiserver_durations(cluster)
                meter = bench.meter(operator)
                samples: list[tuple[int, float, float, float]] = []
                ref_ms: list[float] = []
                for turn in range(4, 4 + args.turns):
                    await asyncio.sleep(0.05)
                    for _ in range(3):
                        ref_ms.append(await ref.patch())
                    await asyncio.sleep(0.01)
                    t0 = time.perf_counter()
                    await bt.send(messages, "solo", turn)
                    posted = time.perf_counter()
                    seen = await parked.until("solo", turn)
                    samples.append((turn, t0, posted, seen))
                cpu, waits = meter.per(args.turns), meter.waits(args.turns)
                durations_after = apiserver_durations(cluster)
                await asyncio.sleep(0.2)
                by_task = read_trace(trace_path)
                all_m = []
                for _turn, t0, posted, seen in samples:
                    m = milestones(by_task["solo"], t0, posted, seen)
                    if m is not None:
                        all_m.append(m)
                print(
                    f"raw status PATCH reference: p50 {statistics.median(ref_ms):.1f} ms "
                    f"(p99 {bt.percentile(ref_ms, 99):.1f} ms, {len(ref_ms)} samples)"
                )
                if all_m:
                    report_milestones(all_m, ref_ms)
                else:
                    print("no turn could be matched in the trace")
                print("\n  kube-apiserver's own time per request (mean over the serial turns):")
                for key, (s1, c1) in sorted(durations_after.items()):
                    s0, c0 = durations_before.get(key, (0.0, 0))
                    if c1 - c0 > 0:
                        print(
                            f"    {key[0]:6} {key[1]:28} {(s1 - s0) / (c1 - c0) * 1000:6.2f} ms "
                            f"({c1 - c0} requests)"
                        )
                window = [
                    r for r in by_task["solo"] if samples[0][1] <= r[0] <= samples[-1][3] + 0.1
                ]
                own = Counter(
                    e for _, e, _, _ in window if e in ("own_event", "poke_event", "poke")
                )
                raw = Counter(d.split(" ")[0] for _, e, _, d in window if e == "raw")
                acts = Counter(d for _, e, _, d in window if e == "act>")
                n = len(samples)
                print(
                    "\n  per turn, the operator processed watch events "
                    + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(raw.items()))
                    + "; handler outcomes "
                    + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(own.items()))
                    + "; worker actions "
                    + ", ".join(f"{k} {v / n:.1f}" for k, v in sorted(acts.items()))
                )
                print(f"  {bt.format_cpu(cpu, waits)}")
                print("  " + loop_lag(by_task, samples[0][1], samples[-1][3]))

                # 2. py-spy on the same serial turns
                if args.pyspy:
                    out = keep / "pyspy-serial.txt"
                    spy = PySpy(operator.pid, out, args.rate)
                    first = 4 + args.turns
                    for turn in range(first, first + args.turns):
                        await bt.one_turn(messages, parked, "solo", turn)
                        await asyncio.sleep(0.02)
                    await asyncio.sleep(0.3)
                    spy.stop()
                    if out.exists():
                        print("\n== serial turns under py-spy")
                        summarise_pyspy(out, args.rate, args.turns)

                # 3. throughput: timestamps first, then (with --pyspy) CPU under py-spy
                if args.concurrency:
                    for round_ in ("trace", "py-spy") if args.pyspy else ("trace",):
                        await concurrent_round(
                            args,
                            round_,
                            bench,
                            operator,
                            ref,
                            tasks,
                            messages,
                            parked,
                            trace_path,
                            keep,
                        )
            finally:
                await parked.stop()
                operator.stop()
                await api.close()
    finally:
        model.stop()


def main() -> None:
    if len(sys.argv) > 1 and sys.argv[1] == "--child":
        sys.exit(_child(sys.argv[2:]))
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--provider", default="responses", choices=sorted(bt.PROVIDERS))
    parser.add_argument("--turns", type=int, default=30)
    parser.add_argument("--pyspy", action="store_true", help="also sample with py-spy")
    parser.add_argument("--rate", type=int, default=250, help="py-spy samples per second")
    parser.add_argument("--concurrency", type=int, default=0, help="conversations at once (3.)")
    parser.add_argument("--conc-turns", type=int, default=10, help="turns each, in 3.")
    parser.add_argument("--keep", type=Path, default=None, help="keep trace and profiles here")
    parser.add_argument(
        "--memory",
        default="",
        help="instead: operator RSS with N parked tasks (a comma-separated list of N: steps)",
    )
    parser.add_argument("--tracemalloc", action="store_true", help="with --memory: where it goes")
    parser.add_argument(
        "--operator-env",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="with --memory: extra environment for the operator (e.g. PYTHONMALLOC=malloc)",
    )
    parser.add_argument(
        "--memory-turns", type=int, default=0, help="with --memory: then 100 conversations"
    )
    parser.add_argument(
        "--experiments",
        default="",
        help="comma-separated candidate changes to patch into the operator: "
        + "; ".join(f"{k}: {v}" for k, v in EXPERIMENTS.items()),
    )
    args = parser.parse_args()
    run = memory_profile if args.memory else profile
    if args.keep is not None:
        args.keep.mkdir(parents=True, exist_ok=True)
        asyncio.run(run(args, args.keep))
    else:
        with tempfile.TemporaryDirectory() as tmp:
            asyncio.run(run(args, Path(tmp)))


if __name__ == "__main__":
    main()
