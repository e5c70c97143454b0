"""Reading the Secret keys that a tool server's or an agent's headers name.

The operator reads a Secret only by name (``get``: it can neither list nor watch them; the
chart grants ``get`` on the names in ``headerSecrets`` only), only in the object's own
namespace, and only when the Secret says, by an annotation entry ``<name>@<origin>``
(:mod:`tiny_harness.core.secret_destinations`), that this object may send its values to the
origin it is about to call. Naming the object is not enough: whoever may patch it, or delete
it and create another under the same name, could otherwise aim it at a host of their own.
Each value comes back bound to the origins its Secret grants, and the clients attach it only
to a request for one of them. The values go into the operator's memory and the object's
requests, never into a log, a status or an error message.
"""

from __future__ import annotations

import base64
from collections.abc import Iterable

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.errors import HarnessError
from tiny_harness.core.secret_destinations import (
    BoundHeader,
    Grants,
    entry,
    not_granted,
    parse_grants,
)
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
    destination: str,
    where: str,
) -> tuple[BoundHeader, ...]:
    """Each header's value (``refs``: header name and Secret key), read from its Secret and
    bound to the origins the Secret's ``annotation`` grants ``name``.

    :class:`SecretUnusableError` when a Secret is missing, unreadable, lacks the key, or does
    not let ``name`` send to ``destination``, the origin about to be called (``where``: what
    that origin is, for the message; ``user``: what asks, "tool server" or "agent")."""
    values: list[BoundHeader] = []
    secrets: dict[str, client.V1Secret] = {}
    for header, ref in refs:
        if ref.name not in secrets:
            secrets[ref.name] = await _read_secret(api, namespace, ref.name)
        secret = secrets[ref.name]
        grants = parse_grants((secret.metadata.annotations or {}).get(annotation))
        origins = grants.origins_for(name)
        if destination not in origins:
            raise _not_allowed(
                ref.name, grants, annotation, user=user, name=name, origin=destination, where=where
            )
        encoded = (secret.data or {}).get(ref.key)
        if encoded is None:
            raise SecretUnusableError(
                "SecretKeyMissing", f"Secret {ref.name} has no key {ref.key} (header {header})"
            )
        try:
            value = base64.b64decode(encoded).decode().strip()
        except (ValueError, UnicodeDecodeError):
            raise SecretUnusableError(
                "SecretKeyMissing", f"Secret {ref.name} key {ref.key} is not UTF-8 text"
            ) from None
        values.append(BoundHeader(header, value, origins, secret=ref.name))
    return tuple(values)


def _not_allowed(
    secret: str, grants: Grants, annotation: str, *, user: str, name: str, origin: str, where: str
) -> SecretUnusableError:
    """Why the Secret's annotation does not let ``name`` send to ``origin``, and what to
    write in it if that is meant."""
    wanted = entry(name, origin)
    granted = grants.origins_for(name)
    if granted:
        return SecretUnusableError(
            "SecretDestinationNotAllowed",
            not_granted(
                secret=secret,
                annotation=annotation,
                user=user,
                name=name,
                origin=origin,
                where=where,
                granted=granted,
            ),
        )
    unreadable = grants.invalid_for(name)
    if unreadable:
        text, why = unreadable[0]
        return SecretUnusableError(
            "SecretAnnotationInvalid",
            f"Secret {secret}'s annotation {annotation} has an entry {text!r} that cannot be "
            f"read: {why}; write {wanted} ({origin} is {where})",
        )
    if grants.names_without_origin(name):
        return SecretUnusableError(
            "SecretNotBound",
            f"Secret {secret}'s annotation {annotation} names {user} {name} without saying "
            f"where its values may go, which is not enough: write {wanted} in place of {name} "
            f"({origin} is {where})",
        )
    return SecretUnusableError(
        "SecretNotAllowed",
        f"Secret {secret} does not allow this {user} to send its values: add {wanted} to its "
        f"annotation {annotation} ({origin} is {where})",
    )


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
