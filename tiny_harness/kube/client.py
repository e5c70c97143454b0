"""Typed access to ``HarnessTask`` objects over the asynchronous Kubernetes client.

Callers get plain dicts (the object as the API returns it) and typed errors; the group, version
and plural, the content types of patches, and the handling of 404 and 409 live here only.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any, cast

import aiohttp
from kubernetes_asyncio import client, config
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError, TaskNotFoundError
from tiny_harness.core.json_bounds import loads_document
from tiny_harness.kube.labels import label_value, shard_labels
from tiny_harness.kube.names import API_VERSION, GROUP, KIND, PARENT_LABEL, PLURAL, VERSION

Obj = dict[str, Any]


class ConflictError(HarnessError):
    """Someone else changed the object since it was read; re-read and try again."""


class KubeError(HarnessError):
    """The API server refused a request; the message carries its reason."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(f"the Kubernetes API refused the request ({status}): {message}")
        self.status = status


class RefusedWriteError(KubeError):
    """The API server refused a write for what it is, not for when it came: too large for
    the API server (413) or for etcd (500 "request is too large"), or invalid (422). The same
    write would be refused again, so it is never retried: the caller ends in a state that
    says so."""


def _refused_for_good(status: int, body: str) -> bool:
    return status in (413, 422) or (status == 500 and "too large" in body.lower())


def unreachable(exc: BaseException) -> bool:
    """Is this the API server (or the network to it) being away, rather than a refusal? Only
    then is the same request worth sending again."""
    if isinstance(exc, RefusedWriteError):
        return False
    if isinstance(exc, KubeError):
        return exc.status == 0 or exc.status == 429 or exc.status >= 500
    return isinstance(exc, (aiohttp.ClientError, asyncio.TimeoutError, ConnectionError, OSError))


async def connect(
    kubeconfig: Path | None = None,
    context: str | None = None,
    *,
    max_connections: int | None = None,
) -> client.ApiClient:
    """An API client for the given kubeconfig, ``$KUBECONFIG``, or the in-cluster identity.

    ``max_connections`` caps the client's connection pool (the generated client's default is
    100). Each open connection keeps its TLS buffers, so a process that only makes short
    requests (the operator's writes) caps it low; one that holds a watch per connection (the
    gateway's streams) must not.
    """
    cfg = client.Configuration()
    if kubeconfig is None and _in_cluster():
        config.load_incluster_config(client_configuration=cfg)
    else:
        await config.load_kube_config(
            config_file=str(kubeconfig) if kubeconfig else None,
            context=context,
            client_configuration=cfg,
        )
    if max_connections is not None:
        cfg.connection_pool_maxsize = max_connections
    return _without_env_lookups(BoundedApiClient(configuration=cfg))


class BoundedApiClient(client.ApiClient):  # type: ignore[misc]
    """The generated client, decoding our objects with a bound (``core.json_bounds``).

    It decodes a whole answer at once, and one object nested past what Python's decoder takes
    (stored before free-form data was kept as text, or under a looser CRD) would fail every
    listing of its kind in the namespace, for every reader. Here that object's too-deep value
    is cut (:func:`~tiny_harness.core.json_bounds.loads_document`), so its reader skips and
    flags it (``kube/unreadable.py``) and reads the rest."""

    def deserialize(self, response: Any, response_type: Any) -> Any:
        if response_type == "object" and isinstance(response.data, (str, bytes)):
            try:
                return loads_document(response.data)
            except ValueError:
                return response.data
        return super().deserialize(response, response_type)


_PROXY_VARS = ("HTTPS_PROXY", "https_proxy", "HTTP_PROXY", "http_proxy", "ALL_PROXY", "all_proxy")


def _without_env_lookups(api: client.ApiClient) -> client.ApiClient:
    """The generated client's aiohttp session reads ~/.netrc and the proxy variables on every
    request (``trust_env``), a large share of a small request's CPU. With no proxy configured
    there is nothing to find, so switch it off."""
    import os

    if not any(os.environ.get(v) for v in _PROXY_VARS):
        session = api.rest_client.pool_manager
        session._trust_env = False
    return api


def _in_cluster() -> bool:
    import os

    return "KUBERNETES_SERVICE_HOST" in os.environ and "KUBECONFIG" not in os.environ


def translate(exc: ApiException, name: str | None = None) -> HarnessError:
    if exc.status == 404 and name is not None:
        return TaskNotFoundError(name)
    if exc.status == 409:
        return ConflictError(f"the task {name!r} changed meanwhile; re-read it and try again")
    status = int(exc.status or 0)
    body = str(exc.body or "")
    if _refused_for_good(status, body):
        return RefusedWriteError(status, _said(body) or str(exc.reason or ""))
    return KubeError(status, str(exc.reason or exc.body))


def _said(body: str) -> str:
    """The API server's own message in an error body (a ``Status`` object), or the body."""
    try:
        parsed = json.loads(body)
    except ValueError:
        return body[:2048]
    if isinstance(parsed, dict) and isinstance(parsed.get("message"), str):
        return str(parsed["message"])[:2048]
    return body[:2048]


def child_metadata(parent: Mapping[str, Any]) -> Obj:
    """The metadata that makes a new task ``parent``'s child: the controller owner reference
    to the parent's uid (what readers check, kube/ownership.py; it also deletes the child with
    its parent), the parent label and the parent's shard label (one replica works a tree)."""
    meta = parent["metadata"]
    return {
        "labels": {PARENT_LABEL: label_value(str(meta["name"])), **shard_labels(parent)},
        "ownerReferences": [
            {
                "apiVersion": API_VERSION,
                "kind": KIND,
                "name": meta["name"],
                "uid": meta["uid"],
                "controller": True,
                "blockOwnerDeletion": True,
            }
        ],
    }


class HarnessTasks:
    """The ``HarnessTask`` objects of one namespace."""

    def __init__(self, api: client.ApiClient, namespace: str) -> None:
        self._api = client.CustomObjectsApi(api)
        self.namespace = namespace

    def _args(self) -> tuple[str, str, str, str]:
        return GROUP, VERSION, self.namespace, PLURAL

    async def create(
        self,
        name: str,
        spec: Mapping[str, Any],
        *,
        labels: Mapping[str, str] | None = None,
        annotations: Mapping[str, str] | None = None,
        owner: Obj | None = None,
    ) -> Obj:
        """Create the task ``name``, every kind alike (the operator's sub-tasks, the gateway's
        tasks and sub-tasks): with ``owner``, as its child (:func:`child_metadata`: the owner
        reference, the parent label, and the parent's shard, so one replica works the whole
        tree). A name already taken is a :class:`ConflictError`: the caller reads the task it
        names, or says the name is taken."""
        metadata: Obj = {"name": name}
        child = child_metadata(owner) if owner is not None else {}
        labels = {**child.get("labels", {}), **(labels or {})}
        if labels:
            metadata["labels"] = labels
        if annotations:
            metadata["annotations"] = dict(annotations)
        if owner is not None:
            metadata["ownerReferences"] = child["ownerReferences"]
        body = {"apiVersion": API_VERSION, "kind": KIND, "metadata": metadata, "spec": dict(spec)}
        try:
            return cast(Obj, await self._api.create_namespaced_custom_object(*self._args(), body))
        except ApiException as exc:
            raise translate(exc, name) from None

    async def get(self, name: str) -> Obj:
        try:
            return cast(Obj, await self._api.get_namespaced_custom_object(*self._args(), name))
        except ApiException as exc:
            raise translate(exc, name) from None

    async def list(self, label_selector: str | None = None) -> list[Obj]:
        try:
            result = await self._api.list_namespaced_custom_object(
                *self._args(), label_selector=label_selector or ""
            )
        except ApiException as exc:
            raise translate(exc) from None
        return cast(list[Obj], result["items"])

    async def patch_status(
        self, name: str, status: Mapping[str, Any], *, resource_version: str | None = None
    ) -> Obj:
        """Merge-patch the status subresource; with ``resource_version`` the write only
        succeeds on that exact version (otherwise :class:`ConflictError`)."""
        body: Obj = {"status": dict(status)}
        if resource_version is not None:
            body["metadata"] = {"resourceVersion": resource_version}
        try:
            return cast(
                Obj,
                await self._api.patch_namespaced_custom_object_status(
                    *self._args(), name, body, _content_type="application/merge-patch+json"
                ),
            )
        except ApiException as exc:
            raise translate(exc, name) from None

    async def delete(
        self, name: str, *, uid: str | None = None, resource_version: str | None = None
    ) -> None:
        """Delete the task; its dependents (messages, turn records, sub-tasks with an owner
        reference to it) are deleted after it by the garbage collector. With ``uid`` and
        ``resource_version`` the delete only happens to that exact object as it was then
        (otherwise :class:`ConflictError`): a task changed or re-created meanwhile stays."""
        body: Obj = {"propagationPolicy": "Background"}
        preconditions = {
            k: v for k, v in (("uid", uid), ("resourceVersion", resource_version)) if v
        }
        if preconditions:
            body["preconditions"] = preconditions
        try:
            await self._api.delete_namespaced_custom_object(*self._args(), name, body=body)
        except ApiException as exc:
            raise translate(exc, name) from None


async def read_object(api: client.ApiClient, plural: str, namespace: str, name: str) -> Obj | None:
    """One of the harness's objects by name, or None when it is gone."""
    try:
        found = await client.CustomObjectsApi(api).get_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, name
        )
    except ApiException as exc:
        if exc.status == 404:
            return None
        raise translate(exc) from None
    return cast(Obj, found)
