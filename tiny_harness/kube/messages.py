"""Sending a message to a task: one immutable ``HarnessMessage`` object per message.

Any writer (the gateway, ``kubectl harness``, the operator) sends through
:meth:`HarnessMessages.send`, with the task object it read: the message is owned by that task's
uid and named from it, so a task re-created under an old name never shares a message with the
old one (``kube/ownership.py``). The operator lists a task's messages to find the ones its turn
journals have not taken yet. A stored message the model cannot read is skipped by every reader,
and flagged (:mod:`.unreadable`). See ``docs/design/messages-and-history.md``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.clock import rfc3339_nanos
from tiny_harness.core.inbox import MessageSpec, message_name
from tiny_harness.core.sizes import message_bytes
from tiny_harness.core.tracing import carrier
from tiny_harness.kube.client import ConflictError, Obj, translate
from tiny_harness.kube.labels import label_value, shard_labels
from tiny_harness.kube.names import (
    API_VERSION,
    BYTES_ANNOTATION,
    GROUP,
    KIND,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    SENDER_LABEL,
    TASK_LABEL,
    VERSION,
)
from tiny_harness.kube.ownership import message_belongs, uid_of
from tiny_harness.kube.unreadable import Skipped, parsed, uncounted


@dataclass(frozen=True)
class StoredMessage:
    """A message as the API holds it."""

    name: str
    spec: MessageSpec
    created: str
    resource_version: str
    #: The uids its owner references name: a message written without one (a ``kubectl
    #: apply`` of a manifest) is not deleted with its task by the garbage collector.
    owners: tuple[str, ...] = ()
    #: Its annotations: the sender's trace context among them (``core.tracing.context_of``).
    annotations: Mapping[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, obj: Obj) -> StoredMessage:
        """The message, or a pydantic ValidationError when its spec is not one the model reads
        (a reader skips it with :meth:`read`)."""
        meta = obj["metadata"]
        return cls(
            name=meta["name"],
            spec=MessageSpec.model_validate(obj["spec"]),
            created=meta.get("creationTimestamp", ""),
            resource_version=meta.get("resourceVersion", ""),
            owners=tuple(str(o.get("uid")) for o in meta.get("ownerReferences") or ()),
            annotations=meta.get("annotations") or {},
        )

    @classmethod
    def read(cls, obj: Obj, skipped: Skipped = uncounted) -> StoredMessage | None:
        """The message, or None when it cannot be read: skipped and flagged (:mod:`.unreadable`),
        so one bad object never fails the read of its task."""
        return parsed(obj, cls.of, kind=MESSAGE_KIND, skipped=skipped)

    def belongs_to(self, task: Obj) -> bool:
        """Is this a message of the task object ``task`` (:mod:`.ownership`)?"""
        return self.spec.task == task["metadata"]["name"] and message_belongs(
            self.owners, self.created, task
        )

    @property
    def order(self) -> tuple[str, str, str]:
        """Sort key: the writer's clock (the API server's when the writer gave none, as with
        ``kubectl apply``), then the API server's, then the name."""
        return (self.spec.sent_at or self.created, self.created, self.name)


class HarnessMessages:
    """The ``HarnessMessage`` objects of one namespace. ``skipped`` hears of each stored message
    a read skipped because it cannot be parsed (the component's metrics count them)."""

    def __init__(
        self,
        api: client.ApiClient,
        namespace: str,
        *,
        skipped: Skipped = uncounted,
        as_participant: bool = False,
    ) -> None:
        self._api = client.CustomObjectsApi(api)
        self.namespace = namespace
        self._skipped = skipped
        #: Written as the participant who sends (``kubectl harness``), not as the harness: the
        #: identity policy lets such a writer label a message with no sender but itself, and
        #: annotate no bytes (kube/admission.py); the operator measures its messages instead.
        self.as_participant = as_participant

    async def send(self, spec: MessageSpec, *, task: Obj) -> StoredMessage:
        """Create the message. Sending the same (task, message id) again returns the message
        already stored instead of creating a second one.

        ``task`` is the stored task the message is for: the message is owned by its uid (and
        deleted with it) and carries its shard label (see ``kube.labels.shard_labels``). It is
        labelled with its sender and annotated with the bytes it carries, which the gateway's
        quotas count (``a2a_gateway/tally.py``); written as a participant, the bytes are left
        to the operator to measure (``operator/measurer.py``).
        """
        if spec.sent_at is None:
            spec = spec.model_copy(update={"sent_at": rfc3339_nanos()})
        name = message_name(spec.task, uid_of(task), spec.message_id)
        labels = {TASK_LABEL: label_value(spec.task), **shard_labels(task)}
        # The sender's span, so the turn that takes the message continues its trace.
        annotations = carrier()
        sender = label_value(spec.sender)
        if not self.as_participant:
            # Who sent it and what it carries: the gateway's quotas count both from metadata.
            labels[SENDER_LABEL] = sender
            annotations[BYTES_ANNOTATION] = str(message_bytes(spec))
        elif sender == spec.sender:
            # The writer's own name, which the identity policy compares with its user; a name
            # that is no label value (hashed) is labelled by the operator, with the bytes.
            labels[SENDER_LABEL] = sender
        metadata: dict[str, Any] = {"name": name, "labels": labels, "annotations": annotations}
        # Owned by its task, so deleting the task deletes its messages.
        metadata["ownerReferences"] = [
            {"apiVersion": API_VERSION, "kind": KIND, "name": spec.task, "uid": uid_of(task)}
        ]
        body = {
            "apiVersion": API_VERSION,
            "kind": MESSAGE_KIND,
            "metadata": metadata,
            "spec": spec.model_dump(mode="json", by_alias=True, exclude_none=True),
        }
        try:
            created = await self._api.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, MESSAGE_PLURAL, body
            )
        except ApiException as exc:
            if exc.status != 409:
                raise translate(exc, name) from None
            existing = await self.get(name)
            if existing is None:
                raise ConflictError(
                    f"the message {name} is stored already and cannot be read; send it under "
                    "another message id"
                ) from None
            return existing
        return StoredMessage.of(cast(Obj, created))

    async def get(self, name: str) -> StoredMessage | None:
        """The stored message of that name; None when it cannot be read (skipped and
        flagged); :class:`TaskNotFoundError` when there is none."""
        try:
            obj = await self._api.get_namespaced_custom_object(
                GROUP, VERSION, self.namespace, MESSAGE_PLURAL, name
            )
        except ApiException as exc:
            raise translate(exc, name) from None
        return StoredMessage.read(cast(Obj, obj), self._skipped)

    async def for_task(self, task: Obj) -> list[StoredMessage]:
        """Every message of the task object ``task``, oldest first: those that belong to its
        uid (:func:`.ownership.message_belongs`), never an older task's of the same name. One
        that cannot be read is left out (:mod:`.unreadable`): the others still are."""
        name = str(task["metadata"]["name"])
        try:
            result = await self._api.list_namespaced_custom_object(
                GROUP,
                VERSION,
                self.namespace,
                MESSAGE_PLURAL,
                label_selector=f"{TASK_LABEL}={label_value(name)}",
            )
        except ApiException as exc:
            raise translate(exc) from None
        read = (StoredMessage.read(o, self._skipped) for o in result["items"])
        messages = [m for m in read if m is not None]
        # The label may be a hash of a long name: keep only this task's messages.
        return sorted(
            (m for m in messages if m.spec.task == name and m.belongs_to(task)),
            key=lambda m: m.order,
        )

    async def delete(self, name: str) -> None:
        """Delete one message; one already gone is no error."""
        try:
            await self._api.delete_namespaced_custom_object(
                GROUP, VERSION, self.namespace, MESSAGE_PLURAL, name
            )
        except ApiException as exc:
            if exc.status != 404:
                raise translate(exc, name) from None
