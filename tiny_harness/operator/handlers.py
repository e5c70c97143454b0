"""The kopf handlers, registered on a registry of our own rather than kopf's global one.

They do nothing but poke the runtime: a task's change pokes the task (and its parent, whose
sub-task row follows it), a new message pokes its task. Raw events (``on.event``) need no
bookkeeping writes from kopf, which keeps a simple turn within its write budget.
"""

from __future__ import annotations

from typing import Any

import kopf

from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, VERSION
from tiny_harness.operator.runtime import Runtime


def build_registry(runtime: Runtime) -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    # Our own registry has none of kopf's default login handlers: in a pod use the
    # ServiceAccount, elsewhere the kubeconfig ($KUBECONFIG or ~/.kube/config).
    @kopf.on.login(registry=registry, id="login")
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry, id="task")
    async def on_task(
        event: kopf.RawEvent, body: kopf.Body, namespace: str | None, name: str, **_: Any
    ) -> None:
        if namespace is None:
            return
        parent = (body.spec.get("parent") or {}).get("taskId")
        if event.get("type") == "DELETED":
            runtime.metrics.task_state(namespace, name, None)
            if parent:
                runtime.saw_child(namespace, parent, name, gone=True)
            return
        if parent:
            runtime.saw_child(namespace, parent, name)
        runtime.poke(namespace, name, body.metadata.get("resourceVersion"))
        if parent:
            runtime.poke(namespace, parent)

    @kopf.on.event(GROUP, VERSION, MESSAGE_PLURAL, registry=registry, id="message")
    async def on_message(
        event: kopf.RawEvent, body: kopf.Body, namespace: str | None, **_: Any
    ) -> None:
        if namespace is not None and event.get("type") in (None, "ADDED"):
            runtime.poke(namespace, body.spec["task"])

    return registry
