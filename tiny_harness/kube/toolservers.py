"""The API side of tool servers: following ``HarnessToolServer`` objects, writing their
status, and reading the Secret keys their headers name.

The operator reads a Secret only by name (``get``: it can neither list nor watch them), only
in the tool server's own namespace, and only when the Secret says, by its
:data:`~tiny_harness.core.tool_server.SECRET_ANNOTATION` annotation, that this server may send
its values to the origin of its ``spec.url`` (``<name>@<origin>``). The values go into the
operator's memory and the server's requests, never into a log, a status or an error message.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.secret_destinations import BoundHeader
from tiny_harness.core.tool_server import SECRET_ANNOTATION, HeaderFromSecret
from tiny_harness.kube.client import Obj, translate
from tiny_harness.kube.names import GROUP, TOOL_SERVER_PLURAL, VERSION
from tiny_harness.kube.secrets import secret_values
from tiny_harness.kube.watching import FullListing, WatchEvent, follow_collection


def follow_tool_servers(
    api: client.ApiClient, namespace: str | None
) -> AsyncIterator[FullListing | WatchEvent]:
    """Every HarnessToolServer of ``namespace`` (None: the cluster), then every change."""
    return follow_collection(api, namespace, TOOL_SERVER_PLURAL)


async def patch_tool_server_status(
    api: client.ApiClient, namespace: str, name: str, status: Mapping[str, Any]
) -> Obj:
    """Merge-patch the status subresource (the operator's alone)."""
    try:
        return cast(
            Obj,
            await client.CustomObjectsApi(api).patch_namespaced_custom_object_status(
                GROUP,
                VERSION,
                namespace,
                TOOL_SERVER_PLURAL,
                name,
                {"status": dict(status)},
                _content_type="application/merge-patch+json",
            ),
        )
    except ApiException as exc:
        raise translate(exc) from None


async def header_values(
    api: client.ApiClient,
    namespace: str,
    server: str,
    headers: tuple[HeaderFromSecret, ...],
    *,
    origin: str,
) -> tuple[BoundHeader, ...]:
    """The headers' values, each read from its Secret key (:func:`.secrets.secret_values`):
    a Secret is used only when its :data:`SECRET_ANNOTATION` lets ``server`` send to
    ``origin``, its spec.url's."""
    return await secret_values(
        api,
        namespace,
        ((h.name, h.value_from.secret_key_ref) for h in headers),
        user="tool server",
        name=server,
        annotation=SECRET_ANNOTATION,
        destination=origin,
        where="the origin of spec.url",
    )
