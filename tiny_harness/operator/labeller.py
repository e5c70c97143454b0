"""Shard labels for the objects that arrive without one.

Sharded replicas watch only the objects that carry the shard label of a shard they hold
(:mod:`tiny_harness.operator.kopf_shards`), so an object without one is seen by no replica's
kopf. Writers copy the label from the task an object belongs to
(:func:`~tiny_harness.kube.labels.shard_labels`); what is left is a new root task (its
shard is a hash of its uid, which exists only once the API server has created it), a message
sent before its task was labelled, and whatever is applied with ``kubectl`` or written before
sharding was turned on. The labeller adds the label to those.

Every sharded replica watches the objects whose label is missing or names no shard of the
current count (:func:`~tiny_harness.operator.shard_deal.unlabelled`): none at all in the steady
state, so the watch costs nothing per turn. It is followed as every collection is
(:func:`~tiny_harness.kube.watching.follow`: on a watch client of its own, never on the
operator's capped write client).

Rules for the races:

- The label depends only on the object's tree (the root task's uid, or a labelled ancestor's
  label), so every replica computes the same one. Only the replica that holds the shard writes
  it; two that both believe they hold it write the same value, and the second write changes
  nothing.
- A replica that does not hold the object's shard keeps it pending for that shard and labels
  it when it acquires the shard (:meth:`Labeller.acquired`), so an object whose holder died
  before labelling it is labelled by the next holder.
- An object deleted meanwhile is dropped from pending (its DELETED event, heard even when the
  watch had to list again, or a 404 on the write). A write that fails otherwise stays pending,
  with a warning naming the object and the API server's answer, and is tried again every
  :data:`RETRY_PENDING_SECONDS` while this replica holds its shard; so is an object whose
  shard could not be found because its task could not be read.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Callable, Collection
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.task import local_parent_of
from tiny_harness.kube.client import KubeError, Obj
from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, SHARD_LABEL, TURN_PLURAL, VERSION
from tiny_harness.kube.watching import WatchEvent, follow
from tiny_harness.operator.shard_deal import labelled, shard_of, unlabelled

log = logging.getLogger(__name__)

#: How far up a task tree the labeller follows unlabelled parents before it gives up and
#: takes the task as its own root (a tree deeper than this is a mistake, or a loop).
MAX_DEPTH: Final = 32

#: How often pending objects of held shards are tried again.
RETRY_PENDING_SECONDS: Final = 5.0

#: A pending object: (plural, namespace, name).
Ref = tuple[str, str, str]


class Labeller:
    """Labels this replica's unlabelled objects; keeps the others' until it holds their shard."""

    def __init__(
        self,
        api: client.ApiClient,
        *,
        namespaces: Collection[str],
        shards: int,
        holds: Callable[[int], bool],
    ) -> None:
        self.api = api
        self.objects = client.CustomObjectsApi(api)
        #: None: the whole cluster.
        self.namespaces: list[str | None] = [*namespaces] or [None]
        self.shards = shards
        self.holds = holds
        self.pending: dict[int, set[Ref]] = {}
        #: Objects whose shard could not be found (the API server away): looked at again.
        self.unplaced: dict[Ref, Obj] = {}
        self.labelled = 0
        self._background: set[asyncio.Task[None]] = set()

    async def run(self) -> None:
        """Watch every kind in every namespace until cancelled."""
        await asyncio.gather(
            self._retry(),
            *(
                self._watch(plural, namespace)
                for plural in (PLURAL, MESSAGE_PLURAL, TURN_PLURAL)
                for namespace in self.namespaces
            ),
        )

    async def _retry(self) -> None:
        while True:
            await asyncio.sleep(RETRY_PENDING_SECONDS)
            for shard in [s for s in self.pending if self.holds(s)]:
                self.acquired(shard)
            for (plural, _, _), obj in list(self.unplaced.items()):
                await self._place(plural, "ADDED", obj)

    def acquired(self, shard: int) -> None:
        """This replica took ``shard``: label what was waiting for its holder."""
        refs = self.pending.pop(shard, set())
        if refs:
            task = asyncio.create_task(self._label_all(shard, refs), name=f"label shard {shard}")
            self._background.add(task)
            task.add_done_callback(self._background.discard)

    async def _label_all(self, shard: int, refs: set[Ref]) -> None:
        for plural, namespace, name in sorted(refs):
            await self._write(plural, namespace, name, shard)

    async def _watch(self, plural: str, namespace: str | None) -> None:
        async for event in follow(
            self.api, namespace, plural, label_selector=unlabelled(self.shards)
        ):
            if isinstance(event, WatchEvent):
                await self._place(plural, event.type, event.object)

    async def _place(self, plural: str, kind: str, obj: Obj) -> None:
        """:meth:`seen`, keeping an object whose shard could not be found (its task could not
        be read) to look at again in :data:`RETRY_PENDING_SECONDS`."""
        meta = obj["metadata"]
        ref = (plural, str(meta.get("namespace") or ""), str(meta["name"]))
        self.unplaced.pop(ref, None)
        try:
            await self.seen(plural, kind, obj)
        except (KubeError, ApiException, OSError, TimeoutError) as exc:
            log.warning(
                "labeller: the shard of %s %s/%s could not be found (%s); tried again in %.0fs",
                *ref,
                exc,
                RETRY_PENDING_SECONDS,
            )
            self.unplaced[ref] = obj

    async def seen(self, plural: str, kind: str, obj: Obj) -> None:
        """One event of the unlabelled objects' watch."""
        meta = obj["metadata"]
        ref = (plural, str(meta.get("namespace") or ""), str(meta["name"]))
        if kind == "DELETED":
            for refs in self.pending.values():
                refs.discard(ref)
            return
        if labelled(meta.get("labels"), self.shards) is not None:
            return  # labelled meanwhile: the watch says so as it leaves the selection
        shard = await self.shard_for(plural, ref[1], obj)
        if shard is None:
            return
        if self.holds(shard):
            await self._write(plural, ref[1], ref[2], shard)
        else:
            self.pending.setdefault(shard, set()).add(ref)

    async def shard_for(self, plural: str, namespace: str, obj: Obj) -> int | None:
        """The shard of the tree ``obj`` belongs to; None for a message or record whose task
        does not exist (it belongs to no tree, and no replica needs it)."""
        if plural == PLURAL:
            return await self._tree(namespace, obj, 0)
        task = await self._get(namespace, str((obj.get("spec") or {}).get("task") or ""))
        return None if task is None else await self._tree(namespace, task, 0)

    async def _tree(self, namespace: str, task: Obj, depth: int) -> int:
        """A task's shard: its own label, else its nearest labelled ancestor's, else its root's
        uid hashed (a task whose parent is gone counts as its own root)."""
        own = labelled(task["metadata"].get("labels"), self.shards)
        if own is not None:
            return own
        parent = local_parent_of(task.get("spec"))
        if parent and depth < MAX_DEPTH:
            above = await self._get(namespace, str(parent))
            if above is not None:
                return await self._tree(namespace, above, depth + 1)
        return shard_of(str(task["metadata"]["uid"]), self.shards)

    async def _get(self, namespace: str, name: str) -> Obj | None:
        if not name:
            return None
        try:
            obj: Any = await self.objects.get_namespaced_custom_object(
                GROUP, VERSION, namespace, PLURAL, name
            )
        except ApiException as exc:
            if exc.status == 404:
                return None
            raise
        return dict(obj)

    async def _write(self, plural: str, namespace: str, name: str, shard: int) -> None:
        try:
            await self.objects.patch_namespaced_custom_object(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                {"metadata": {"labels": {SHARD_LABEL: str(shard)}}},
                _content_type="application/merge-patch+json",
            )
        except ApiException as exc:
            if exc.status != 404:
                log.warning("labeller: could not label %s %s/%s: %s", plural, namespace, name, exc)
                self.pending.setdefault(shard, set()).add((plural, namespace, name))
            return
        self.labelled += 1
        log.debug("labelled %s %s/%s with shard %d", plural, namespace, name, shard)
