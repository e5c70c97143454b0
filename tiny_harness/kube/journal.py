"""Turn records: where the operator checkpoints each turn, and where the history is read from.

One ``HarnessTurn`` object per turn (``<task>-<uid>-t<turn>``, with the first characters of the
task's uid), split into numbered chunks (``-c1``, ``-c2`` ...) before it nears the API's object
size limit. A record belongs to the task object whose uid its owner reference names
(``kube/ownership.py``): a task re-created under an old name writes records of other names,
and reads none of the old one's, even while the garbage collector is still deleting them.
Appending is a JSON patch that adds to the entries list, so a checkpoint is one small write
however long the turn is.

**Fencing.** A record carries ``spec.lease``: the epoch of the runner lease (``status.runner``)
whose holder may append to it. A turn's append is a JSON patch that first *tests* that epoch,
so the API server refuses the whole patch once another replica has taken the lease over and
re-fenced the record with its own epoch (:meth:`TurnRecords.fence`). A replica that lost the
lease therefore cannot add a single entry, whatever its clock or its view of the world says.
Notices written outside a turn (a refusal, a command's reply) are not turn writes and carry no
epoch test.
"""

from __future__ import annotations

import json
from collections.abc import Collection
from dataclasses import dataclass, replace
from typing import Any, Final, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.core.history import ENTRIES, HistoryDelta, RecordEntry
from tiny_harness.core.sizes import CHUNK_BYTES
from tiny_harness.kube.client import Obj, translate
from tiny_harness.kube.labels import label_value, shard_labels
from tiny_harness.kube.names import (
    API_VERSION,
    GROUP,
    KIND,
    TASK_LABEL,
    TURN_KIND,
    TURN_LABEL,
    TURN_PLURAL,
    VERSION,
)
from tiny_harness.kube.ownership import owned_by, owner_uids, uid_of
from tiny_harness.kube.unreadable import Skipped, parsed, uncounted


class FencedError(HarnessError):
    """The turn record is fenced by a newer runner lease: this writer no longer holds it."""


class EntryTooLargeError(HarnessError):
    """One journal entry is bigger than a whole chunk: it can never be written. Every text an
    entry holds is bounded before it is journaled (core/sizes.py), so this is a bug to
    report, and the turn fails on it rather than trying again."""


@dataclass(frozen=True)
class TurnRecord:
    name: str
    task: str
    turn: int
    chunk: int
    entries: tuple[RecordEntry, ...]
    history: HistoryDelta | None
    size: int
    lease: int | None = None
    #: The history delta goes on in the next chunk: the turn's end is written only once the
    #: last piece is (a delta too big for one chunk is split into consecutive deltas).
    history_continues: bool = False
    resource_version: str = ""
    #: The uids of the tasks its owner references name (the operator writes one).
    owners: tuple[str, ...] = ()

    @classmethod
    def of(cls, obj: Obj) -> TurnRecord:
        spec = obj["spec"]
        raw_entries = spec.get("entries") or []
        history = spec.get("history")
        lease = spec.get("lease")
        return cls(
            name=obj["metadata"]["name"],
            task=str(spec.get("task", "")),
            turn=int(spec["turn"]),
            chunk=int(spec.get("chunk", 0)),
            entries=ENTRIES.validate_python(raw_entries),
            history=HistoryDelta.model_validate(history) if history else None,
            size=len(json.dumps(spec)),
            lease=int(lease) if lease is not None else None,
            resource_version=str(obj["metadata"].get("resourceVersion", "")),
            owners=owner_uids(obj),
            history_continues=bool(spec.get("historyContinues")),
        )

    @classmethod
    def read(cls, obj: Obj, skipped: Skipped = uncounted) -> TurnRecord | None:
        """The record, or None when it cannot be read: skipped and flagged (:mod:`.unreadable`),
        so one bad record never fails the read of its task."""
        return parsed(obj, cls.of, kind=TURN_KIND, skipped=skipped)

    @property
    def ended(self) -> bool:
        """This chunk holds the last piece of the turn's history delta: the turn has ended."""
        return self.history is not None and not self.history_continues


#: How much of the task's uid a record's name carries: enough that two tasks of one name never
#: share a record name; ownership itself is checked on the whole uid.
UID_IN_NAME: Final = 8


def record_name(task: str, uid: str, turn: int, chunk: int = 0) -> str:
    suffix = f"-{uid[:UID_IN_NAME]}-t{turn}" + (f"-c{chunk}" if chunk else "")
    return task[: 253 - len(suffix)] + suffix


def _split_entries(entries: list[dict[str, Any]], *, name: str) -> list[list[dict[str, Any]]]:
    """``entries`` in groups that each fit in one chunk, in order."""
    groups: list[list[dict[str, Any]]] = []
    group: list[dict[str, Any]] = []
    size = 0
    for entry in entries:
        n = len(json.dumps(entry))
        if n >= CHUNK_BYTES:
            raise EntryTooLargeError(
                f"a journal entry of turn record {name} is {n} bytes, more than a whole chunk "
                f"({CHUNK_BYTES}); it cannot be stored"
            )
        if group and size + n >= CHUNK_BYTES:
            groups.append(group)
            group, size = [], 0
        group.append(entry)
        size += n
    if group:
        groups.append(group)
    return groups


def _split_history(delta: HistoryDelta) -> list[HistoryDelta]:
    """``delta`` as consecutive deltas that each fit in one chunk. Applied in order they make
    the same history, and each keeps an absolute ``keep``, so applying a piece again (a turn
    whose end was written twice) changes nothing."""
    pieces: list[HistoryDelta] = []
    keep = delta.keep
    current: list[Any] = []
    size = 0
    for message in delta.messages:
        n = len(message.model_dump_json())
        if current and size + n >= CHUNK_BYTES:
            pieces.append(HistoryDelta(keep=keep, messages=tuple(current)))
            keep += len(current)
            current, size = [], 0
        current.append(message)
        size += n
    pieces.append(HistoryDelta(keep=keep, messages=tuple(current)))
    return pieces


def _dump(entries: tuple[RecordEntry, ...]) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], ENTRIES.dump_python(entries, mode="json"))


class TurnRecords:
    """The turn records of one namespace. ``skipped`` hears of each stored record a read
    skipped because it cannot be parsed (the component's metrics count them)."""

    def __init__(
        self, api: client.ApiClient, namespace: str, *, skipped: Skipped = uncounted
    ) -> None:
        self._api = client.CustomObjectsApi(api)
        self.namespace = namespace
        self._skipped = skipped

    async def for_task(
        self, task: Obj, turn: int | None = None, *, turns: Collection[int] | None = None
    ) -> list[TurnRecord]:
        """The records (or one turn's, or those of ``turns``) of the task object ``task``, in
        order: those its uid owns, so an older task's of the same name are never among them.
        One that cannot be read is left out (:mod:`.unreadable`). The turns are chosen by the
        API server (a label selector), so a reader of a few turns is sent those alone."""
        name = str(task["metadata"]["name"])
        selector = f"{TASK_LABEL}={label_value(name)}"
        if turn is not None:
            selector += f",{TURN_LABEL}={turn}"
        if turns is not None:
            if not turns:
                return []
            selector += f",{TURN_LABEL} in ({','.join(str(t) for t in sorted(turns))})"
        try:
            result = await self._api.list_namespaced_custom_object(
                GROUP, VERSION, self.namespace, TURN_PLURAL, label_selector=selector
            )
        except ApiException as exc:
            raise translate(exc) from None
        mine = (
            TurnRecord.read(o, self._skipped)
            for o in result["items"]
            if o["spec"].get("task") == name and owned_by(owner_uids(o), task)
        )
        return sorted((r for r in mine if r is not None), key=lambda r: (r.turn, r.chunk))

    async def append(
        self,
        task: str,
        turn: int,
        entries: tuple[RecordEntry, ...],
        *,
        last: TurnRecord | None,
        owner: Obj,
        history: HistoryDelta | None = None,
        lease: int | None = None,
    ) -> TurnRecord:
        """Add entries (and, at the turn's end, the history delta) to the turn's last chunk,
        creating the record or a new chunk as needed. Returns the chunk written.

        With ``lease`` (a turn's write) the append only lands while the record is fenced by
        that epoch; otherwise :class:`FencedError`. A new chunk is begun by sealing the last
        one under the same test, so a fenced-out writer cannot start a chunk either.
        """
        added = _dump(entries)
        added_size = len(json.dumps(added)) + (len(history.model_dump_json()) if history else 0)
        same_turn = last is not None and last.turn == turn
        if last is not None and same_turn and last.size + added_size < CHUNK_BYTES:
            return await self._patch(last, added, history, added_size, lease=lease)
        if added_size < CHUNK_BYTES:
            return await self._next_chunk(task, turn, last, added, history, owner, lease)
        # More than one chunk holds: entries in chunks of their own, then the history delta
        # in consecutive pieces, the last one ending the turn (see core/sizes.py).
        record = last
        for group in _split_entries(added, name=record_name(task, uid_of(owner), turn)):
            record = await self._next_chunk(task, turn, record, group, None, owner, lease)
        pieces = _split_history(history) if history is not None else []
        for i, piece in enumerate(pieces):
            record = await self._next_chunk(
                task, turn, record, [], piece, owner, lease, continues=i < len(pieces) - 1
            )
        assert record is not None
        return record

    async def _next_chunk(
        self,
        task: str,
        turn: int,
        last: TurnRecord | None,
        entries: list[dict[str, Any]],
        history: HistoryDelta | None,
        owner: Obj,
        lease: int | None,
        *,
        continues: bool = False,
    ) -> TurnRecord:
        """A new chunk after ``last``: the last one sealed under the same fence test, so a
        fenced-out writer cannot start a chunk either."""
        chunk = 0
        if last is not None and last.turn == turn:
            await self._patch(last, [], None, 0, lease=lease, seal=True)
            chunk = last.chunk + 1
        return await self._create(
            task, turn, chunk, entries, history, owner, lease, continues=continues
        )

    async def fence(self, record: TurnRecord, lease: int) -> TurnRecord:
        """Take the record over for the lease epoch ``lease``: from now on only appends that
        test for it land. Conditional on the epoch read, so two takers cannot both win."""
        ops: list[dict[str, Any]] = []
        if record.lease is not None:
            ops.append({"op": "test", "path": "/spec/lease", "value": record.lease})
        ops.append({"op": "add", "path": "/spec/lease", "value": lease})
        obj = await self._json_patch(record.name, ops)
        return TurnRecord.of(obj)

    async def get(self, name: str) -> TurnRecord | None:
        try:
            obj = await self._api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, TURN_PLURAL, name
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise translate(exc, name) from None
        return TurnRecord.of(cast(Obj, obj))

    async def _json_patch(self, name: str, ops: list[dict[str, Any]]) -> Obj:
        try:
            return cast(
                Obj,
                await self._api.patch_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, TURN_PLURAL, name, ops
                ),
            )
        except ApiException as exc:
            if exc.status == 422 and "test" in str(exc.body or "").lower():
                raise FencedError(
                    f"the turn record {name} is fenced by another runner lease"
                ) from None
            raise translate(exc, name) from None

    async def _create(
        self,
        task: str,
        turn: int,
        chunk: int,
        entries: list[dict[str, Any]],
        history: HistoryDelta | None,
        owner: Obj,
        lease: int | None,
        *,
        continues: bool = False,
    ) -> TurnRecord:
        name = record_name(task, uid_of(owner), turn, chunk)
        metadata: dict[str, Any] = {
            "name": name,
            "labels": {
                TASK_LABEL: label_value(task),
                TURN_LABEL: str(turn),
                **shard_labels(owner),
            },
            # Owned by its task: deleted with it, and read only for it.
            "ownerReferences": [
                {"apiVersion": API_VERSION, "kind": KIND, "name": task, "uid": uid_of(owner)}
            ],
        }
        spec: dict[str, Any] = {"task": task, "turn": turn, "chunk": chunk, "entries": entries}
        if lease is not None:
            spec["lease"] = lease
        if history is not None:
            spec["history"] = history.model_dump(mode="json")
        if continues:
            spec["historyContinues"] = True
        body = {"apiVersion": API_VERSION, "kind": TURN_KIND, "metadata": metadata, "spec": spec}
        try:
            obj = await self._api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, TURN_PLURAL, body
            )
        except ApiException as exc:
            if exc.status != 409:
                raise translate(exc, name) from None
            # Someone created the chunk first (a notice, or another lease holder): append to
            # it, under the same fence test.
            existing = await self.get(name)
            if existing is None:
                raise translate(exc, name) from None
            return await self._patch(
                existing,
                entries,
                history,
                len(json.dumps(entries)),
                lease=lease,
                continues=continues,
            )
        return TurnRecord.of(cast(Obj, obj))

    async def _patch(
        self,
        record: TurnRecord,
        entries: list[dict[str, Any]],
        history: HistoryDelta | None,
        added_size: int,
        *,
        lease: int | None = None,
        seal: bool = False,
        continues: bool = False,
    ) -> TurnRecord:
        ops: list[dict[str, Any]] = []
        if lease is not None:
            ops.append({"op": "test", "path": "/spec/lease", "value": lease})
        ops += [{"op": "add", "path": "/spec/entries/-", "value": e} for e in entries]
        if history is not None:
            ops.append(
                {"op": "add", "path": "/spec/history", "value": history.model_dump(mode="json")}
            )
            if continues:
                ops.append({"op": "add", "path": "/spec/historyContinues", "value": True})
        if seal:
            ops.append({"op": "add", "path": "/spec/sealed", "value": True})
        if len(ops) == (1 if lease is not None else 0):
            return record
        obj = await self._json_patch(record.name, ops)
        return replace(
            record,
            entries=(*record.entries, *ENTRIES.validate_python(entries)),
            history=history or record.history,
            history_continues=continues if history is not None else record.history_continues,
            size=record.size + added_size,
            resource_version=str(obj["metadata"].get("resourceVersion", "")),
        )
