"""Objects the models cannot read, on a real control plane: the CRD refuses a message with
neither parts nor control, and one stored before the CRD held that rule (and a turn record no
model reads) leave every read of their task working: GetTask, ``kubectl harness get`` and the
operator's turns skip them, and each says so in its log and its metrics."""

from __future__ import annotations

import json
import urllib.request
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess, free_port
from tests.eventually import NotYet, eventually
from tests.integration.gateway_support import Replicas, Users, said
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import (
    API_VERSION,
    KIND,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    TASK_LABEL,
    TURN_KIND,
    TURN_LABEL,
)

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]

MESSAGE_CRD = f"{MESSAGE_PLURAL}.{API_VERSION.split('/')[0]}"
CONTENT_RULE = {
    "message": "spec.parts: a message needs at least one part, a control or a decision",
    "rule": "has(self.control) || has(self.decision) || (has(self.parts) && size(self.parts) > 0)",
}
#: Where the message CRD holds the content rule (the first of the spec's rules).
RULE_PATH = "/spec/versions/0/schema/openAPIV3Schema/properties/spec/x-kubernetes-validations/0"


def object_of(kind: str, name: str, spec: dict[str, Any], owner: dict[str, Any] | None) -> str:
    metadata: dict[str, Any] = {"name": name}
    if owner is not None:
        task = owner["metadata"]["name"]
        metadata["labels"] = {TASK_LABEL: label_value(task)}
        metadata["ownerReferences"] = [
            {"apiVersion": API_VERSION, "kind": KIND, "name": task, "uid": owner["metadata"]["uid"]}
        ]
    return json.dumps({"apiVersion": API_VERSION, "kind": kind, "metadata": metadata, "spec": spec})


def empty_message(name: str, owner: dict[str, Any] | None = None) -> str:
    """A message with neither parts nor control: what the model refuses."""
    spec = {"task": "release", "messageId": name, "sender": "alice", "parts": []}
    return object_of(MESSAGE_KIND, name, spec, owner)


def created(kubectl: Kubectl, manifest: str) -> bool:
    return kubectl.run("create", "-f", "-", stdin=manifest, check=False).returncode == 0


def refused_with_the_rule(kubectl: Kubectl) -> str | NotYet:
    """What the API server says to a message with neither parts nor control (not stored)."""
    probe = empty_message("probe")
    tried = kubectl.run("create", "--dry-run=server", "-f", "-", stdin=probe, check=False)
    refused = tried.returncode != 0 and CONTENT_RULE["message"] in tried.stderr
    return tried.stderr if refused else NotYet(tried.stdout or tried.stderr)


def patch_message_crd(kubectl: Kubectl, ops: list[dict[str, Any]]) -> None:
    kubectl.run("patch", "crd", MESSAGE_CRD, "--type=json", "-p", json.dumps(ops))


@contextmanager
def before_the_content_rule(kubectl: Kubectl) -> Iterator[None]:
    """The message CRD as it was before it held the model's content rule, then as it is: what
    is created meanwhile is a message stored before the rule."""
    rule = {"path": RULE_PATH, "value": CONTENT_RULE}
    patch_message_crd(kubectl, [{"op": "test", **rule}, {"op": "remove", "path": RULE_PATH}])
    try:
        yield
    finally:
        patch_message_crd(kubectl, [{"op": "add", **rule}])
        eventually(lambda: refused_with_the_rule(kubectl), within=20, what="the CRD's rule")


def scrape(port: int) -> str:
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5) as resp:
        return str(resp.read().decode())


def counts(metrics: str, series: str) -> list[float]:
    """The series' value for a message and for a turn record (0 when it has none)."""
    values = dict(line.rsplit(" ", 1) for line in metrics.splitlines() if line.startswith(series))
    return [
        float(values.get(f'{series}{{kind="{kind}"}}', 0)) for kind in (MESSAGE_KIND, TURN_KIND)
    ]


def test_a_message_with_neither_parts_nor_control_is_refused_with_the_rules_message(
    kubectl: Kubectl,
) -> None:
    applied = kubectl.apply(empty_message("empty"))

    assert applied.returncode != 0
    assert CONTENT_RULE["message"] in applied.stderr
    assert kubectl.get_json(MESSAGE_PLURAL)["items"] == []


async def test_a_message_and_a_record_no_model_reads_leave_every_read_of_the_task_working(
    kubectl: Kubectl,
    namespace: str,
    tasks: Tasks,
    gateway: Replicas,
    users: Users,
    harness: Harness,
    operator: Operator,
    model_server: ModelServer,
) -> None:
    await model_server.control.script([{"type": "text", "text": "Hello, Alice."}])
    task = await tasks.create("release")
    with before_the_content_rule(kubectl):
        old = empty_message("release-old", task)
        eventually(lambda: created(kubectl, old), within=20, what="the CRD without its rule")
    record = {"task": "release", "turn": 0, "entries": [{"kind": "no-such-entry"}]}
    unknown = json.loads(object_of(TURN_KIND, "release-old-journal", record, task))
    unknown["metadata"]["labels"][TURN_LABEL] = "0"
    kubectl.run("create", "-f", "-", stdin=json.dumps(unknown))
    operator_port = free_port()
    process = operator(metrics_bind=f"127.0.0.1:{operator_port}")
    replica = gateway()
    alice = await users(replica.url, "alice")

    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED")
    await tasks.send("release", "Hello.")
    await tasks.wait("release", "TASK_STATE_INPUT_REQUIRED", turn=1)
    got = await alice.get("release")
    shown = await harness.run("get", "release", "--history", "5")

    assert said(got) == [("user", "Hello."), ("agent", "Hello, Alice.")]
    assert shown.returncode == 0, shown.stderr
    assert "Hello, Alice." in shown.stdout
    message, journal = f"{namespace}/release-old", f"{namespace}/release-old-journal"
    for log in (replica.log(), shown.stderr):
        assert f"HarnessMessage {message} cannot be read, skipped" in log
        assert f"HarnessTurn {journal} cannot be read, skipped" in log
    gateway_counts = counts(replica.metrics(), "tiny_harness_gateway_unreadable_objects_total")
    assert all(n >= 1 for n in gateway_counts), gateway_counts
    assert f"HarnessMessage {message} cannot be read, skipped" in process.log()
    assert f"HarnessTurn {journal} cannot be read, skipped" in process.log()
    operator_counts = counts(scrape(operator_port), "tiny_harness_unreadable_objects_total")
    assert all(n >= 1 for n in operator_counts), operator_counts
