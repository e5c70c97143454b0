"""The namespace's tasks as this gateway replica last heard them, by name and by participant.

Every read a participant makes of a task (``GetTask``, the start of a stream, a send's first
look, ``ListTasks``) is answered here, not by a request to the API server: the namespace's one
watch of tasks (:mod:`.namespace_feed`) keeps it current. What one task costs:

- its object as compact JSON text, with ``managedFields`` cut to the one time the renderer
  reads (:func:`.rendering.updated_at`): about 2 KB for a task of a few turns, parsed again
  only when it is read;
- a :class:`Summary`: what ``ListTasks`` filters and sorts on (the participants, the context,
  the state, the last update), so a list reads only the caller's tasks and renders only the
  page it returns. A list's task is shown only if its spec reads (it is rendered); a read of
  one task checks the caller's role on the parsed spec.

``ListTasks`` for a participant is a lookup of their names (:attr:`TaskIndex.of`), a filter
and a sort of those summaries, and the rendering of one page: its cost is the caller's tasks,
never the namespace's.

A listing (at start, and after the watch expired) is told as changes: a task whose version
differs from the one held is changed, one the listing lacks is gone (:meth:`TaskIndex.synced`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from typing import Any

from tiny_harness.a2a_gateway.rendering import updated_at
from tiny_harness.core.states import TaskState
from tiny_harness.kube.client import Obj
from tiny_harness.kube.names import context_id_of

log = logging.getLogger(__name__)


@dataclass(frozen=True, slots=True)
class Summary:
    """What a list asks of a task without reading it: its participants (None: the spec does
    not read, so the task is shown to no one), context, state (None: no status yet, which
    renders as SUBMITTED), last update (nanoseconds since the epoch, 0: none recorded) and
    version."""

    participants: tuple[str, ...]
    context_id: str
    state: TaskState | None
    updated_ns: int
    version: int


@dataclass(frozen=True, slots=True)
class Held:
    """One task as held: its compact text and summary."""

    text: str
    summary: Summary

    def object(self) -> Obj:
        parsed: Obj = json.loads(self.text)
        return parsed


def reduced(obj: Obj) -> Obj:
    """``obj`` without what no reader of the gateway needs: ``managedFields`` (often half the
    object), of which only the latest time is kept, as the renderer reads it."""
    meta = obj.get("metadata") or {}
    if "managedFields" not in meta:
        return obj
    stamp = updated_at(obj)
    slim = dict(meta)
    del slim["managedFields"]
    if stamp is not None:
        slim["managedFields"] = [{"time": stamp.strftime("%Y-%m-%dT%H:%M:%SZ")}]
    return {**obj, "metadata": slim}


def participants_of(obj: Obj) -> tuple[str, ...]:
    """The participant ids the stored spec names, read without validating the spec (once per
    change of every task, so it must be cheap): a list that is not one is no one's. A spec
    that does not read otherwise is still refused to everyone on a read (``role_of``), and
    left out of a list when it cannot be rendered."""
    raw = (obj.get("spec") or {}).get("participants")
    if not isinstance(raw, list):
        return ()
    return tuple(str(p["id"]) for p in raw if isinstance(p, dict) and isinstance(p.get("id"), str))


def summary_of(obj: Obj) -> Summary:
    raw_state = (obj.get("status") or {}).get("state")
    try:
        state = TaskState(raw_state) if raw_state else None
    except ValueError:
        state = None
    stamp = updated_at(obj)
    return Summary(
        participants=participants_of(obj),
        context_id=context_id_of(obj),
        state=state,
        updated_ns=int(stamp.timestamp()) * 1_000_000_000 if stamp is not None else 0,
        version=int(obj["metadata"]["resourceVersion"]),
    )


class TaskIndex:
    """The tasks of one namespace, by name and by participant."""

    def __init__(self) -> None:
        self._held: dict[str, Held] = {}
        #: A participant's task names: what makes a list the caller's, not the namespace's.
        self.of: dict[str, set[str]] = {}
        self._listing: set[str] | None = None

    def __len__(self) -> int:
        return len(self._held)

    def __contains__(self, name: object) -> bool:
        return name in self._held

    def get(self, name: str) -> Obj | None:
        held = self._held.get(name)
        return held.object() if held is not None else None

    def summary(self, name: str) -> Summary | None:
        held = self._held.get(name)
        return held.summary if held is not None else None

    def version(self, name: str) -> int | None:
        held = self._held.get(name)
        return held.summary.version if held is not None else None

    def bytes_held(self) -> int:
        return sum(len(h.text) for h in self._held.values())

    # -- what the watch tells ----------------------------------------------------------------

    def put(self, obj: Obj) -> bool:
        """Hold ``obj``; False when the same version is held already (a listing's repeat)."""
        name = str(obj["metadata"]["name"])
        if self._listing is not None:
            self._listing.add(name)
        old = self._held.get(name)
        version = int(obj["metadata"]["resourceVersion"])
        if old is not None and old.summary.version == version:
            return False
        summary = summary_of(obj)
        self._held[name] = Held(json.dumps(reduced(obj), separators=(",", ":")), summary)
        if old is not None:
            self._unlink(name, old.summary.participants)
        for participant in summary.participants:
            self.of.setdefault(participant, set()).add(name)
        return True

    def drop(self, name: str) -> Obj | None:
        """Forget the task; the object as last held, or None when none was."""
        old = self._held.pop(name, None)
        if old is None:
            return None
        self._unlink(name, old.summary.participants)
        return old.object()

    def _unlink(self, name: str, participants: Iterable[str]) -> None:
        for participant in participants:
            names = self.of.get(participant)
            if names is not None:
                names.discard(name)
                if not names:
                    del self.of[participant]

    def relisting(self) -> None:
        """A listing begins: the tasks it does not name are gone when it ends."""
        self._listing = set()

    def synced(self) -> list[Obj]:
        """A listing ended: forget (and return, as last held) each task it did not name."""
        listed, self._listing = self._listing, None
        if listed is None:
            return []
        gone = [name for name in self._held if name not in listed]
        return [obj for obj in (self.drop(name) for name in gone) if obj is not None]

    # -- what a list reads -------------------------------------------------------------------

    def summaries_of(self, participant: str) -> Iterator[tuple[str, Summary]]:
        for name in self.of.get(participant, ()):
            held = self._held.get(name)
            if held is not None:
                yield name, held.summary


def describe(index: TaskIndex) -> dict[str, Any]:
    """What the index holds, for a log line and the benchmark."""
    return {"tasks": len(index), "participants": len(index.of), "bytes": index.bytes_held()}
