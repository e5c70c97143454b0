"""Where a profiled gateway's time went: py-spy's raw (collapsed) stacks as a table of shares.

Each sample is put in exactly one row, the first that claims it:

1. TLS to the API server: handshakes apart, then the records (encrypting, decrypting). TLS is
   counted wherever it runs, in a request's stack or in the event loop's read callbacks.
2. What of ours a sample was working for: the deepest frame naming one of our steps (the
   message write, the turn records read, the feed...), so the API client, JSON and protobuf
   under a step count as that step's.
3. Otherwise the layer it was in: the SDK's dispatch and SSE, starlette and the middlewares,
   the HTTP server (uvicorn: h11 or httptools), the API client's response parsing in the
   event loop (aiohttp), or the event loop itself.

Samples of an idle thread (the executor's workers waiting for work, the loop waiting in
``epoll``) are left out: py-spy does not always see them as idle. Shares are of the busy
samples; the busy share of the whole is printed beside them.

    python tests/bench/profile_table.py FILE [FILE...]
"""

from __future__ import annotations

import re
import sys
from collections import Counter
from collections.abc import Iterable, Sequence
from pathlib import Path

#: Leaves that are a thread waiting, not working.
IDLE_LEAVES = (
    re.compile(r"^_worker \(concurrent/futures/thread\.py:\d+\)$"),
    re.compile(r"^EpollSelector\.select \(selectors\.py:\d+\)$"),
    re.compile(r"^KqueueSelector\.select \("),
)

TLS = (
    ("TLS handshakes with the API server", re.compile(r"do_handshake|_start_handshake")),
    ("TLS records (encrypt, decrypt)", re.compile(r"\((asyncio/sslproto|ssl)\.py|uvloop.*SSL")),
)

#: Our steps, by a frame that names them; the deepest one in a stack wins.
STEPS = (
    ("the message write (API POST)", re.compile(r"TaskWrites\._write |HarnessMessages\.send ")),
    (
        "turn records read (API list)",
        re.compile(r"Answers\.records |TurnRecords\.for_task "),
    ),
    ("task read from the API", re.compile(r"read_for_watch ")),
    (
        "the feed: every task write (index, fan-out, tally)",
        re.compile(r"NamespaceFeed\.|follow_listings|QuotaTally\.|TaskIndex\.|Fanout\."),
    ),
    ("the task read from the index", re.compile(r"TaskIndex\.get |KubeTaskStore\.current ")),
    (
        "rendering a task, an event, their keys",
        re.compile(
            r"\(tiny_harness/a2a_gateway/rendering\.py|\(tiny_harness/core/a2a_task\.py"
            r"|\(tiny_harness/core/status_ext\.py|\(tiny_harness/kube/participant_view\.py"
        ),
    ),
    ("reading the inbound message", re.compile(r"\(tiny_harness/a2a_gateway/inbound\.py")),
    (
        "the handler: policy, waiting, the stream",
        re.compile(
            r"GatewayRequestHandler\.|\(tiny_harness/a2a_gateway/(stream|waiting|policy"
            r"|fanout|store|follow|send|subscribe|cancel|reads|writes|answers|contents"
            r"|listing|parents|call_context)\.py"
        ),
    ),
)

LAYERS = (
    (
        "the SDK: JSON-RPC dispatch, protobuf and JSON, SSE",
        re.compile(r"\(a2a/|\(sse_starlette/|\(google/protobuf/|protobuf/"),
    ),
    (
        "starlette and the middlewares",
        re.compile(
            r"\(starlette/|\(anyio/|\(tiny_harness/a2a_gateway/(tracing|metrics|limits|identity"
            r"|event_ids)\.py|\(opentelemetry/|\(prometheus_client/"
        ),
    ),
    ("the HTTP server (uvicorn)", re.compile(r"\(uvicorn/|\(h11/|\(httptools/")),
    (
        # uvloop's TLS is compiled: its records are decrypted under aiohttp's callback.
        "the API client's responses (aiohttp; on uvloop, their TLS too)",
        re.compile(r"\(aiohttp/|\(kubernetes_asyncio/"),
    ),
)

OTHER = "the event loop and the rest"


def samples(lines: Iterable[str]) -> Iterable[tuple[list[str], int]]:
    for line in lines:
        stack, _, count = line.rstrip("\n").rpartition(" ")
        if stack and count.isdigit():
            yield stack.split(";"), int(count)


def is_idle(frames: Sequence[str]) -> bool:
    return any(p.search(frames[-1]) for p in IDLE_LEAVES)


def row_of(frames: Sequence[str]) -> str:
    for label, pattern in TLS:
        if any(pattern.search(f) for f in frames):
            return label
    deepest: tuple[int, str] | None = None
    for label, pattern in STEPS:
        for depth, frame in enumerate(frames):
            if pattern.search(frame) and (deepest is None or depth > deepest[0]):
                deepest = (depth, label)
    if deepest is not None:
        return deepest[1]
    for frame in reversed(frames):
        for label, pattern in LAYERS:
            if pattern.search(frame):
                return label
    return OTHER


def table(lines: Iterable[str]) -> tuple[Counter[str], int, int]:
    """The busy samples by row, the busy total and the whole total."""
    rows: Counter[str] = Counter()
    busy = whole = 0
    for frames, count in samples(lines):
        whole += count
        if is_idle(frames):
            continue
        busy += count
        rows[row_of(frames)] += count
    return rows, busy, whole


def render(rows: Counter[str], busy: int, whole: int, *, rate: float | None = None) -> str:
    order = [label for label, _ in (*TLS, *STEPS, *LAYERS)] + [OTHER]
    width = max(len(label) for label in order)
    out = [f"{'where':<{width}}  share of busy samples"]
    for label in order:
        if rows[label]:
            out.append(f"{label:<{width}}  {100 * rows[label] / busy:5.1f}%")
    scale = f", {busy / rate:.1f} s of CPU" if rate else ""
    out.append(f"({busy} busy samples of {whole}{scale})")
    return "\n".join(out)


def main(paths: Sequence[str]) -> None:
    lines: list[str] = []
    for path in paths:
        lines += Path(path).read_text().splitlines()
    print(render(*table(lines)))


if __name__ == "__main__":
    main(sys.argv[1:])
