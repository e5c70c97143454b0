"""The sizes the harness writes, designed from the API server's limits rather than found by
hitting them (docs/design/limits.md derives each one).

Everything the harness stores lives in etcd, which refuses a request over
``--max-request-bytes`` (1.5 MiB by default; the API server answers 500 "request is too
large"); the API server itself refuses a body over 3 MiB (413). An object is written whole on
every update, so every object must stay well under 1.5 MiB however long it lives:

- a **message** carries at most :data:`MESSAGE_BYTES` (its text and data together), refused
  with a reason that says so, before anything is journaled;
- a **journal chunk** is at most :data:`CHUNK_BYTES`: an append that would pass it starts a new
  chunk, and a batch bigger than one chunk is split across several (``kube/journal.py``); one
  entry can be no bigger than a chunk, because every text that goes into one is bounded here;
- a **status text** (``status.message``: a reply, an answer, a remote agent's result) is at most
  :data:`STATUS_TEXT_CHARS`, cut with a note that says where the whole text is (the task's
  history), by the one status writer; a condition's message at most :data:`CONDITION_CHARS`;
- the **sub-task rows**: at most :data:`MAX_SUB_TASKS` children (a spawn past it is refused
  to the model), each row's goal cut to :data:`ROW_GOAL_CHARS`; a **plan**'s step texts cut to
  :data:`PLAN_TEXT_CHARS` in the status (the whole output is in the history);
- the **artifacts** a model publishes: at most :data:`ARTIFACT_CHUNK_BYTES` per publish (one
  journal entry), :data:`ARTIFACT_BYTES` and :data:`MAX_ARTIFACT_CHUNKS` per artifact,
  :data:`MAX_ARTIFACTS` and :data:`TASK_ARTIFACT_BYTES` per task; past one the publish is
  refused to the model, naming the bound, and nothing is stored (``core/artifact_index.py``).
"""

from __future__ import annotations

import json
from typing import Final

from tiny_harness.core.inbox import MessageSpec

KIB: Final = 1024

#: etcd's default request limit (``--max-request-bytes``), the bound every object must keep.
ETCD_REQUEST_BYTES: Final = 1536 * KIB
#: The most one message may carry (text and data parts together, UTF-8): a quarter of etcd's
#: limit, since the message is kept as its object, in its turn's drain entry and in the history.
MESSAGE_BYTES: Final = 256 * KIB
#: The largest file a message may carry inline: its base64 text fills the message's bound. A
#: larger file has nowhere to go (no file store is configured: docs/design/limits.md), so it is
#: refused with this figure, and a URL is suggested instead.
FILE_BYTES: Final = MESSAGE_BYTES * 3 // 4
#: The most one journal chunk holds: half of etcd's limit, the rest left for metadata,
#: managedFields and the JSON patch that appends to it.
CHUNK_BYTES: Final = 768 * KIB
#: The most one journal entry's text may be (a tool result, a model reply, a remote agent's
#: reply): so that any entry fits in a chunk with room to spare.
ENTRY_TEXT_BYTES: Final = 256 * KIB
#: ``status.message``: the CRD's limit is 65,536 characters; the status also carries rows,
#: the plan and conditions, so a status text keeps to half of it.
STATUS_TEXT_CHARS: Final = 32 * KIB
#: A condition's message (``metav1.Condition`` allows 32,768).
CONDITION_CHARS: Final = 4 * KIB
#: A sub-task row's goal: a row names its child, whose whole goal is on the child.
ROW_GOAL_CHARS: Final = 512
#: The most sub-tasks one task may have: its rows stay within the status.
MAX_SUB_TASKS: Final = 256
#: How far up or down a tree of tasks the operator walks (to hold each ancestor's budget, to
#: sum a tree's usage); no sub-task is created deeper (``core/reach.py``), so the walk sees
#: every task of a tree.
MAX_TREE_DEPTH: Final = 16
#: A plan step's description and output, as the status shows them.
PLAN_TEXT_CHARS: Final = 2 * KIB
#: The most one ``publish_artifact`` call (one chunk of an artifact) may carry: its parts are
#: journaled in the call's tool entry, which must fit a journal chunk like every entry.
ARTIFACT_CHUNK_BYTES: Final = ENTRY_TEXT_BYTES
#: The most one artifact may hold, its appended chunks together: each chunk is in its own
#: entry, and a reader (GetTask, a stream) holds the whole artifact in memory to send it.
ARTIFACT_BYTES: Final = 1024 * KIB
#: The most chunks one artifact may have: the status indexes each one (its turn and entry).
MAX_ARTIFACT_CHUNKS: Final = 16
#: The most artifacts one task may have: their index stays a small part of the status.
MAX_ARTIFACTS: Final = 32
#: The most all of a task's artifacts may hold: a GetTask sends them all in one answer, and
#: there is no file store to send a link to instead.
TASK_ARTIFACT_BYTES: Final = 4 * ARTIFACT_BYTES

#: The note that ends a cut status text.
_CUT_NOTE: Final = (
    "\n\n[cut at {limit} characters of {length}: the whole text is in the task's history]"
)


def message_bytes(spec: MessageSpec) -> int:
    """How much a message carries: its text parts in UTF-8, its data parts as JSON, and its
    files as the base64 text (or URL) that is stored of them."""
    total = 0
    for part in spec.parts:
        if part.text is not None:
            total += len(part.text.encode())
        if part.raw is not None:
            total += len(part.raw)
        if part.url is not None:
            total += len(part.url)
        if part.data is not None:
            total += len(json.dumps(part.data, ensure_ascii=False, separators=(",", ":")).encode())
    return total


def refuse_size(spec: MessageSpec) -> str | None:
    """Why the message is too big to be taken (None when it fits): a participant reads this
    as the refusal, so it says the limit and what to do instead."""
    size = message_bytes(spec)
    if size <= MESSAGE_BYTES:
        return None
    if any(part.raw is not None for part in spec.parts):
        return (
            f"refused: the message carries {_kib(size)} (a file counts as its base64, a third "
            f"more than its bytes), and a message may carry at most {_kib(MESSAGE_BYTES)}, "
            f"so a file at most {_kib(FILE_BYTES)}: this installation keeps files in the "
            "message itself and has no file store for larger ones; send an https URL to the "
            "file (images and PDFs), or a smaller file"
        )
    return (
        f"refused: the message carries {_kib(size)}, and a message may carry at most "
        f"{_kib(MESSAGE_BYTES)}: split it into several messages, or send a link to it"
    )


def status_text(text: str, limit: int = STATUS_TEXT_CHARS) -> str:
    """``text`` as a status may hold it: whole when it fits, else cut with a note that says
    how long it was and that the whole text is in the history."""
    if len(text) <= limit:
        return text
    note = _CUT_NOTE.format(limit=limit, length=len(text))
    return text[: max(limit - len(note), 0)] + note


def excerpt(text: str, limit: int = STATUS_TEXT_CHARS) -> str:
    """The start of ``text``, at most ``limit`` characters, saying how long it was: how a
    journal acknowledges a message it did not take (a refusal, a command), so that a message
    too big to take is not stored again in full."""
    if len(text) <= limit:
        return text
    note = f" [... cut at {limit} of {len(text)} characters]"
    return text[: max(limit - len(note), 0)] + note


def condition_text(text: str) -> str:
    """A condition's message, cut to :data:`CONDITION_CHARS` (with "…")."""
    return text if len(text) <= CONDITION_CHARS else text[: CONDITION_CHARS - 1] + "…"


def entry_text(text: str, what: str) -> str:
    """A text about to be journaled (``what``: "tool result", "reply" ...), cut to
    :data:`ENTRY_TEXT_BYTES` with a note the model reads, so that no entry outgrows a chunk."""
    data = text.encode()
    if len(data) <= ENTRY_TEXT_BYTES:
        return text
    note = (
        f"\n\n[the {what} was {_kib(len(data))}; only its first {_kib(ENTRY_TEXT_BYTES)} are kept]"
    )
    kept = data[: ENTRY_TEXT_BYTES - len(note.encode())].decode(errors="ignore")
    return kept + note


def _kib(size: int) -> str:
    if size >= KIB * KIB:
        return f"{size / (KIB * KIB):.1f} MiB"
    return f"{size / KIB:.0f} KiB" if size >= KIB else f"{size} bytes"


def kib(size: int) -> str:
    """A size as a person reads it, in bytes, KiB or MiB (what every refusal names)."""
    return _kib(size)
