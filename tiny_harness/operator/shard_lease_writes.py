"""The Leases of one shard set as the API holds them: listed, created, and replaced on the
version read, so that of two replicas writing one Lease, one wins and the other is told.

:mod:`tiny_harness.operator.shard_leases` decides what to write; this module writes it. A
write that lost a race (409, or 404 for a Lease deleted meanwhile) is a ``False``, never an
error: the replica looks again at its next tick.
"""

from __future__ import annotations

import contextlib
import datetime as dt
from typing import Any, Final

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.clock import rfc3339
from tiny_harness.core.task import Runner

SET_LABEL: Final = "tiny-harness.dev/shard-set"
ROLE_LABEL: Final = "tiny-harness.dev/shard-role"


class ShardLeaseWrites:
    """The Leases of shard set ``shard_set`` in ``namespace`` (see the module docstring)."""

    def __init__(self, api: client.ApiClient, namespace: str, shard_set: str) -> None:
        self.leases = client.CoordinationV1Api(api)
        self.namespace = namespace
        self.shard_set = shard_set

    async def listed(self) -> list[Any]:
        """Every Lease of the set: its members' and its shards'."""
        found = await self.leases.list_namespaced_lease(
            self.namespace, label_selector=f"{SET_LABEL}={self.shard_set}"
        )
        return list(found.items)

    async def create(self, name: str, role: str, spec: dict[str, Any]) -> bool:
        try:
            await self.leases.create_namespaced_lease(
                self.namespace, self._body(name, role, spec, None)
            )
        except ApiException as exc:
            if exc.status == 409:
                return False  # another replica created it first
            raise
        return True

    async def replace(self, lease: Any, spec: dict[str, Any]) -> bool:
        """Write ``spec`` on the version read; False when someone wrote meanwhile."""
        labels = lease.metadata.labels or {}
        body = self._body(
            lease.metadata.name,
            labels.get(ROLE_LABEL, "shard"),
            {
                **{k: v for k, v in spec.items() if k != "acquireTime"},
                "acquireTime": spec.get("acquireTime") or _acquired(lease),
                "leaseTransitions": spec.get("leaseTransitions", lease.spec.lease_transitions),
            },
            lease.metadata.resource_version,
        )
        try:
            await self.leases.replace_namespaced_lease(lease.metadata.name, self.namespace, body)
        except ApiException as exc:
            if exc.status in (404, 409):
                return False
            raise
        return True

    async def delete_stale(self, lease: Any) -> None:
        """Delete a Lease as it was read: one renewed after all, or deleted by another
        replica, stays as it is."""
        with contextlib.suppress(ApiException):
            await self.leases.delete_namespaced_lease(
                lease.metadata.name,
                self.namespace,
                body=client.V1DeleteOptions(
                    preconditions=client.V1Preconditions(
                        resource_version=lease.metadata.resource_version
                    )
                ),
            )

    async def delete(self, name: str) -> None:
        """Delete a Lease of this replica's own (its member Lease, at a graceful stop)."""
        with contextlib.suppress(ApiException):
            await self.leases.delete_namespaced_lease(name, self.namespace)

    def _body(self, name: str, role: str, spec: dict[str, Any], rv: str | None) -> dict[str, Any]:
        metadata: dict[str, Any] = {
            "name": name,
            "namespace": self.namespace,
            "labels": {SET_LABEL: self.shard_set, ROLE_LABEL: role},
        }
        if rv is not None:
            metadata["resourceVersion"] = rv
        return {"apiVersion": "coordination.k8s.io/v1", "kind": "Lease", "metadata": metadata,
                "spec": {k: v for k, v in spec.items() if v is not None}}  # fmt: skip


def runner_of(lease: Any) -> Runner:
    """A Lease as a lease observer judges it: its holder, renewals and transitions."""
    renew = lease.spec.renew_time
    return Runner(
        holder=lease.spec.holder_identity,
        renew_time=rfc3339(renew, digits=6) if isinstance(renew, dt.datetime) else str(renew or ""),
        epoch=int(lease.spec.lease_transitions or 0),
    )


def _acquired(lease: Any) -> str | None:
    taken = lease.spec.acquire_time
    return rfc3339(taken, digits=6) if taken else None
