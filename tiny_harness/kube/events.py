"""Kubernetes Events on the harness's objects, posted by the operator itself.

``kubectl describe ht NAME`` shows what the operator did to a task (Initialised, Rejected,
Completed, DeadlineExceeded, ...) as Events. kopf's ``kopf.info`` posts them through a queue it
keeps in a context variable set only while kopf processes that object, so an Event asked for
by a worker started elsewhere (by the priming before kopf starts, by a slot freed in another
task's callback, by a timer) was dropped without a word, depending on which came first. The
operator posts them here instead, in the worker that decided them, so every one is written
whatever started the worker.

An Event is best effort: a failure to post one is logged and never retried or raised, since
the task's status already says what happened.
"""

from __future__ import annotations

import asyncio
import logging
import time
import uuid
from typing import Any, Final

import aiohttp
from kubernetes_asyncio import client
from kubernetes_asyncio.client.exceptions import ApiException

from tiny_harness.core.clock import rfc3339
from tiny_harness.kube.names import GROUP, KIND, VERSION

log = logging.getLogger(__name__)

#: The longest a worker waits on one Event's write: it waits on the write (so an Event is
#: never lost to a queue), but never longer than this, for an Event is not worth a pass.
POST_SECONDS: Final = 5.0

#: Who the Events say posted them (``kubectl describe``'s "From" column).
COMPONENT: Final = "tiny-harness-operator"


def event_body(
    obj: dict[str, Any], reason: str, message: str, *, warning: bool, instance: str
) -> dict[str, Any]:
    """The Event (the core API group's, v1) that says ``reason: message`` of ``obj``, from
    ``instance``."""
    meta = obj["metadata"]
    now = rfc3339(digits=0)  # metav1.Time: whole seconds
    return {
        "apiVersion": "v1",
        "kind": "Event",
        "metadata": {
            # kubectl's own naming: the object's name and a suffix unique to this Event.
            "name": f"{meta['name']}.{time.time_ns():x}{uuid.uuid4().hex[:6]}",
            "namespace": meta["namespace"],
        },
        "involvedObject": {
            # A task as the operator's cache keeps it may lack these: it is a HarnessTask.
            "apiVersion": obj.get("apiVersion") or f"{GROUP}/{VERSION}",
            "kind": obj.get("kind") or KIND,
            "name": meta["name"],
            "namespace": meta["namespace"],
            "uid": meta.get("uid"),
            "resourceVersion": meta.get("resourceVersion"),
        },
        "reason": reason,
        # The API server keeps at most 1 KiB of an Event's message readable in describe.
        "message": message[:1024],
        "type": "Warning" if warning else "Normal",
        "source": {"component": COMPONENT},
        "reportingComponent": COMPONENT,
        "reportingInstance": instance,
        "firstTimestamp": now,
        "lastTimestamp": now,
        "count": 1,
    }


async def post_event(
    api: client.ApiClient,
    obj: dict[str, Any],
    reason: str,
    message: str,
    *,
    warning: bool = False,
    instance: str = COMPONENT,
) -> None:
    """Post the Event (best effort: logged at debug level when the API refuses it, cannot be
    reached, or does not answer within :data:`POST_SECONDS`)."""
    body = event_body(obj, reason, message, warning=warning, instance=instance)
    try:
        async with asyncio.timeout(POST_SECONDS):
            await client.CoreV1Api(api).create_namespaced_event(body["metadata"]["namespace"], body)
    except (ApiException, aiohttp.ClientError, OSError, TimeoutError) as exc:
        log.debug("could not post event %s for %s: %s", reason, obj["metadata"]["name"], exc)
