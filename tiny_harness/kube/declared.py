"""The API side of the endpoints a namespace declares (``HarnessAgent``, ``HarnessToolServer``):
reading one, and writing its status.

The operator is the only writer of these objects' status subresource (RBAC: ``patch`` on
``<plural>/status``, nothing on the spec). A status is written on the version the operator
read (``resourceVersion`` in the patch), so two replicas that resolved the same object never
overwrite each other's newer finding unknowingly: the second is told 409 and reads again.
Following them is :func:`tiny_harness.kube.watching.follow`'s; their Secrets are
:mod:`tiny_harness.kube.secrets`'.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.kube.client import Obj, translate
from tiny_harness.kube.names import GROUP, VERSION


async def read_declared(api: client.ApiClient, namespace: str, plural: str, name: str) -> Obj:
    """The object as it is now; :class:`~tiny_harness.kube.client.KubeError` (404 when it
    is gone) when it cannot be read."""
    try:
        return cast(
            Obj,
            await client.CustomObjectsApi(api).get_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, name
            ),
        )
    except ApiException as exc:
        raise translate(exc) from None


async def patch_declared_status(
    api: client.ApiClient,
    namespace: str,
    plural: str,
    name: str,
    status: Mapping[str, Any],
    *,
    resource_version: str,
) -> Obj:
    """Merge-patch the status subresource on ``resource_version``; the object as written.
    :class:`~tiny_harness.kube.client.ConflictError` when it changed since (read it again),
    :class:`~tiny_harness.kube.client.KubeError` when refused (404: it is gone). A key whose
    value is None is removed, as a merge patch does."""
    try:
        return cast(
            Obj,
            await client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                plural,
                name,
                {"metadata": {"resourceVersion": resource_version}, "status": dict(status)},
                _content_type="application/merge-patch+json",
            ),
        )
    except ApiException as exc:
        raise translate(exc) from None
