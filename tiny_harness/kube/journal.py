"""Turn records: where the operator checkpoints each turn, and where the history is read from.

One ``HarnessTurn`` object per turn (``<task>-t<turn>``), split into numbered chunks
(``-c1``, ``-c2`` ...) before it nears the API's object size limit. Appending is a JSON patch
that adds to the entries list, so a checkpoint is one small write however long the turn is.
"""

from __future__ import annotations

import json
from collections import OrderedDict
from dataclasses import dataclass
from typing import Any, Final, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.history import ENTRIES, HistoryDelta, RecordEntry
from tiny_harness.kube.client import Obj, translate
from tiny_harness.kube.labels import label_value
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

#: Start a new chunk before a record would pass this size (etcd refuses ~1.5 MiB).
CHUNK_BYTES: Final = 768 * 1024


@dataclass(frozen=True)
class TurnRecord:
    name: str
    turn: int
    chunk: int
    entries: tuple[RecordEntry, ...]
    history: HistoryDelta | None
    size: int

    @classmethod
    def of(cls, obj: Obj) -> TurnRecord:
        spec = obj["spec"]
        raw_entries = spec.get("entries") or []
        history = spec.get("history")
        return cls(
            name=obj["metadata"]["name"],
            turn=int(spec["turn"]),
            chunk=int(spec.get("chunk", 0)),
            entries=ENTRIES.validate_python(raw_entries),
            history=HistoryDelta.model_validate(history) if history else None,
            size=len(json.dumps(spec)),
        )


_PARSED: OrderedDict[tuple[str, str, str], TurnRecord] = OrderedDict()
_PARSED_MAX: Final = 20_000


def _parsed(obj: Obj) -> TurnRecord:
    """A record parsed once per version: a long conversation's older turns never change, so
    re-validating them on every pass would make each turn cost more than the last."""
    meta = obj["metadata"]
    key = (meta.get("namespace", ""), meta["name"], meta.get("resourceVersion", ""))
    record = _PARSED.get(key)
    if record is None:
        record = TurnRecord.of(obj)
        _PARSED[key] = record
        if len(_PARSED) > _PARSED_MAX:
            _PARSED.popitem(last=False)
    return record


def record_name(task: str, turn: int, chunk: int = 0) -> str:
    suffix = f"-t{turn}" + (f"-c{chunk}" if chunk else "")
    return task[: 253 - len(suffix)] + suffix


def _dump(entries: tuple[RecordEntry, ...]) -> list[dict[str, Any]]:
    return cast(list[dict[str, Any]], ENTRIES.dump_python(entries, mode="json"))


class TurnRecords:
    """The turn records of one namespace."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self._api = client.CustomObjectsApi(api)
        self.namespace = namespace

    async def for_task(self, task: str, turn: int | None = None) -> list[TurnRecord]:
        """A task's records (or one turn's), in order."""
        selector = f"{TASK_LABEL}={label_value(task)}"
        if turn is not None:
            selector += f",{TURN_LABEL}={turn}"
        try:
            result = await self._api.list_namespaced_custom_object(
                GROUP, VERSION, self.namespace, TURN_PLURAL, label_selector=selector
            )
        except ApiException as exc:
            raise translate(exc) from None
        records = [TurnRecord.of(o) for o in result["items"] if o["spec"].get("task") == task]
        return sorted(records, key=lambda r: (r.turn, r.chunk))

    async def append(
        self,
        task: str,
        turn: int,
        entries: tuple[RecordEntry, ...],
        *,
        last: TurnRecord | None,
        history: HistoryDelta | None = None,
        owner_uid: str | None = None,
    ) -> TurnRecord:
        """Add entries (and, at the turn's end, the history delta) to the turn's last chunk,
        creating the record or a new chunk as needed. Returns the chunk written."""
        added = _dump(entries)
        added_size = len(json.dumps(added)) + (len(history.model_dump_json()) if history else 0)
        if last is not None and last.turn == turn and last.size + added_size < CHUNK_BYTES:
            return await self._patch(last, added, history, added_size)
        chunk = last.chunk + 1 if last is not None and last.turn == turn else 0
        return await self._create(task, turn, chunk, added, history, owner_uid)

    async def _create(
        self,
        task: str,
        turn: int,
        chunk: int,
        entries: list[dict[str, Any]],
        history: HistoryDelta | None,
        owner_uid: str | None,
    ) -> TurnRecord:
        name = record_name(task, turn, chunk)
        metadata: dict[str, Any] = {
            "name": name,
            "labels": {TASK_LABEL: label_value(task), TURN_LABEL: str(turn)},
        }
        if owner_uid:
            metadata["ownerReferences"] = [
                {"apiVersion": API_VERSION, "kind": KIND, "name": task, "uid": owner_uid}
            ]
        spec: dict[str, Any] = {"task": task, "turn": turn, "chunk": chunk, "entries": entries}
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
            # Someone (a command's reply during the turn) created the chunk first: append.
            try:
                existing = await self._api.get_namespaced_custom_object(
                    GROUP, VERSION, self.namespace, TURN_PLURAL, name
                )
            except ApiException as again:
                raise translate(again, name) from None
            record = TurnRecord.of(cast(Obj, existing))
            return await self._patch(record, entries, history, len(json.dumps(entries)))
        return TurnRecord.of(cast(Obj, obj))

    async def _patch(
        self,
        record: TurnRecord,
        entries: list[dict[str, Any]],
        history: HistoryDelta | None,
        added_size: int,
    ) -> TurnRecord:
        ops: list[dict[str, Any]] = [
            {"op": "add", "path": "/spec/entries/-", "value": e} for e in entries
        ]
        if history is not None:
            ops.append(
                {"op": "add", "path": "/spec/history", "value": history.model_dump(mode="json")}
            )
        if not ops:
            return record
        try:
            await self._api.patch_namespaced_custom_object(
                GROUP, VERSION, self.namespace, TURN_PLURAL, record.name, ops
            )
        except ApiException as exc:
            raise translate(exc, record.name) from None
        return TurnRecord(
            name=record.name,
            turn=record.turn,
            chunk=record.chunk,
            entries=(*record.entries, *ENTRIES.validate_python(entries)),
            history=history or record.history,
            size=record.size + added_size,
        )
