"""The API side of tool servers: following ``HarnessToolServer`` objects, writing their
status, and reading the Secret keys their headers name.

The operator reads a Secret only by name (``get``: it can neither list nor watch them), only
in the tool server's own namespace, and only when the Secret says, by its
:data:`~tiny_harness.core.tool_server.SECRET_ANNOTATION` annotation, that this server may send
its values. The values go into the operator's memory and the server's requests, never into a
log, a status or an error message.
"""

from __future__ import annotations

import base64
from collections.abc import AsyncIterator, Mapping
from typing import Any, cast

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.core.tool_server import SECRET_ANNOTATION, HeaderFromSecret
from tiny_harness.kube.client import Obj, translate
from tiny_harness.kube.names import GROUP, TOOL_SERVER_PLURAL, VERSION
from tiny_harness.kube.watching import FullListing, WatchEvent, follow_collection


class SecretUnusableError(HarnessError):
    """A header's Secret cannot be used; ``reason`` is the Ready condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


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
    api: client.ApiClient, namespace: str, server: str, headers: tuple[HeaderFromSecret, ...]
) -> dict[str, str]:
    """The headers' values, each read from its Secret key; :class:`SecretUnusableError` when a
    Secret is missing, unreadable, lacks the key, or does not allow ``server`` to use it."""
    values: dict[str, str] = {}
    secrets: dict[str, client.V1Secret] = {}
    for header in headers:
        ref = header.value_from.secret_key_ref
        if ref.name not in secrets:
            secrets[ref.name] = await _read_secret(api, namespace, ref.name)
        secret = secrets[ref.name]
        allowed = ((secret.metadata.annotations or {}).get(SECRET_ANNOTATION) or "").split(",")
        if server not in (a.strip() for a in allowed):
            raise SecretUnusableError(
                "SecretNotAllowed",
                f"Secret {ref.name} does not allow this tool server to send its values: add "
                f"{server} to its annotation {SECRET_ANNOTATION}",
            )
        encoded = (secret.data or {}).get(ref.key)
        if encoded is None:
            raise SecretUnusableError(
                "SecretKeyMissing", f"Secret {ref.name} has no key {ref.key} (header {header.name})"
            )
        try:
            values[header.name] = base64.b64decode(encoded).decode().strip()
        except (ValueError, UnicodeDecodeError):
            raise SecretUnusableError(
                "SecretKeyMissing", f"Secret {ref.name} key {ref.key} is not UTF-8 text"
            ) from None
    return values


async def _read_secret(api: client.ApiClient, namespace: str, name: str) -> client.V1Secret:
    try:
        return await client.CoreV1Api(api).read_namespaced_secret(name, namespace)
    except ApiException as exc:
        if exc.status == 404:
            raise SecretUnusableError(
                "SecretNotFound", f"Secret {name} does not exist in namespace {namespace}"
            ) from None
        if exc.status == 403:
            raise SecretUnusableError(
                "SecretForbidden",
                f"the operator may not read Secret {name}: add it to the chart's "
                "toolServers.secretNames (the operator reads only the Secrets named there)",
            ) from None
        raise translate(exc) from None
