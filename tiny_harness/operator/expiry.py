"""An ended task deleted once its time to live after the end has passed
(``ttlSecondsAfterFinished``, :mod:`tiny_harness.core.retention`), so etcd stays bounded.
"""

from __future__ import annotations

import logging

from tiny_harness.kube.client import Obj
from tiny_harness.operator.feed import rv_of
from tiny_harness.operator.ports import TaskIO

log = logging.getLogger(__name__)


async def collect(task: TaskIO, obj: Obj) -> None:
    """Delete the ended task whose time to live has passed, as it was read (a task changed
    or re-created meanwhile is a conflict, and the pass starts again). Its turn records,
    sub-tasks and owned messages follow through the garbage collector; messages written
    without an owner reference are deleted here, or nothing would."""
    meta = obj["metadata"]
    uid = str(meta["uid"])
    orphans = [m for m in task.rt.cache.messages(*task.key) if uid not in m.owners]
    status = obj.get("status") or {}
    log.info(
        "task %s/%s: deleting it, %s after it ended (%s)",
        *task.key,
        "its time to live",
        status.get("state"),
    )
    await task.rt.event(
        obj,
        "Expired",
        f"deleted: ended ({status.get('state')}) at {status.get('completionTime')}, and "
        "its time to live after the end has passed",
    )
    await task.tasks.delete(task.name, uid=uid, resource_version=rv_of(obj))
    for message in orphans:
        await task.messages.delete(message.name)
    task.rt.metrics.task_state(task.namespace, task.name, None)
