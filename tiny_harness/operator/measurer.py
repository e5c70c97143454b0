"""The bytes a message carries, measured by the harness when its writer could not be believed.

The gateway's quotas count each participant's messages and bytes from metadata alone (the
sender label and the bytes annotation, ``a2a_gateway/tally.py``), so both must be the
harness's word: the identity policy lets nobody else annotate bytes, and lets a participant
label a message with no sender but themselves (``kube/admission.py``). A message written as
its participant (``kubectl harness send``) therefore arrives without the bytes annotation,
and, when the sender's id is no label value, without the sender label. The operator reads
every message whole anyway (its handler is given the object), so it measures such a message
(``core.sizes.message_bytes``, as the gateway does for what it writes) and writes both; until
then the tally counts the message at the most a message may carry, never at nothing.

``spec`` is immutable once written (the CRD says so), and ``spec.sender`` is bound to the
writer by the policy, so the measure and the label stay true. A message whose spec the model
cannot read is left as it is (every reader skips it; the tally keeps counting it high).
Several replicas that see the same message write the same values: the second patch changes
nothing.
"""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException
from pydantic import ValidationError

from tiny_harness.core.inbox import MessageSpec
from tiny_harness.core.sizes import message_bytes
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import BYTES_ANNOTATION, GROUP, MESSAGE_PLURAL, SENDER_LABEL, VERSION

log = logging.getLogger(__name__)


def measurement(body: Mapping[str, Any]) -> dict[str, Any] | None:
    """The merge patch that gives a message its bytes annotation and sender label, or None when
    it has both already (or its spec does not read)."""
    meta = body.get("metadata") or {}
    annotations = meta.get("annotations") or {}
    labels = meta.get("labels") or {}
    if BYTES_ANNOTATION in annotations and SENDER_LABEL in labels:
        return None
    try:
        spec = MessageSpec.model_validate(body.get("spec") or {})
    except ValidationError:
        return None
    patch: dict[str, Any] = {}
    if BYTES_ANNOTATION not in annotations:
        patch["annotations"] = {BYTES_ANNOTATION: str(message_bytes(spec))}
    if SENDER_LABEL not in labels:
        patch["labels"] = {SENDER_LABEL: label_value(spec.sender)}
    return {"metadata": patch}


async def measure(
    api: client.ApiClient, namespace: str, name: str, patch: Mapping[str, Any]
) -> None:
    """Write ``patch`` (:func:`measurement`) on the message; one deleted meanwhile is no error,
    and a write that fails otherwise is logged and tried again on the message's next event
    (the tally counts it high until then)."""
    try:
        await client.CustomObjectsApi(api).patch_namespaced_custom_object(
            GROUP,
            VERSION,
            namespace,
            MESSAGE_PLURAL,
            name,
            dict(patch),
            _content_type="application/merge-patch+json",
        )
    except ApiException as exc:
        if exc.status != 404:
            log.warning("could not measure message %s/%s: %s", namespace, name, exc)
