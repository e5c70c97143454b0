"""The kopf handlers, registered on a registry of our own rather than kopf's global one.

A registry per operator keeps tests and embedding honest: importing this module has no side
effect, and an operator runs exactly the handlers it was given.
"""

from __future__ import annotations

import logging
from typing import Any

import kopf

from tiny_harness.kube.names import GROUP, PLURAL, VERSION
from tiny_harness.operator.initialise import initialise

log = logging.getLogger(__name__)


def _has_no_state(status: kopf.Status, **_: Any) -> bool:
    return not status.get("state")


def build_registry() -> kopf.OperatorRegistry:
    registry = kopf.OperatorRegistry()

    # Our own registry has none of kopf's default login handlers: in a pod use the
    # ServiceAccount, elsewhere the kubeconfig ($KUBECONFIG or ~/.kube/config).
    @kopf.on.login(registry=registry, id="login")
    def login(**kwargs: Any) -> kopf.ConnectionInfo | None:
        return kopf.login_with_service_account(**kwargs) or kopf.login_with_kubeconfig(**kwargs)

    # Level-triggered: whatever kopf's own bookkeeping says, a task whose status already has a
    # state has been initialised, so a restarted operator (or a second look) leaves it alone.
    @kopf.on.create(GROUP, VERSION, PLURAL, registry=registry, when=_has_no_state, id="initialise")
    async def on_create(
        spec: kopf.Spec,
        meta: kopf.Meta,
        body: kopf.Body,
        patch: kopf.Patch,
        logger: kopf.Logger,
        **_: Any,
    ) -> None:
        result = initialise(spec, meta.get("generation"))
        patch.status.update(result.status)
        if result.accepted:
            kopf.info(body, reason=result.reason, message=result.message)
        else:
            kopf.warn(body, reason=result.reason, message=result.message)
        logger.info("task %s: %s", meta.get("name"), result.message)

    return registry
