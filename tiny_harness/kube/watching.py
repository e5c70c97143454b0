"""Watching our resources: every change the API server commits, from a resourceVersion on.

A process that keeps no state of its own (the A2A gateway) learns that another process (the
operator) changed a task by watching it; the operator follows the objects it keeps in memory
(agents, tool servers, unlabelled objects) the same way. This module is the one place that
speaks the watch protocol for our resources: it starts the watch at a given ``resourceVersion``
(so nothing committed after a read is missed), resumes it where it stopped when the server ends
it, and turns a ``410 Gone`` into :class:`WatchExpiredError`. There are two ways to use it:

- one object (:func:`watch_object`, from :func:`read_for_watch`): the caller re-reads and
  starts again after a 410; what a reader of one object missed between two versions
  (:func:`changes_between`);
- a collection (:func:`follow`): lists, watches, lists again after a 410 telling what changed
  meanwhile (deletions too), and after an error waits a bounded, growing time and goes on;
- a collection for a follower that keeps a digest of each object, not the object
  (:func:`follow_listings`): the same, with each listing told whole and in pages, and, if asked,
  the objects' metadata alone.

Long-lived watches hold an HTTP connection each, so they run on a client of their own
(:func:`watch_client`): they can never use up the connections that short requests need.
"""

from __future__ import annotations

import asyncio
import contextlib
import copy
import logging
from collections.abc import AsyncGenerator, AsyncIterator, Callable
from dataclasses import dataclass
from typing import Any, Final, Literal, TypeVar, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.backoff import Backoff
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.json_bounds import loads_document
from tiny_harness.kube.client import BoundedApiClient, KubeError, Obj, translate
from tiny_harness.kube.names import GROUP, VERSION

log = logging.getLogger(__name__)

T = TypeVar("T")

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


async def changes_between(
    api: client.ApiClient,
    namespace: str,
    plural: str,
    name: str,
    *,
    after: str,
    upto: int,
    wait_seconds: float = 10.0,
) -> tuple[Obj | None, list[Obj]]:
    """The object ``name`` as it was at ``after``, and each change of it committed after that
    up to version ``upto``, from the API server's history: what a reader that last saw it at
    ``after`` missed. The object at ``after`` is None when it cannot be read there (it did not
    exist then); a deletion ends the changes. Raises :class:`WatchExpiredError` when the
    history no longer reaches back to ``after`` (etcd compacted it). At most ``wait_seconds``
    is spent waiting for the watch to reach ``upto``: what arrived by then is returned."""
    objects = client.CustomObjectsApi(api)
    try:
        listed = await objects.list_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            plural,
            field_selector=name_selector(name),
            resource_version=after,
            resource_version_match="Exact",
        )
    except ApiException as exc:
        if exc.status == 410:
            raise WatchExpiredError(f"version {after} of {plural}/{name} was compacted") from None
        raise translate(exc, name) from None
    items = cast(list[Obj], listed.get("items") or [])
    changes: list[Obj] = []
    with contextlib.suppress(TimeoutError):
        async with asyncio.timeout(wait_seconds):
            watch = watch_object(api, namespace, plural, name, resource_version=after)
            async with contextlib.aclosing(watch) as events:
                async for event in events:
                    if event.type == "DELETED":
                        break
                    changes.append(event.object)
                    if int(event.resource_version) >= upto:
                        break
    return (items[0] if items else None), changes


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
    return BoundedApiClient(configuration=configuration)


async def watch_object(
    api: client.ApiClient,
    namespace: str,
    plural: str,
    name: str,
    *,
    resource_version: str,
) -> AsyncGenerator[WatchEvent, None]:
    """Every change to the object ``name`` committed after ``resource_version``, in order.

    Runs until the caller stops iterating (closing the generator closes the connection).
    Raises :class:`WatchExpiredError` when the server no longer has history that old, and
    :class:`~tiny_harness.kube.client.KubeError` when it refuses the watch.
    """
    async for event in _changes(
        api, namespace, plural, resource_version, field_selector=name_selector(name)
    ):
        yield event


@dataclass(frozen=True)
class Synced:
    """The follower has heard the whole collection as it was listed just now (after the first
    listing, and after each listing again): what it has not heard of does not exist."""


#: The waits between attempts to list and watch again after an error (not after a 410 Gone,
#: which lists again at once).
FOLLOW_BACKOFF: Final = Backoff(first=0.5, cap=30.0)


async def follow(
    api: client.ApiClient,
    namespace: str | None,
    plural: str,
    *,
    label_selector: str = "",
    backoff: Backoff = FOLLOW_BACKOFF,
) -> AsyncIterator[WatchEvent | Synced]:
    """Every object of the collection (``namespace`` None: the whole cluster) that the
    selector matches, then every change to it, in order, until the caller stops iterating.

    The one way to list and watch a collection: each object as ``ADDED`` and then
    :class:`Synced` once listed; then the watch from the listing's resourceVersion. When the
    server's history no longer reaches back that far (410 Gone) it lists again, and tells the
    difference from what it had told: ``ADDED`` for a new object, ``MODIFIED`` for a changed
    one (by resourceVersion, compared for equality only), ``DELETED`` for one the new listing
    lacks, so a deletion missed meanwhile is heard all the same. Any other error (the API
    server away, or refusing) is logged and the listing made again after a bounded wait
    (``backoff``): it never gives up.

    The watches run on a client of their own (:func:`watch_client`, closed when the caller
    stops), whatever client is given: a watch never holds a connection of a client that is
    capped for short requests (the operator's writes).
    """
    watcher = watch_client(api)
    known: dict[tuple[str, str], Obj] = {}

    async def listing() -> AsyncGenerator[WatchEvent | Synced, None]:
        listed = await _list(watcher, namespace, plural, label_selector)
        for event in _difference(known, cast(list[Obj], listed.get("items") or [])):
            yield event
        yield Synced()
        async for event in _changes(
            watcher,
            namespace,
            plural,
            str(listed["metadata"]["resourceVersion"]),
            label_selector=label_selector,
        ):
            key = _key(event.object)
            if event.type == "DELETED":
                known.pop(key, None)
            else:
                known[key] = event.object
            yield event

    try:
        async with contextlib.aclosing(
            _again_and_again(listing, namespace, plural, backoff)
        ) as items:
            async for item in items:
                yield item
    finally:
        await watcher.close()


async def _again_and_again(
    listing: Callable[[], AsyncGenerator[T, None]],
    namespace: str | None,
    plural: str,
    backoff: Backoff,
) -> AsyncGenerator[T, None]:
    """``listing()`` (a listing and the watch from it), made again for ever: at once after a
    410 Gone, after a bounded wait after any other error (the API server away, or refusing),
    which is logged. The wait starts again from the first once a listing is whole
    (:class:`Synced`). The one retry rule of every follower here."""
    failures = 0
    while True:
        try:
            # Closed however the caller stops, so its watch is never left to the collector.
            async with contextlib.aclosing(listing()) as items:
                async for item in items:
                    if isinstance(item, Synced):
                        failures = 0
                    yield item
        except WatchExpiredError:
            log.debug("%s in %s: the watch expired; listing again", plural, namespace or "all")
        except Exception as exc:  # the API server away or refusing: list again, later
            failures += 1
            wait = backoff.delay(failures)
            log.warning(
                "%s in %s: listing or watching failed (%s); again in %.1fs",
                plural,
                namespace or "all namespaces",
                exc,
                wait,
            )
            await asyncio.sleep(wait)


@dataclass(frozen=True)
class Relisted:
    """A listing of the whole collection begins: the ``ADDED`` events up to the next
    :class:`Synced` are every object it holds, and nothing else exists. A listing cut short
    (an error) is followed by another :class:`Relisted`, never by :class:`Synced`."""


#: The objects one page of a listing holds: a large collection comes in pages, so neither the
#: API server nor the follower holds all of it in one response.
LIST_PAGE: Final = 500
_JSON: Final = "application/json"
#: What the API server answers with the metadata of each object alone (no spec, no status).
_METADATA_LIST: Final = "application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1"
_METADATA_WATCH: Final = "application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"


async def follow_listings(
    api: client.ApiClient,
    namespace: str | None,
    plural: str,
    *,
    metadata_only: bool = False,
    label_selector: str = "",
    page: int = LIST_PAGE,
    backoff: Backoff = FOLLOW_BACKOFF,
) -> AsyncGenerator[WatchEvent | Relisted | Synced, None]:
    """Every object of the collection, then every change to it, until the caller stops: as
    :func:`follow`, for a follower that keeps a digest of each object rather than the object.

    Each listing is told whole (:class:`Relisted`, every object ``ADDED``, :class:`Synced`),
    at the start and again after a 410 Gone or an error, never as a difference from the last:
    so nothing here keeps the objects it has told, and the follower builds its digest anew from
    a listing and swaps it in at :class:`Synced`. A listing comes in pages of ``page`` objects.
    With ``metadata_only`` the objects, listed and watched, are their metadata alone
    (``PartialObjectMetadata``), which is all a count by label and annotation needs, and a
    fraction of the bytes. Only objects the label selector matches are told. Errors wait as
    :func:`follow`'s do; it never gives up.
    """
    watcher = watch_client(api)

    async def listing() -> AsyncGenerator[WatchEvent | Relisted | Synced, None]:
        yield Relisted()
        token: str | None = None
        while True:
            listed = await _list_page(
                watcher,
                namespace,
                plural,
                metadata_only,
                limit=page,
                token=token,
                label_selector=label_selector,
            )
            for item in cast(list[Obj], listed.get("items") or []):
                yield WatchEvent("ADDED", item)
            meta = listed.get("metadata") or {}
            token = meta.get("continue") or None
            if token is None:
                break
        yield Synced()
        async for event in _changes(
            watcher,
            namespace,
            plural,
            str(meta["resourceVersion"]),
            metadata_only=metadata_only,
            label_selector=label_selector,
        ):
            yield event

    try:
        async with contextlib.aclosing(
            _again_and_again(listing, namespace, plural, backoff)
        ) as items:
            async for item in items:
                yield item
    finally:
        await watcher.close()


def _path(namespace: str | None, plural: str) -> str:
    if namespace is None:
        return f"/apis/{GROUP}/{VERSION}/{plural}"
    return f"/apis/{GROUP}/{VERSION}/namespaces/{namespace}/{plural}"


async def _list_page(
    api: client.ApiClient,
    namespace: str | None,
    plural: str,
    metadata_only: bool,
    *,
    limit: int,
    token: str | None,
    label_selector: str = "",
) -> Obj:
    """One page of a listing; a continue token too old to use is a 410, as a watch's is."""
    query: list[tuple[str, Any]] = [("limit", limit)]
    if label_selector:
        query.append(("labelSelector", label_selector))
    if token is not None:
        query.append(("continue", token))
    try:
        listed = await api.call_api(
            _path(namespace, plural),
            "GET",
            query_params=query,
            header_params={"Accept": _METADATA_LIST if metadata_only else _JSON},
            response_types_map={200: "object"},
            auth_settings=["BearerToken"],
            _return_http_data_only=True,
        )
    except ApiException as exc:
        if exc.status == 410:
            raise WatchExpiredError(f"the listing of {plural} expired") from None
        raise translate(exc, plural) from None
    return cast(Obj, listed)


def _key(obj: Obj) -> tuple[str, str]:
    meta = obj.get("metadata") or {}
    return str(meta.get("namespace") or ""), str(meta.get("name") or "")


def _difference(known: dict[tuple[str, str], Obj], items: list[Obj]) -> list[WatchEvent]:
    """What a listing says that was not told yet, with ``known`` brought up to date: every
    object gone since (as last told), then every new or changed one."""
    listed = {_key(item): item for item in items}
    events = [WatchEvent("DELETED", known.pop(key)) for key in list(known) if key not in listed]
    for key, item in listed.items():
        told = known.get(key)
        if told is None:
            events.append(WatchEvent("ADDED", item))
        elif _rv(told) != _rv(item):
            events.append(WatchEvent("MODIFIED", item))
        known[key] = item
    return events


def _rv(obj: Obj) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


async def _list(
    api: client.ApiClient, namespace: str | None, plural: str, label_selector: str
) -> Obj:
    objects = client.CustomObjectsApi(api)
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
    return cast(Obj, listed)


async def _changes(
    api: client.ApiClient,
    namespace: str | None,
    plural: str,
    resource_version: str,
    *,
    metadata_only: bool = False,
    **selectors: str,
) -> AsyncIterator[WatchEvent]:
    """The watch protocol: changes after ``resource_version`` to the objects the selectors
    match (with ``metadata_only``, their metadata alone), resumed from the last version seen
    each time the server ends a request."""
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
        if metadata_only:
            response = await _watch_metadata(api, namespace, plural, options)
        elif namespace is None:
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
                event = cast(dict[str, Any], loads_document(line))
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


#: The query parameters of a watch, by the client's option names.
_QUERY_NAMES: Final = {
    "watch": "watch",
    "allow_watch_bookmarks": "allowWatchBookmarks",
    "resource_version": "resourceVersion",
    "timeout_seconds": "timeoutSeconds",
    "label_selector": "labelSelector",
    "field_selector": "fieldSelector",
}


async def _watch_metadata(
    api: client.ApiClient, namespace: str | None, plural: str, options: dict[str, Any]
) -> Any:
    """A watch request answered with each object's metadata alone: the generated client
    always asks for whole objects (it sets ``Accept`` itself), so this one is made directly."""
    query = [(_QUERY_NAMES[k], v) for k, v in options.items() if k in _QUERY_NAMES and v != ""]
    return await api.call_api(
        _path(namespace, plural),
        "GET",
        query_params=query,
        header_params={"Accept": _METADATA_WATCH},
        auth_settings=["BearerToken"],
        _preload_content=False,
    )
