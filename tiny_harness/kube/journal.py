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
from dataclasses import dataclass, replace
from typing import Any, Final, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.core.history import ENTRIES, HistoryDelta, RecordEntry
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

#: Start a new chunk before a record would pass this size (etcd refuses ~1.5 MiB).
CHUNK_BYTES: Final = 768 * 1024


class FencedError(HarnessError):
    """The turn record is fenced by a newer runner lease: this writer no longer holds it."""


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
        )

    @classmethod
    def read(cls, obj: Obj, skipped: Skipped = uncounted) -> TurnRecord | None:
        """The record, or None when it cannot be read: skipped and flagged (:mod:`.unreadable`),
        so one bad record never fails the read of its task."""
        return parsed(obj, cls.of, kind=TURN_KIND, skipped=skipped)

    @property
    def ended(self) -> bool:
        return self.history is not None


#: How much of the task's uid a record's name carries: enough that two tasks of one name never
#: share a record name; ownership itself is checked on the whole uid.
UID_IN_NAME: Final = 8


def record_name(task: str, uid: str, turn: int, chunk: int = 0) -> str:
    suffix = f"-{uid[:UID_IN_NAME]}-t{turn}" + (f"-c{chunk}" if chunk else "")
    return task[: 253 - len(suffix)] + suffix


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

    async def for_task(self, task: Obj, turn: int | None = None) -> list[TurnRecord]:
        """The records (or one turn's) of the task object ``task``, in order: those its uid
        owns, so an older task's of the same name are never among them. One that cannot be
        read is left out (:mod:`.unreadable`)."""
        name = str(task["metadata"]["name"])
        selector = f"{TASK_LABEL}={label_value(name)}"
        if turn is not None:
            selector += f",{TURN_LABEL}={turn}"
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
        if last is not None and last.turn == turn and last.size + added_size < CHUNK_BYTES:
            return await self._patch(last, added, history, added_size, lease=lease)
        chunk = 0
        if last is not None and last.turn == turn:
            await self._patch(last, [], None, 0, lease=lease, seal=True)
            chunk = last.chunk + 1
        return await self._create(task, turn, chunk, added, history, owner, lease)

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
                existing, entries, history, len(json.dumps(entries)), lease=lease
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
    ) -> TurnRecord:
        ops: list[dict[str, Any]] = []
        if lease is not None:
            ops.append({"op": "test", "path": "/spec/lease", "value": lease})
        ops += [{"op": "add", "path": "/spec/entries/-", "value": e} for e in entries]
        if history is not None:
            ops.append(
                {"op": "add", "path": "/spec/history", "value": history.model_dump(mode="json")}
            )
        if seal:
            ops.append({"op": "add", "path": "/spec/sealed", "value": True})
        if len(ops) == (1 if lease is not None else 0):
            return record
        obj = await self._json_patch(record.name, ops)
        return replace(
            record,
            entries=(*record.entries, *ENTRIES.validate_python(entries)),
            history=history or record.history,
            size=record.size + added_size,
            resource_version=str(obj["metadata"].get("resourceVersion", "")),
        )
