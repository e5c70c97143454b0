"""Benchmark: heavy inputs on the real operator, local control plane, scripted model at zero delay.

Prints figures and asserts nothing. It uses ``bench_turns.py``'s set-up (the scripted model
server as a subprocess, one operator subprocess per phase in a namespace of its own, the same
control plane throughout), and prints every latency beside the floor measured in the same
run: the raw status PATCH round trip (``bench_turns.Reference``, on a task no operator watches)
and, where the operator writes turn records, a direct create of ``HarnessTurn`` objects of the
same size (copies of the turn's own chunks, created one after another in that unwatched
namespace). The sizes it drives at are the ones ``core/sizes.py`` designs: a message carries at
most 256 KiB, a journal chunk at most 768 KiB, a tool result is cut to 256 KiB.

::

    python tests/bench/bench_heavy.py [--turns 500] [--message-kib 60] [--window 200000]
        [--big-window 400000] [--tasks 10000] [--steps 1000,2000,5000] [--goal-kib 64]
        [--phase-seconds 900] [--phases long,big,many] [--log-dir DIR]

What it prints, one section per phase (``--phases``):

(1) **a long conversation**: ``--turns`` turns of one task, each a ``--message-kib`` message
    answered with one model call. With the model's context window set to ``--window`` tokens
    (``context_window_tokens`` in the operator's configuration; 200,000 is Claude's) the
    history passes the compaction budget after some turns, and from then on a turn that finds
    it over compacts first (one more model call, the summary). The window also keeps every
    model request under 1 MiB, the most the scripted server reads of one (aiohttp's default;
    it answers 413 above it, and the turn fails as it would on a provider's 413). It prints
    message → parked at turns 1, N/5 and N (and the p50 of the ten turns up to each), beside
    the raw PATCH p50 of those turns and a direct create of that turn's records; the model
    request's size and the operator's RSS there; the turns that compacted; the model calls
    per turn; and the bytes the task's ``HarnessTurn`` objects hold per turn (the sum of their
    JSON, as the API server returns them), before the first compaction, at the compactions
    and between them, with etcd's live size before and after;
(2) **1 MiB inputs** (the window ``--big-window`` tokens, so that no compaction comes into
    it): a message of one 1 MiB text part (refused by the client's own model and by the CRD's
    schema, before anything is stored); a message of four 256 KiB parts (stored, then refused
    by the operator with a reason the participant reads in the history, before any model
    call); a message at the limit (taken: one model call); one tool call whose result is
    1 MiB, and three in one step (each cut to 256 KiB, the turn going on with one model call
    per step). For each: the model calls made (the scripted server's own count) against the
    steps the journal holds, and what the journal stored;
(3) **many tasks with big goals**: tasks with ``--goal-kib`` goals created with no operator
    running, and an operator started on them, at each of ``--steps`` tasks and then at
    ``--tasks`` (each start's operator stopped before the next step's tasks are created):
    process start → live, → the first new task initialised, → all new ones initialised; a
    message sent to one task as soon as the operator is live → parked (the first turn after
    start); the operator's RSS once it holds them all, against one on the empty namespace;
    a turn once it has settled. etcd is compacted and defragmented every minute meanwhile
    (:func:`keep_etcd`), as a cluster's maintenance would. When ``--phase-seconds`` runs out
    it stops where it is and prints what it measured at the size it reached.

The first line names the commit measured (``bench_turns.revision``). Each operator's log is
kept in ``--log-dir`` (default: a temporary folder, removed at the end); the lines it logged
at warning level or above are counted at the end of each phase, and the first few printed.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import itertools
import json
import os
import sys
import tempfile
import time
import urllib.request
from collections import Counter, defaultdict
from collections.abc import Awaitable, Callable, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Final

sys.path.insert(0, str(Path(__file__).resolve().parent))

from bench_retention import etcd_compact
from bench_turns import (
    REF_NS,
    Bench,
    CpuMeter,
    ModelServerProcess,
    OperatorProcess,
    Parked,
    Reference,
    format_cpu,
    percentile,
    revision,
    rss_mb,
)
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from tiny_harness.core.compaction import SUMMARY_SYSTEM
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.reply_ids import refusal_of
from tiny_harness.core.sizes import CHUNK_BYTES, ENTRY_TEXT_BYTES, MESSAGE_BYTES
from tiny_harness.core.states import TaskState
from tiny_harness.devcluster import LocalCluster
from tiny_harness.kube.client import HarnessTasks, connect
from tiny_harness.kube.crd import REPO_ROOT
from tiny_harness.kube.journal import TurnRecords
from tiny_harness.kube.messages import HarnessMessages
from tiny_harness.kube.names import (
    API_VERSION,
    GROUP,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    TASK_LABEL,
    TURN_LABEL,
    TURN_PLURAL,
    VERSION,
)
from tiny_harness.testing.model_script import (
    ModelServerControl,
    RecordedRequest,
    ScriptedToolCall,
    TextTurn,
    ToolCallsTurn,
)

#: This folder: the operator finds the bench's tools (heavy_tools.py) on it.
HERE: Final = Path(__file__).resolve().parent
KIB: Final = 1024
MIB: Final = 1024 * 1024
#: How a compaction's summary request is told apart from a step's model call.
SUMMARY_MARK: Final = SUMMARY_SYSTEM[:40]
#: How long one turn may take before the bench stops waiting and prints the task's status.
TURN_TIMEOUT: Final = 180.0
#: The states a task that will not park again is in.
ENDED: Final = frozenset(
    s.value for s in (TaskState.COMPLETED, TaskState.CANCELED, TaskState.FAILED, TaskState.REJECTED)
)
#: The participant every task has.
ALICE: Final = {"id": "alice", "role": "assignee"}
#: kopf keeps a per-object worker for a few seconds after an object's last event; RSS is read
#: after they have gone (as bench_turns does).
SETTLE_SECONDS: Final = 8.0

# -- texts and sizes ------------------------------------------------------------------------------


def filler(size: int, tag: str) -> str:
    """``size`` characters of ASCII prose (so as many bytes), starting with ``tag``: varied
    enough to look like text, the same on every run."""
    words = "the harness keeps every turn of the conversation in its journal and reads it back"
    out = [tag, " "]
    length = len(tag) + 1
    for n in itertools.count():
        piece = f"{words} ({n}). "
        out.append(piece)
        length += len(piece)
        if length >= size:
            break
    return "".join(out)[:size]


def json_size(obj: Any) -> int:
    """An object's size as compact JSON: about what the API server stores in etcd."""
    return len(json.dumps(obj, separators=(",", ":")))


def kib(size: float) -> str:
    return f"{size / KIB:,.1f} KiB"


def first_line(exc: BaseException, limit: int = 400) -> str:
    text = " ".join(str(exc).split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


# -- etcd ------------------------------------------------------------------------------------------


def etcd_sizes(cluster: LocalCluster) -> tuple[int, int]:
    """etcd's database size and the part of it in use, in bytes (its own metrics): the first
    is what the 2 GiB quota counts, the second what live data and history hold."""
    url = f"http://127.0.0.1:{cluster.etcd_port}/metrics"
    total = in_use = 0
    with urllib.request.urlopen(url, timeout=5) as resp:
        for line in resp.read().decode().splitlines():
            if line.startswith("etcd_mvcc_db_total_size_in_bytes "):
                total = int(float(line.split()[1]))
            elif line.startswith("etcd_mvcc_db_total_size_in_use_in_bytes "):
                in_use = int(float(line.split()[1]))
    return total, in_use


def etcd_defragment(cluster: LocalCluster) -> None:
    """Give the pages a compaction freed back, so the next phase starts well within etcd's
    quota (which counts the whole database file, free pages included)."""
    request = urllib.request.Request(
        f"http://127.0.0.1:{cluster.etcd_port}/v3/maintenance/defragment",
        data=b"{}",
        headers={"Content-Type": "application/json"},
    )
    with urllib.request.urlopen(request, timeout=300) as resp:
        resp.read()


#: How often etcd is compacted and defragmented while an operator starts on many tasks.
ETCD_KEEPING_SECONDS: Final = 60.0


async def keep_etcd(cluster: LocalCluster) -> None:
    """Compact and defragment etcd every :data:`ETCD_KEEPING_SECONDS` until cancelled, as a
    cluster's own maintenance does (the API server compacts every five minutes; a defrag is
    an administrator's or a job's): every status write of a task rewrites its 64 KiB goal, so
    10,000 first statuses pass etcd's 2 GiB quota before the API server's next compaction,
    and etcd then refuses every write (``mvcc: database space exceeded``) until an
    administrator clears its alarm. A compaction may expire a listing's continue token; the
    operator lists again, as it would on a cluster."""
    while True:
        await asyncio.sleep(ETCD_KEEPING_SECONDS)
        await asyncio.to_thread(etcd_compact, cluster)
        await asyncio.to_thread(etcd_defragment, cluster)


def etcd_line(cluster: LocalCluster) -> str:
    total, in_use = etcd_sizes(cluster)
    return f"etcd database {total / MIB:,.0f} MiB, {in_use / MIB:,.0f} MiB of it in use"


# -- turn records ---------------------------------------------------------------------------------


async def turn_objects(
    api: client.ApiClient, namespace: str, task: str, turn: int | None = None
) -> list[dict[str, Any]]:
    """The task's ``HarnessTurn`` objects (or one turn's) as the API server returns them."""
    selector = f"{TASK_LABEL}={task}" + (f",{TURN_LABEL}={turn}" if turn is not None else "")
    listed = await client.CustomObjectsApi(api).list_namespaced_custom_object(
        GROUP, VERSION, namespace, TURN_PLURAL, label_selector=selector
    )
    return sorted(listed["items"], key=lambda o: (o["spec"]["turn"], o["spec"].get("chunk", 0)))


def entries_of(objs: Sequence[dict[str, Any]]) -> list[dict[str, Any]]:
    return [e for o in objs for e in o["spec"].get("entries") or []]


_FLOOR_NAMES = itertools.count(1)


async def create_floor(api: client.ApiClient, objs: Sequence[dict[str, Any]]) -> float:
    """Milliseconds to create copies of ``objs`` (``HarnessTurn`` chunks), one after another,
    in the namespace no operator watches: what writing those bytes costs the API server and
    etcd, with nothing of the operator's in it. The copies are deleted afterwards."""
    objects = client.CustomObjectsApi(api)
    names = []
    elapsed = 0.0
    for obj in objs:
        name = f"floor-{next(_FLOOR_NAMES)}"
        body = {
            "apiVersion": obj["apiVersion"],
            "kind": obj["kind"],
            "metadata": {"name": name, "labels": dict(obj["metadata"].get("labels") or {})},
            "spec": obj["spec"],
        }
        t0 = time.perf_counter()
        await objects.create_namespaced_custom_object(GROUP, VERSION, REF_NS, TURN_PLURAL, body)
        elapsed += time.perf_counter() - t0
        names.append(name)
    for name in names:
        await objects.delete_namespaced_custom_object(GROUP, VERSION, REF_NS, TURN_PLURAL, name)
    return elapsed * 1000


def chunks_line(objs: Sequence[dict[str, Any]]) -> str:
    sizes = [json_size(o) for o in objs]
    return f"{kib(sum(sizes))} in {len(sizes)} chunk(s) ({', '.join(kib(s) for s in sizes)})"


# -- waiting --------------------------------------------------------------------------------------


def describe(obj: dict[str, Any]) -> str:
    """A task's status in one line: what to print when it does not do what the bench waits
    for."""
    status = obj.get("status") or {}
    conditions = "; ".join(
        f"{c.get('type')}={c.get('status')} {c.get('reason', '')}: {c.get('message', '')[:200]}"
        for c in status.get("conditions") or []
    )
    message = " ".join(str(status.get("message") or "").split())[:300]
    return (
        f"state {status.get('state')}, subState {status.get('subState')}, turn "
        f"{status.get('turn')}, runner {status.get('runner')}, message {message!r}"
        + (f", conditions: {conditions}" if conditions else "")
    )


async def parked_by(
    parked: Parked, tasks: HarnessTasks, name: str, turn: int, within: float = TURN_TIMEOUT
) -> float | None:
    """perf_counter() when ``name`` parked on ``turn``; None (with the task's status printed)
    when it has not within ``within`` seconds, or has ended instead (a failed turn)."""
    deadline = time.perf_counter() + within
    waiting = asyncio.ensure_future(parked.until(name, turn))
    try:
        while True:
            await asyncio.wait({waiting}, timeout=min(2.0, max(deadline - time.perf_counter(), 0)))
            if waiting.done():
                return waiting.result()
            obj = await tasks.get(name)
            ended = (obj.get("status") or {}).get("state") in ENDED
            if ended or time.perf_counter() >= deadline:
                why = "it ended" if ended else f"not within {within:.0f} s"
                print(f"    !! {name} did not park on turn {turn} ({why}): {describe(obj)}")
                return None
    finally:
        waiting.cancel()


async def model_calls(control: ModelServerControl) -> list[RecordedRequest]:
    """The model requests since the last call, then forgotten: the scripted server keeps every
    request's body, which over a long conversation of big messages would be gigabytes."""
    requests = await control.requests()
    await control.reset()
    return requests


def is_summary(request: RecordedRequest) -> bool:
    return SUMMARY_MARK.encode() in request.raw_body


def message(task: str, message_id: str, *texts: str) -> MessageSpec:
    return MessageSpec(
        task=task,
        message_id=message_id,
        sender="alice",
        parts=tuple(MessagePart(text=t) for t in texts),
    )


async def ref_p50(ref: Reference, count: int) -> float:
    """The p50 of ``count`` raw status PATCHes sent now."""
    ms = [await ref.patch() for _ in range(count)]
    return percentile(ms, 50)


# -- the run ---------------------------------------------------------------------------------------


@dataclass
class Run:
    """What every phase shares: the control plane, the clients, the scripted model."""

    bench: Bench
    ref: Reference
    control: ModelServerControl
    log_dir: Path
    args: argparse.Namespace
    operators: list[tuple[str, Path]] = field(default_factory=list)

    @property
    def api(self) -> client.ApiClient:
        return self.bench.api

    async def namespace(self, name: str) -> tuple[HarnessTasks, HarnessMessages, Parked]:
        await client.CoreV1Api(self.api).create_namespace({"metadata": {"name": name}})
        return HarnessTasks(self.api, name), HarnessMessages(self.api, name), Parked(self.api, name)

    def operator(
        self,
        namespace: str,
        *,
        window: int | None,
        tools: Sequence[str] = (),
        identity: str | None = None,
    ) -> OperatorProcess:
        """An operator on ``namespace``: the OpenAI Responses adapter on the scripted server,
        the model's window ``window`` tokens (None: the catalog's own), ``tools`` offered."""
        config = self.bench.model.config("responses")
        if window is not None:
            config += f"context_window_tokens = {window}\n"  # in the [openai] section
        settings: dict[str, Any] = {"tools": list(tools)} if tools else {}
        log = self.log_dir / f"operator-{namespace}-{identity or 'op'}.log"
        self.operators.append((namespace, log))
        pythonpath = os.pathsep.join(p for p in (str(HERE), os.environ.get("PYTHONPATH")) if p)
        return OperatorProcess(
            self.bench.cluster,
            namespace,
            config,
            self.bench.tmp,
            env={"PYTHONPATH": pythonpath},
            log=log,
            operator=settings,
            identity=identity,
        )

    def log_report(self, namespace: str) -> None:
        """The warnings and errors the phase's operators logged, counted, the first printed."""
        for ns, log in self.operators:
            if ns != namespace or not log.exists():
                continue
            lines = log.read_text(errors="replace").splitlines()
            bad = [
                line
                for line in lines
                if any(w in line for w in ("WARNING", "ERROR", "CRITICAL", "Traceback"))
            ]
            print(
                f"    operator log {log.name}: {len(lines):,} lines, "
                f"{len(bad):,} at warning level or above"
            )
            for line in bad[:8]:
                print(f"        | {line[:300]}")


# -- (1) a long conversation -----------------------------------------------------------------------


@dataclass
class TurnSample:
    turn: int
    ms: float
    ref_ms: list[float]
    calls: int
    summary: bool
    request_bytes: int


async def long_phase(run: Run) -> None:
    args = run.args
    namespace = "heavy-long"
    tasks, messages, parked = await run.namespace(namespace)
    operator = run.operator(namespace, window=args.window)
    size = args.message_kib * KIB
    turns = args.turns
    points = sorted({1, max(turns // 5, 1), turns})
    print(
        f"\n== (1) a long conversation: {turns} turns of {args.message_kib} KiB messages, "
        f"model context window {args.window:,} tokens (namespace {namespace})"
    )
    samples: list[TurnSample] = []
    at_points: dict[int, tuple[list[dict[str, Any]], float, float]] = {}
    try:
        await operator.ready()
        await parked.start()
        await run.control.reset()
        etcd_before = etcd_sizes(run.bench.cluster)
        task = await tasks.create("long", {"goal": "Talk with alice.", "participants": [ALICE]})
        if await parked_by(parked, tasks, "long", 0) is None:
            return
        meter = run.bench.meter(operator)
        started = time.perf_counter()
        for turn in range(1, turns + 1):
            await asyncio.sleep(0.02)  # the previous turn's tail (watch events) settles
            ref_ms = [await run.ref.patch() for _ in range(2)]
            said = message("long", f"m-{turn}", filler(size, f"message {turn}:"))
            t0 = time.perf_counter()
            await messages.send(said, task=parked.tasks.get("long", task))
            t1 = await parked_by(parked, tasks, "long", turn)
            if t1 is None:
                print(f"    stopped at turn {turn}")
                break
            requests = await model_calls(run.control)
            samples.append(
                TurnSample(
                    turn=turn,
                    ms=(t1 - t0) * 1000,
                    ref_ms=ref_ms,
                    calls=len(requests),
                    summary=any(is_summary(r) for r in requests),
                    request_bytes=len(requests[-1].raw_body) if requests else 0,
                )
            )
            if turn in points:
                objs = await turn_objects(run.api, namespace, "long", turn)
                floor = await create_floor(run.api, objs)
                at_points[turn] = (objs, floor, rss_mb(operator.pid))
        elapsed = time.perf_counter() - started
        cpu, waits = meter.per(len(samples)), meter.waits(len(samples))
        await asyncio.sleep(0.5)
        all_objs = await turn_objects(run.api, namespace, "long")
        stored = await client.CustomObjectsApi(run.api).list_namespaced_custom_object(
            GROUP, VERSION, namespace, MESSAGE_PLURAL
        )
        etcd_after = etcd_sizes(run.bench.cluster)
        etcd_compact(run.bench.cluster)
        await asyncio.sleep(3)  # etcd frees the compacted revisions in batches
        etcd_compacted = etcd_sizes(run.bench.cluster)
        final_rss = rss_mb(operator.pid)
        peak_rss = rss_mb(operator.pid, "VmHWM")
    finally:
        await parked.stop()
        operator.stop()

    done = len(samples)
    print(
        f"(1a) {done} turns in {elapsed:.1f} s ({done / max(elapsed, 1e-9):.1f} turns/s, "
        f"{elapsed / max(done, 1) * 1000:.0f} ms per turn with the bench's own steps between)"
    )
    by_turn = {s.turn: s for s in samples}
    for point in points:
        if point not in by_turn:
            continue
        s = by_turn[point]
        window = [x for x in samples if point - 10 < x.turn <= point]
        ref50 = percentile([m for x in window for m in x.ref_ms], 50)
        p50 = percentile([x.ms for x in window], 50)
        objs, floor, rss = at_points[point]
        print(
            f"(1b) turn {point}: message → parked {s.ms:.1f} ms"
            + (
                f" (p50 of turns {window[0].turn} to {point}: {p50:.1f} ms)"
                if len(window) > 1
                else ""
            )
            + f"; raw status PATCH p50 {ref50:.1f} ms ({s.ms / ref50:.1f}x); direct create of "
            f"that turn's HarnessTurn objects, {chunks_line(objs)}: {floor:.1f} ms"
        )
        print(
            f"        model calls {s.calls}{' (one a compaction summary)' if s.summary else ''}; "
            f"the last model request {kib(s.request_bytes)}; operator RSS {rss:.0f} MB"
        )
    compactions = [s.turn for s in samples if s.summary]
    calls = Counter(s.calls for s in samples)
    steps_line = ", ".join(f"{n} call(s) in {c} turn(s)" for n, c in sorted(calls.items()))
    if compactions:
        shown = ", ".join(str(t) for t in compactions[:12]) + (
            ", …" if len(compactions) > 12 else ""
        )
        print(
            f"(1c) compactions: {len(compactions)}, the first at turn {compactions[0]}; "
            f"at turns {shown}"
        )
    else:
        print(f"(1c) no compaction in {done} turns (a smaller --window makes one happen)")
    summary_turns = set(compactions)
    extra = [s.turn for s in samples if s.calls != 1 + (s.turn in summary_turns)]
    print(
        f"(1c) model calls per turn: {steps_line} (each turn is one step: one call, and one "
        f"more for a compaction's summary); turns with any other count: {len(extra)}"
        + (f" ({', '.join(map(str, extra[:10]))})" if extra else "")
    )
    per_turn: dict[int, list[int]] = defaultdict(list)
    for obj in all_objs:
        per_turn[int(obj["spec"]["turn"])].append(json_size(obj))
    first = compactions[0] if compactions else done + 1
    groups = {
        "before the first compaction": [t for t in per_turn if 1 <= t < first],
        "the compaction turns": [t for t in per_turn if t in summary_turns],
        "the other turns after the first compaction": [
            t for t in per_turn if t > first and t not in summary_turns
        ],
    }
    print("(1d) HarnessTurn bytes per turn (the sum of a turn's chunks' JSON):")
    for label, ts in groups.items():
        if not ts:
            continue
        sums = [sum(per_turn[t]) for t in ts]
        most = max(len(per_turn[t]) for t in ts)
        print(
            f"        {label} ({len(ts)} turns): mean {kib(sum(sums) / len(sums))}, max "
            f"{kib(max(sums))}, up to {most} chunk(s) a turn"
        )
    total = sum(sum(v) for v in per_turn.values())
    msg_sizes = [json_size(o) for o in stored["items"]]
    print(
        f"        all {len(per_turn)} turn(s): {total / MIB:,.1f} MiB of HarnessTurn objects "
        f"({kib(total / max(done, 1))} per turn); the {len(msg_sizes)} HarnessMessage objects "
        f"{sum(msg_sizes) / MIB:,.1f} MiB ({kib(sum(msg_sizes) / max(len(msg_sizes), 1))} each)"
    )
    print(
        f"(1d) etcd in use: {etcd_before[1] / MIB:,.1f} MiB before, {etcd_after[1] / MIB:,.1f} "
        f"MiB after the turns with their history of writes, {etcd_compacted[1] / MIB:,.1f} MiB "
        f"compacted: {kib((etcd_compacted[1] - etcd_before[1]) / max(done, 1))} per turn kept, "
        f"{kib((etcd_after[1] - etcd_before[1]) / max(done, 1))} until compaction"
    )
    print(f"(1e) {format_cpu(cpu, waits)}")
    print(f"(1e) operator RSS at the end {final_rss:.0f} MB, peak {peak_rss:.0f} MB")
    run.log_report(namespace)


# -- (2) 1 MiB inputs ------------------------------------------------------------------------------


async def journal_steps(api: client.ApiClient, namespace: str, task: str, turn: int) -> str:
    objs = await turn_objects(api, namespace, task, turn)
    kinds = Counter(e["kind"] for e in entries_of(objs))
    return ", ".join(f"{k} {v}" for k, v in sorted(kinds.items()))


async def refused_message(
    run: Run, namespace: str, tasks: HarnessTasks, messages: HarnessMessages, task: dict[str, Any]
) -> None:
    """(2a): one 1 MiB part is refused by the client's model and by the CRD; four 256 KiB
    parts are stored and refused by the operator."""
    big = filler(MIB, "one part of 1 MiB:")
    try:
        message("big", "one-part", big)
        print("(2a) one text part of 1 MiB: the client's MessagePart took it")
    except ValidationError as exc:
        print(f"(2a) one text part of 1 MiB, MessagePart: {first_line(exc, 300)}")
    body = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {"name": "big-one-part"},
        "spec": {
            "task": "big",
            "messageId": "one-part",
            "sender": "alice",
            "parts": [{"text": big}],
        },
    }
    try:
        await client.CustomObjectsApi(run.api).create_namespaced_custom_object(
            GROUP, VERSION, namespace, MESSAGE_PLURAL, body
        )
        print("(2a) one text part of 1 MiB, created as it is: stored (the CRD took it)")
    except ApiException as exc:
        said = json.loads(exc.body).get("message", "") if exc.body else exc.reason
        print(
            f"(2a) one text part of 1 MiB, created as it is: the API server answers {exc.status}: "
            f"{first_line(Exception(said), 300)}"
        )
    await asyncio.sleep(1)
    print(f"        model calls made: {len(await model_calls(run.control))}")

    parts = [filler(MESSAGE_BYTES, f"part {i} of four:") for i in range(4)]
    spec = message("big", "four-parts", *parts)
    before = (await tasks.get("big")).get("status") or {}
    records_before = sum(json_size(o) for o in await turn_objects(run.api, namespace, "big"))
    ref50 = await ref_p50(run.ref, 10)
    t0 = time.perf_counter()
    try:
        await messages.send(spec, task=task)
    except HarnessError as exc:
        print(f"(2a) four parts of 256 KiB (1 MiB): the send failed: {first_line(exc)}")
        return
    stored_ms = (time.perf_counter() - t0) * 1000
    journal = TurnRecords(run.api, namespace)
    refusal: str | None = None
    while refusal is None and time.perf_counter() - t0 < TURN_TIMEOUT:
        # Where a participant reads it: the notice against the message in the task's history
        # (as ``kubectl harness`` and the gateway's GetTask find it, core/reply_ids.py).
        refusal = refusal_of(await journal.for_task(task), "four-parts")
        if refusal is None:
            await asyncio.sleep(0.01)
    refused_ms = (time.perf_counter() - t0) * 1000
    if refusal is None:
        print(f"    !! no refusal within {TURN_TIMEOUT:.0f} s: {describe(await tasks.get('big'))}")
    await asyncio.sleep(1)
    calls = await model_calls(run.control)
    status = (await tasks.get("big")).get("status") or {}
    objs = await turn_objects(run.api, namespace, "big")
    written = sum(json_size(o) for o in objs) - records_before
    acks = [e for e in entries_of(objs) if e["kind"] == "ack" and e["message_id"] == "four-parts"]
    print(
        f"(2a) four text parts of 256 KiB (1 MiB in all): stored in {stored_ms:.1f} ms, refused "
        f"{refused_ms:.1f} ms after the send ({refused_ms / ref50:.1f}x the raw status PATCH p50 "
        f"of {ref50:.1f} ms)"
    )
    print(f"        the participant reads (the refusal notice in the history): {refusal!r}")
    print(
        f"        state {status.get('state')}, subState {status.get('subState')}, turn "
        f"{before.get('turn')} → {status.get('turn')}; model calls made: {len(calls)}; the "
        f"journal grew by {kib(written)}: the acknowledgement (its text an excerpt of "
        f"{kib(sum(len(a.get('text', '')) for a in acks))}) and the notice"
    )


async def one_step_turn(
    run: Run,
    namespace: str,
    tasks: HarnessTasks,
    messages: HarnessMessages,
    parked: Parked,
    name: str,
    said: MessageSpec,
    label: str,
) -> None:
    """Create ``name``, send ``said`` and print the turn: time, model calls against the steps
    the journal holds, the records it stored beside a direct create of the same bytes."""
    task = await tasks.create(name, {"goal": "Do as alice asks.", "participants": [ALICE]})
    if await parked_by(parked, tasks, name, 0) is None:
        return
    ref50 = await ref_p50(run.ref, 10)
    t0 = time.perf_counter()
    await messages.send(said, task=parked.tasks.get(name, task))
    t1 = await parked_by(parked, tasks, name, 1)
    if t1 is None:
        return
    ms = (t1 - t0) * 1000
    requests = await model_calls(run.control)
    objs = await turn_objects(run.api, namespace, name, 1)
    entries = entries_of(objs)
    floor = await create_floor(run.api, objs)
    models = sum(1 for e in entries if e["kind"] == "model")
    summaries = sum(1 for r in requests if is_summary(r))
    print(
        f"(2{label}) message → parked {ms:.1f} ms ({ms / ref50:.1f}x the raw status PATCH p50 of "
        f"{ref50:.1f} ms); model calls made: {len(requests)}"
        + (f" ({summaries} a compaction's summary)" if summaries else "")
        + f", steps in the journal: {models} ({await journal_steps(run.api, namespace, name, 1)})"
    )
    print(
        f"        model requests {', '.join(kib(len(r.raw_body)) for r in requests)}; the "
        f"turn's records {chunks_line(objs)}; direct create of the same: {floor:.1f} ms"
    )
    for entry in entries:
        if entry["kind"] == "tool":
            content = entry.get("content", "")
            print(
                f"        tool entry {entry['name']}: result stored {kib(len(content.encode()))} "
                f"(the tool printed 1,024.0 KiB; entries keep {kib(ENTRY_TEXT_BYTES)}), the "
                f"entry {kib(json_size(entry))}; ends {content[-90:]!r}"
            )
        elif entry["kind"] == "drain":
            print(f"        drain entry {kib(json_size(entry))}")
    history = [o["spec"]["history"] for o in objs if o["spec"].get("history")]
    if history:
        size = sum(json_size(h) for h in history)
        print(
            f"        history delta {kib(size)} in {len(history)} piece(s) (a chunk holds "
            f"{kib(CHUNK_BYTES)})"
        )


async def big_phase(run: Run) -> None:
    namespace = "heavy-big"
    tasks, messages, parked = await run.namespace(namespace)
    operator = run.operator(namespace, window=run.args.big_window, tools=["heavy_tools:TOOLS"])
    print(
        f"\n== (2) 1 MiB messages and tool results (namespace {namespace}; a message may carry "
        f"{kib(MESSAGE_BYTES)}, a journal entry's text {kib(ENTRY_TEXT_BYTES)}; model context "
        f"window {run.args.big_window:,} tokens)"
    )
    try:
        await operator.ready()
        await parked.start()
        await run.control.reset()
        task = await tasks.create("big", {"goal": "Talk with alice.", "participants": [ALICE]})
        if await parked_by(parked, tasks, "big", 0) is None:
            return
        await refused_message(run, namespace, tasks, messages, parked.tasks.get("big", task))

        print(f"(2b) a message at the limit, one part of {kib(MESSAGE_BYTES)}:")
        at_limit = message("limit", "at-limit", filler(MESSAGE_BYTES, "at the limit:"))
        await one_step_turn(run, namespace, tasks, messages, parked, "limit", at_limit, "b")

        print("(2c) one tool call whose result is 1 MiB (the scripted model asks for it once):")
        await run.control.script(
            [
                ToolCallsTurn(calls=(ScriptedToolCall(name="emit", arguments={"kib": 1024}),)),
                TextTurn(text="The tool printed a long text."),
            ]
        )
        said = message("tool1", "run", "Run the tool.")
        await one_step_turn(run, namespace, tasks, messages, parked, "tool1", said, "c")

        print("(2d) three tool calls in one step, each with a 1 MiB result:")
        await run.control.script(
            [
                ToolCallsTurn(
                    calls=tuple(
                        ScriptedToolCall(name="emit", arguments={"kib": 1024}) for _ in range(3)
                    )
                ),
                TextTurn(text="The tools printed three long texts."),
            ]
        )
        said = message("tool3", "run", "Run the tool three times.")
        await one_step_turn(run, namespace, tasks, messages, parked, "tool3", said, "d")
    finally:
        await parked.stop()
        operator.stop()
    run.log_report(namespace)


# -- (3) many tasks with big goals -----------------------------------------------------------------


class Watched(Parked):
    """``bench_turns.Parked``, and besides each task's first status (its initialisation): a
    task sent a message before it was initialised may go from no status straight to its first
    turn, and is never seen parked on turn 0."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        super().__init__(api, namespace)
        self.initialised: set[str] = set()
        self.on_initialised: Callable[[str, float], None] | None = None

    def _seen(self, obj: dict[str, Any], now: float) -> None:
        name = obj["metadata"]["name"]
        if name not in self.initialised and (obj.get("status") or {}).get("state"):
            self.initialised.add(name)
            if self.on_initialised is not None:
                self.on_initialised(name, now)
        super()._seen(obj, now)


class Initialised:
    """Counts the tasks a watch shows initialised from now on, with the time of the first and
    of the ``want``-th."""

    def __init__(self, watched: Watched, want: int) -> None:
        self.want = want
        self.count = 0
        self.first: float | None = None
        self.all = asyncio.Event()
        self.at: float | None = None
        if want <= 0:
            self.all.set()
        watched.on_initialised = self.seen

    def seen(self, name: str, now: float) -> None:
        self.count += 1
        if self.first is None:
            self.first = now
        if self.count >= self.want and not self.all.is_set():
            self.at = now
            self.all.set()


async def create_many(
    tasks: HarnessTasks, names: Sequence[str], goal: str, concurrency: int, deadline: float
) -> tuple[int, float]:
    """Create the tasks ``names``, ``concurrency`` at a time, until ``deadline``
    (perf_counter): how many were created, in how many seconds."""
    todo = iter(names)
    created = 0
    t0 = time.perf_counter()

    async def worker() -> None:
        nonlocal created
        for name in todo:
            if time.perf_counter() > deadline:
                return
            await tasks.create(name, {"goal": goal, "participants": [ALICE]})
            created += 1

    await asyncio.gather(*(worker() for _ in range(concurrency)))
    return created, time.perf_counter() - t0


async def until_live(operator: OperatorProcess, t_start: float, within: float) -> float:
    """Seconds from ``t_start`` to the operator's liveness endpoint answering."""
    await operator.ready(within=within)
    return time.perf_counter() - t_start


def seconds_since(t: float | None, t_start: float) -> str:
    return f"{t - t_start:.1f} s" if t is not None else "not within the phase's time"


@dataclass
class Many:
    """Phase (3)'s namespace and clients, and the time it must end by."""

    run: Run
    namespace: str
    tasks: HarnessTasks
    messages: HarnessMessages
    parked: Watched
    deadline: float
    idle_rss: float
    #: The task every start sends its one message to.
    probe: str = "many-0"


async def start_on(many: Many, total: int, new: int) -> bool:
    """Start an operator on ``total`` tasks, ``new`` of them never initialised, and print its
    start-up: process start → live, → the first new task initialised, → all of them; a message
    sent to one task as soon as it is live → parked; its RSS once settled; a turn then. False
    when the phase's time ran out before it was done."""
    run, cluster, parked = many.run, many.run.bench.cluster, many.parked
    counter = Initialised(parked, new)
    want = parked.turns.get(many.probe, 0) + 1
    t_start = time.perf_counter()
    operator = run.operator(many.namespace, window=None, identity=f"n{total}")
    meter = CpuMeter(
        {"operator": operator.pid, "apiserver": cluster.pids[1], "etcd": cluster.pids[0]}
    )
    keeping = asyncio.ensure_future(keep_etcd(cluster))
    try:
        live = await until_live(operator, t_start, within=max(many.deadline - t_start, 1))
        task = parked.tasks.get(many.probe) or await many.tasks.get(many.probe)
        t0 = time.perf_counter()
        await many.messages.send(message(many.probe, f"after-start-{total}", "Hello."), task=task)
        turn = asyncio.ensure_future(parked.until(many.probe, want))
        with contextlib.suppress(TimeoutError):
            await asyncio.wait_for(
                asyncio.gather(counter.all.wait(), asyncio.shield(turn)),
                max(many.deadline - time.perf_counter(), 1),
            )
        parked_at = turn.result() if turn.done() else None
        turn.cancel()
        cpu = meter.per(1)
        print(
            f"(3b) {total:,} tasks, {new:,} of them new: operator process start → live "
            f"{live:.1f} s; → the first new task initialised "
            f"{seconds_since(counter.first, t_start)}; → all {new:,} new initialised "
            f"{seconds_since(counter.at, t_start)}"
            + ("" if counter.at else f" ({counter.count:,} were)")
        )
        print(
            "        the first turn after start (a message sent as soon as it was live): "
            + (
                f"message → parked {parked_at - t0:.1f} s, {parked_at - t_start:.1f} s after "
                "process start"
                if parked_at is not None
                else "not parked within the phase's time"
            )
        )
        print(
            "        CPU seconds from process start to here: "
            + ", ".join(f"{k} {v / 1000:.1f}" for k, v in cpu.items())
        )
        done = counter.at is not None and parked_at is not None
        if done:
            await asyncio.sleep(SETTLE_SECONDS)
        rss = rss_mb(operator.pid)
        print(
            f"(3c) operator RSS holding {total:,} tasks{'' if done else ' (still starting)'}: "
            f"{rss:,.0f} MB (peak {rss_mb(operator.pid, 'VmHWM'):,.0f} MB; {many.idle_rss:,.0f} "
            f"MB on the empty namespace, so {(rss - many.idle_rss) * 1024 / total:,.1f} KiB a "
            f"task, each task's goal {run.args.goal_kib} KiB); {etcd_line(cluster)}"
        )
        if not done:
            return False
        ref50 = await ref_p50(run.ref, 10)
        task = parked.tasks.get(many.probe) or await many.tasks.get(many.probe)
        t0 = time.perf_counter()
        await many.messages.send(message(many.probe, f"settled-{total}", "Hello."), task=task)
        t1 = await parked_by(parked, many.tasks, many.probe, want + 1)
        if t1 is None:
            return False
        ms = (t1 - t0) * 1000
        print(
            f"(3d) a turn once it has settled: message → parked {ms:.1f} ms ({ms / ref50:.1f}x "
            f"the raw status PATCH p50 of {ref50:.1f} ms)"
        )
        return True
    finally:
        keeping.cancel()
        operator.stop()


async def many_phase(run: Run) -> None:
    args = run.args
    namespace = "heavy-many"
    cluster = run.bench.cluster
    # The previous phases' history of writes goes, so this one has etcd's quota to itself.
    etcd_compact(cluster)
    etcd_defragment(cluster)
    tasks, messages, _ = await run.namespace(namespace)
    parked = Watched(run.api, namespace)
    goal = filler(args.goal_kib * KIB, "Goal:")
    phase_start = time.perf_counter()
    budget = args.phase_seconds
    steps = sorted(
        {int(x) for x in args.steps.split(",") if x.strip() and 0 < int(x) < args.tasks}
        | {args.tasks}
    )
    print(
        f"\n== (3) {args.tasks:,} tasks with {args.goal_kib} KiB goals, an operator started on "
        f"{', '.join(f'{n:,}' for n in steps)} of them (namespace {namespace}; at most "
        f"{budget:.0f} s for the phase); {etcd_line(cluster)} at the start"
    )
    await parked.start()
    try:
        # An operator on the empty namespace first: what the operator holds before any task.
        idle_operator = run.operator(namespace, window=None, identity="idle")
        try:
            await idle_operator.ready()
            await asyncio.sleep(SETTLE_SECONDS)
            idle = rss_mb(idle_operator.pid)
        finally:
            idle_operator.stop()
        many = Many(run, namespace, tasks, messages, parked, phase_start + budget, idle)
        existing = 0
        for step in steps:
            ref50 = await ref_p50(run.ref, 20)
            names = [f"many-{i}" for i in range(existing, step)]
            created, seconds = await create_many(
                tasks, names, goal, args.create_concurrency, many.deadline
            )
            print(
                f"(3a) created {created:,} more tasks ({existing + created:,} in all) with no "
                f"operator running in {seconds:.1f} s ({created / max(seconds, 1e-9):.0f} tasks/s, "
                f"{args.create_concurrency} in flight; raw status PATCH p50 {ref50:.1f} ms "
                f"before); {etcd_line(cluster)}"
            )
            existing += created
            if created < len(names):
                print(f"    the phase's time ran out while creating: stopped at {existing:,}")
                break
            etcd_compact(cluster)
            if not await start_on(many, existing, created):
                print(
                    f"    the phase's {budget:.0f} s ran out during the start on {existing:,} "
                    "tasks: the figures above are what was measured by then"
                )
                break
        print(f"    the phase took {time.perf_counter() - phase_start:.0f} s; {etcd_line(cluster)}")
    finally:
        await parked.stop()
    run.log_report(namespace)


# -- main -----------------------------------------------------------------------------------------

PHASES: Final[dict[str, Callable[[Run], Awaitable[None]]]] = {
    "long": long_phase,
    "big": big_phase,
    "many": many_phase,
}


async def main_async(args: argparse.Namespace) -> None:
    phases = [p.strip() for p in args.phases.split(",") if p.strip()]
    unknown = [p for p in phases if p not in PHASES]
    if unknown:
        raise SystemExit(f"unknown phase(s) {', '.join(unknown)}; use {', '.join(PHASES)}")
    model = ModelServerProcess()
    try:
        with (
            LocalCluster(crds=REPO_ROOT / "crds") as cluster,
            tempfile.TemporaryDirectory() as tmp,
        ):
            log_dir = Path(args.log_dir) if args.log_dir else Path(tmp)
            log_dir.mkdir(parents=True, exist_ok=True)
            api = await connect(cluster.kubeconfig)
            bench = Bench(cluster, api, model, Path(tmp))
            ref = Reference(api)
            await ref.setup()
            run = Run(bench, ref, ModelServerControl(model.base_url), log_dir, args)
            print(f"code: {revision()}")
            print(
                f"bench_heavy: phases {', '.join(phases)}; {args.turns} turns of "
                f"{args.message_kib} KiB messages, {args.tasks:,} tasks with {args.goal_kib} KiB "
                f"goals; load average {os.getloadavg()[0]:.2f} at start"
            )
            started = time.perf_counter()
            for phase in phases:
                t0 = time.perf_counter()
                await PHASES[phase](run)
                print(f"    ({phase} took {time.perf_counter() - t0:.0f} s)")
            print(
                f"\nraw status PATCH over the whole run ({len(ref.ms)} samples): p50 "
                f"{percentile(ref.ms, 50):.1f} ms, p99 {percentile(ref.ms, 99):.1f} ms; "
                f"{time.perf_counter() - started:.0f} s in all; load average "
                f"{os.getloadavg()[0]:.2f} at the end"
            )
            await api.close()
    finally:
        model.stop()


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--turns", type=int, default=500, help="turns of the long conversation")
    parser.add_argument(
        "--message-kib", type=int, default=60, help="the size of each of its messages, KiB"
    )
    parser.add_argument(
        "--window",
        type=int,
        default=200_000,
        help="the model's context window in tokens (context_window_tokens) for (1)",
    )
    parser.add_argument("--big-window", type=int, default=400_000, help="the same, for (2)")
    parser.add_argument("--tasks", type=int, default=10_000, help="tasks for (3)")
    parser.add_argument("--goal-kib", type=int, default=64, help="each one's goal, KiB")
    parser.add_argument(
        "--steps",
        default="1000,2000,5000",
        help="for (3): the numbers of tasks below --tasks to start an operator on first",
    )
    parser.add_argument(
        "--create-concurrency", type=int, default=50, help="task creates in flight in (3)"
    )
    parser.add_argument(
        "--phase-seconds",
        type=float,
        default=900.0,
        help="the longest (3) may take: it creates fewer tasks, or stops waiting, and says so",
    )
    parser.add_argument(
        "--phases", default="long,big,many", help="comma-separated: long, big, many"
    )
    parser.add_argument("--log-dir", default=None, help="keep the operators' logs here")
    return parser


def main() -> None:
    asyncio.run(main_async(build_parser().parse_args()))


if __name__ == "__main__":
    main()
