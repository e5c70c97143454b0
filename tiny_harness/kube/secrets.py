"""Reading the Secret keys that a tool server's or an agent's headers name.

The operator reads a Secret only by name (``get``: it can neither list nor watch them; the
chart grants ``get`` on the names in ``headerSecrets`` only), only in the object's own
namespace, and only when the Secret says, by an annotation listing the object's name, that this
object may send its values: without that, whoever may create a HarnessToolServer or a
HarnessAgent could send any Secret they can name to an address of their choosing. The values
go into the operator's memory and the object's requests, never into a log, a status or an
error message.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.core.tool_server import SecretKeyRef
from tiny_harness.kube.client import translate


class SecretUnusableError(HarnessError):
    """A header's Secret cannot be used; ``reason`` is the Ready condition's reason."""

    def __init__(self, reason: str, message: str) -> None:
        super().__init__(message)
        self.reason = reason


async def secret_values(
    api: client.ApiClient,
    namespace: str,
    refs: Iterable[tuple[str, SecretKeyRef]],
    *,
    user: str,
    name: str,
    annotation: str,
) -> dict[str, str]:
    """Each header's value (``refs``: header name and Secret key), read from its Secret;
    :class:`SecretUnusableError` when a Secret is missing, unreadable, lacks the key, or does
    not list ``name`` in its ``annotation`` (``user``: what asks, "tool server" or "agent")."""
    values: dict[str, str] = {}
    secrets: dict[str, client.V1Secret] = {}
    for header, ref in refs:
        if ref.name not in secrets:
            secrets[ref.name] = await _read_secret(api, namespace, ref.name)
        secret = secrets[ref.name]
        allowed = ((secret.metadata.annotations or {}).get(annotation) or "").split(",")
        if name not in (a.strip() for a in allowed):
            raise SecretUnusableError(
                "SecretNotAllowed",
                f"Secret {ref.name} does not allow this {user} to send its values: add {name} "
                f"to its annotation {annotation}",
            )
        encoded = (secret.data or {}).get(ref.key)
        if encoded is None:
            raise SecretUnusableError(
                "SecretKeyMissing", f"Secret {ref.name} has no key {ref.key} (header {header})"
            )
        try:
            values[header] = base64.b64decode(encoded).decode().strip()
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
                "headerSecrets (the operator reads only the Secrets named there)",
            ) from None
        raise translate(exc) from None
