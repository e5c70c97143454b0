"""The kopf handlers, registered on a registry of our own rather than kopf's global one.

Each handler first gives the cache the object it was called with (:meth:`Cache.saw
<tiny_harness.operator.cache.Cache.saw>`): the shard's feed was primed with every task, message
and turn record before its kopf instance started (:mod:`.priming`), and the events keep it
current. Then the handlers do nothing but poke: a task's change pokes the task and its parent
(whose sub-task row follows it), an ended task's change pokes its children (which end with it),
a message pokes the task its ``spec.task`` names (measured first when its writer was a
participant, :mod:`.measurer`), and a turn record written by someone else pokes its task. Raw
events (``on.event``) need no bookkeeping writes from kopf, which keeps a simple turn within its
write budget.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import kopf

from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.task import local_parent_of
from tiny_harness.kube.names import GROUP, MESSAGE_PLURAL, PLURAL, TURN_PLURAL, VERSION
from tiny_harness.kube.ownership import is_stray_of
from tiny_harness.operator.feed import MESSAGES, TASKS, TURNS, Feed, plain
from tiny_harness.operator.login import login
from tiny_harness.operator.measurer import measure, measurement
from tiny_harness.operator.runtime import Runtime


def ended(body: Mapping[str, Any]) -> bool:
    state = (body.get("status") or {}).get("state")
    return isinstance(state, str) and TaskState(state).is_terminal


def waits_for_budget(body: Mapping[str, Any]) -> bool:
    return (body.get("status") or {}).get("subState") == SubState.AWAITING_BUDGET.value


def build_registry(runtime: Runtime, feed: Feed) -> kopf.OperatorRegistry:
    """One kopf instance's registry: its handlers feed ``feed`` (primed before the instance
    starts: see :mod:`tiny_harness.operator.kopf_shards`), then poke."""
    registry = kopf.OperatorRegistry()
    cache = runtime.cache

    def saw(kind: str, event: kopf.RawEvent, body: kopf.Body) -> None:
        kind_of_event = event.get("type")
        if kind_of_event is None:  # one of kopf's listing (operator/kopf_shards.py)
            feed.told_listed(kind)
        cache.saw(feed, kind, plain(body), deleted=kind_of_event == "DELETED")

    # Our own registry has none of kopf's default login handlers (see .login).
    kopf.on.login(registry=registry, id="login")(login)

    @kopf.on.event(GROUP, VERSION, PLURAL, registry=registry, id="task")
    async def on_task(
        event: kopf.RawEvent, body: kopf.Body, namespace: str | None, name: str, **_: Any
    ) -> None:
        saw(TASKS, event, body)
        if namespace is None:
            return
        parent = local_parent_of(body.spec)
        if event.get("type") == "DELETED":
            runtime.metrics.task_state(namespace, name, None)
            runtime.forget(namespace, name)
        elif not runtime.owns(namespace, name):
            runtime.observe_lease(namespace, name, (body.get("status") or {}).get("runner"))
        else:
            rv = str(body.metadata.get("resourceVersion", ""))
            runtime.poke_unless_own("task", namespace, name, name, rv)
            if ended(body):
                # An ended parent's children end with it (decide row 4a), theirs with them.
                for child in cache.child_stubs(namespace, name):
                    runtime.poke(namespace, str(child["metadata"]["name"]))
            for below in cache.descendant_stubs(namespace, name):
                # A task waiting for budget at any depth below may have room now: every
                # ancestor's budget bounds it (budgets.py), not only its parent's.
                if waits_for_budget(below):
                    runtime.poke(namespace, str(below["metadata"]["name"]))
        if parent:
            above = cache.stub(namespace, parent)
            if above is not None and is_stray_of(body, above):
                # Not the parent's child (kube/ownership.py): the parent takes no turn for it.
                await runtime.report_stray(dict(body), above)
            else:
                runtime.poke(namespace, parent)

    @kopf.on.event(GROUP, VERSION, MESSAGE_PLURAL, registry=registry, id="message")
    async def on_message(
        event: kopf.RawEvent, body: kopf.Body, namespace: str | None, name: str, **_: Any
    ) -> None:
        saw(MESSAGES, event, body)
        if namespace is None or event.get("type") == "DELETED":
            return
        patch = measurement(body)
        if patch is not None:
            # Written as its participant: the quotas count its bytes only once we measure them.
            await measure(runtime.api, namespace, name, patch)
        task = (body.get("spec") or {}).get("task")
        if task:
            runtime.poke(namespace, str(task))

    @kopf.on.event(GROUP, VERSION, TURN_PLURAL, registry=registry, id="turn")
    async def on_turn(
        event: kopf.RawEvent, body: kopf.Body, namespace: str | None, name: str, **_: Any
    ) -> None:
        saw(TURNS, event, body)
        task = (body.get("spec") or {}).get("task")
        if namespace is not None and task and event.get("type") != "DELETED":
            rv = str(body.metadata.get("resourceVersion", ""))
            runtime.poke_unless_own("turn", namespace, name, str(task), rv)

    return registry
