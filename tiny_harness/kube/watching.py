"""Watching one object: every change the API server commits to it, from a resourceVersion on.

A process that keeps no state of its own (the A2A gateway) learns that another process (the
operator) changed a task by watching it. This module is the one place that speaks the watch
protocol for our resources: it starts the watch at a given ``resourceVersion`` (so nothing
committed after a read is missed), resumes it where it stopped when the server ends it, and
turns a ``410 Gone`` into :class:`WatchExpiredError` so the caller re-reads and starts again.

Long-lived watches hold an HTTP connection each, so they run on a client of their own
(:func:`watch_client`): they can never use up the connections that short requests need.
"""

from __future__ import annotations

import copy
import json
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final, Literal, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.kube.client import KubeError, Obj, translate
from tiny_harness.kube.names import GROUP, VERSION

#: How long the API server keeps one watch request open before we resume it.
SERVER_TIMEOUT_SECONDS: Final = 290

WatchType = Literal["ADDED", "MODIFIED", "DELETED"]


class WatchExpiredError(HarnessError):
    """The resourceVersion the watch started from is too old (410 Gone): re-read the object
    and watch again from the version read."""


@dataclass(frozen=True)
class WatchEvent:
    """One committed change: its type and the whole object as it is after the change."""

    type: WatchType
    object: Obj

    @property
    def resource_version(self) -> str:
        return str(self.object["metadata"]["resourceVersion"])


async def read_for_watch(
    api: client.ApiClient, namespace: str, plural: str, name: str
) -> tuple[Obj | None, str]:
    """The object ``name`` (None when it does not exist) and the resourceVersion the read was
    made at, from which a watch misses nothing that happened after the read.

    An object's own resourceVersion is when it last changed, which can be older than the
    history the API server keeps for watches (a task parked for minutes); a watch from it is
    refused with 410 Gone. The version of a list is the read's own, so it always is recent.
    """
    try:
        listed = await client.CustomObjectsApi(api).list_namespaced_custom_object(
            GROUP, VERSION, namespace, plural, field_selector=name_selector(name)
        )
    except ApiException as exc:
        raise translate(exc, name) from None
    items = cast(list[Obj], listed.get("items") or [])
    return (items[0] if items else None), str(listed["metadata"]["resourceVersion"])


def name_selector(name: str) -> str:
    """The field selector for the object named ``name``, escaped as the API server reads
    selector values (a backslash, a comma or an equals sign is preceded by a backslash), so a
    name no object can have matches nothing instead of being refused as a bad selector."""
    escaped = name.replace("\\", "\\\\").replace(",", "\\,").replace("=", "\\=")
    return f"metadata.name={escaped}"


def watch_client(api: client.ApiClient) -> client.ApiClient:
    """A client with the same identity and server as ``api`` and no connection limit, for
    watches only. Close it when done, as any ApiClient."""
    configuration = copy.copy(api.configuration)
    configuration.connection_pool_maxsize = None
    return client.ApiClient(configuration=configuration)


async def watch_object(
    api: client.ApiClient,
    namespace: str,
    plural: str,
    name: str,
    *,
    resource_version: str,
) -> AsyncIterator[WatchEvent]:
    """Every change to the object ``name`` committed after ``resource_version``, in order.

    Runs until the caller stops iterating (closing the generator closes the connection).
    Raises :class:`WatchExpiredError` when the server no longer has history that old, and
    :class:`~tiny_harness.kube.client.KubeError` when it refuses the watch.
    """
    async for event in _changes(
        api, namespace, plural, resource_version, field_selector=name_selector(name)
    ):
        yield event


async def watch_collection(
    api: client.ApiClient, namespace: str | None, plural: str, *, label_selector: str
) -> AsyncIterator[WatchEvent]:
    """Every object the selector matches, as listed now (each as ADDED), then every change to
    the matching set, in order; all of it again (listed afresh) when the server's history no
    longer reaches back to where the watch was. ``namespace`` None is the whole cluster.

    Runs until the caller stops iterating. Raises :class:`~tiny_harness.kube.client.KubeError`
    when the server refuses the list or the watch.
    """
    objects = client.CustomObjectsApi(api)
    while True:
        try:
            if namespace is None:
                listed = await objects.list_cluster_custom_object(
                    GROUP, VERSION, plural, label_selector=label_selector
                )
            else:
                listed = await objects.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural, label_selector=label_selector
                )
        except ApiException as exc:
            raise translate(exc, plural) from None
        for item in listed.get("items") or []:
            yield WatchEvent("ADDED", cast(Obj, item))
        try:
            async for event in _changes(
                api,
                namespace,
                plural,
                str(listed["metadata"]["resourceVersion"]),
                label_selector=label_selector,
            ):
                yield event
        except WatchExpiredError:
            continue


@dataclass(frozen=True)
class FullListing:
    """The whole collection as listed now: an object it lacks is gone."""

    objects: tuple[Obj, ...]


async def follow_collection(
    api: client.ApiClient, namespace: str | None, plural: str
) -> AsyncIterator[FullListing | WatchEvent]:
    """A :class:`FullListing` of the collection, then every change to it, in order; a new
    listing whenever the server's history no longer reaches back to where the watch was (so a
    deletion missed meanwhile shows as an object the new listing lacks). ``namespace`` None
    is the whole cluster. Raises :class:`~tiny_harness.kube.client.KubeError` when refused."""
    objects = client.CustomObjectsApi(api)
    while True:
        try:
            if namespace is None:
                listed = await objects.list_cluster_custom_object(GROUP, VERSION, plural)
            else:
                listed = await objects.list_namespaced_custom_object(
                    GROUP, VERSION, namespace, plural
                )
        except ApiException as exc:
            raise translate(exc, plural) from None
        yield FullListing(tuple(cast(list[Obj], listed.get("items") or [])))
        try:
            async for event in _changes(
                api, namespace, plural, str(listed["metadata"]["resourceVersion"])
            ):
                yield event
        except WatchExpiredError:
            continue


async def _changes(
    api: client.ApiClient,
    namespace: str | None,
    plural: str,
    resource_version: str,
    **selectors: str,
) -> AsyncIterator[WatchEvent]:
    """The watch protocol: changes after ``resource_version`` to the objects the selectors
    match, resumed from the last version seen each time the server ends a request."""
    objects = client.CustomObjectsApi(api)
    version = resource_version
    while True:
        options: dict[str, Any] = {
            **selectors,
            "watch": True,
            "allow_watch_bookmarks": True,
            "resource_version": version,
            "timeout_seconds": SERVER_TIMEOUT_SECONDS,
            "_preload_content": False,
        }
        if namespace is None:
            response = await objects.list_cluster_custom_object(GROUP, VERSION, plural, **options)
        else:
            response = await objects.list_namespaced_custom_object(
                GROUP, VERSION, namespace, plural, **options
            )
        try:
            if response.status == 410:
                raise WatchExpiredError(f"resourceVersion {version} of {plural} is too old")
            if response.status >= 300:
                raise KubeError(int(response.status), (await response.text())[:500])
            async for line in response.content:
                if not line.strip():
                    continue
                event = cast(dict[str, Any], json.loads(line))
                kind = event.get("type")
                obj = cast(Obj, event.get("object") or {})
                if kind == "ERROR":
                    code = int(obj.get("code") or 0)
                    if code == 410:
                        raise WatchExpiredError(str(obj.get("message") or "410 Gone"))
                    raise KubeError(code, str(obj.get("message") or obj))
                version = str((obj.get("metadata") or {}).get("resourceVersion") or version)
                if kind in ("ADDED", "MODIFIED", "DELETED"):
                    yield WatchEvent(cast(WatchType, kind), obj)
        finally:
            response.close()
        # The server ended this request (its timeout): resume from the last version seen.
