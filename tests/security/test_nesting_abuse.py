"""One deeply nested message must not stall a namespace (core/json_bounds.py).

Python's JSON decoder gives up past about a thousand levels, the API server takes ten
thousand, and every reader decodes a whole listing at once: one message nested a few thousand
levels deep would fail every read of its namespace, the operator's and the gateway's. Free-form
data is stored as JSON text within 64 levels. So, on the real control plane, with the real
operator, gateway and a2a-sdk client: a data part nested 5,000 levels is refused by the API
server (``kubectl create``) and by the gateway (a raw request: the SDK's own client cannot
build one, as protobuf stops at 100 levels), with nothing stored; one written as text too deep
for the bound is stored harmlessly, and every reader skips it, saying so, while an unrelated
participant's task still gets its turn and the sender's own GetTask still answers; and one
stored in the object form (under an older CRD) is skipped the same way by the gateway and
``kubectl harness``, whose listings are decoded with a bound.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually
from tests.integration.gateway_support import Replicas, Users, cluster_objects, said, states
from tests.integration.kubectl_support import Harness
from tests.integration.lifecycle_support import Tasks
from tiny_harness.a2a_gateway.limits import REQUEST_DEPTH
from tiny_harness.core.json_bounds import MAX_DEPTH
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import (
    API_VERSION,
    GROUP,
    KIND,
    MESSAGE_KIND,
    MESSAGE_PLURAL,
    TASK_LABEL,
    VERSION,
)

pytestmark = pytest.mark.controlplane

#: Deeper than Python's decoder goes, well within the API server's limit.
LEVELS = 5000
TOO_DEEP = f"the JSON is nested more than {MAX_DEPTH} levels deep"


def nested_text(levels: int) -> str:
    """An object ``levels`` deep as JSON text (json.dumps itself cannot write one)."""
    return '{"a":' * (levels - 1) + "{}" + "}" * (levels - 1)


def flagged(namespace: str) -> str:
    """What a reader logs of the message ``deep``, which it skips."""
    return (
        f"HarnessMessage {namespace}/deep cannot be read, skipped: "
        f"parts.0.data: Value error, {TOO_DEEP}"
    )


def message_manifest(name: str, task: dict[str, Any], data: str) -> str:
    """A message to ``task`` from its assignee, with one data part whose JSON is ``data``."""
    meta = task["metadata"]
    manifest = {
        "apiVersion": API_VERSION,
        "kind": MESSAGE_KIND,
        "metadata": {
            "name": name,
            "labels": {TASK_LABEL: label_value(meta["name"])},
            "ownerReferences": [
                {"apiVersion": API_VERSION, "kind": KIND, "name": meta["name"], "uid": meta["uid"]}
            ],
        },
        "spec": {
            "task": meta["name"],
            "messageId": name,
            "sender": "mallory",
            "parts": [{"data": "DATA"}],
        },
    }
    return json.dumps(manifest).replace('"DATA"', data)


def create_raw(kubectl: Kubectl, tmp_path: Path, manifest: str) -> Any:
    """POST the manifest as it is (``kubectl create --raw``): kubectl parses nothing."""
    path = tmp_path / f"{uuid.uuid4().hex}.json"
    path.write_text(manifest)
    uri = f"/apis/{GROUP}/{VERSION}/namespaces/{kubectl.namespace}/{MESSAGE_PLURAL}"
    return kubectl.run("create", "--raw", uri, "-f", str(path), check=False)


@pytest.fixture
async def two_tasks(tasks: Tasks) -> tuple[dict[str, Any], dict[str, Any]]:
    """Mallory's task and Carol's, in one namespace: nothing links them but the namespace."""
    mallorys = await tasks.create("mallorys", participants=[{"id": "mallory", "role": "assignee"}])
    carols = await tasks.create("carols", participants=[{"id": "carol", "role": "assignee"}])
    return mallorys, carols


async def test_a_data_part_nested_thousands_deep_is_refused_by_the_api_server_and_the_gateway(
    kubectl: Kubectl,
    tmp_path: Path,
    two_tasks: tuple[dict[str, Any], dict[str, Any]],
    gateway: Replicas,
    users: Users,
) -> None:
    mallorys, _ = two_tasks
    replica = gateway()
    mallory = await users(replica.url, "mallory")
    before = cluster_objects(kubectl)

    refused = create_raw(kubectl, tmp_path, message_manifest("deep", mallorys, nested_text(LEVELS)))
    raw = await mallory.http.post(
        replica.url,
        content='{"jsonrpc":"2.0","id":1,"method":"SendMessage","params":{"message":'
        '{"messageId":"deep","taskId":"mallorys","role":"ROLE_USER","parts":[{"data":'
        + nested_text(LEVELS)
        + "}]}}}",
        headers={"Content-Type": "application/json", "A2A-Version": "1.0"},
    )

    assert refused.returncode != 0
    assert "spec.parts[0].data" in refused.stderr
    assert "must be of type string" in refused.stderr
    assert raw.status_code == 400
    assert raw.json()["error"]["message"].startswith(
        f"the request body is nested more than {REQUEST_DEPTH} levels deep"
    )
    assert cluster_objects(kubectl) == before


async def test_a_message_too_deep_to_read_is_skipped_and_flagged_and_the_namespace_goes_on(
    kubectl: Kubectl,
    namespace: str,
    two_tasks: tuple[dict[str, Any], dict[str, Any]],
    gateway: Replicas,
    users: Users,
    harness: Harness,
    operator: Any,
    model_server: ModelServer,
) -> None:
    mallorys, _ = two_tasks
    await model_server.control.script([{"type": "text", "text": "Hello, Carol."}])
    as_text = json.dumps(nested_text(LEVELS))
    kubectl.run("create", "-f", "-", stdin=message_manifest("deep", mallorys, as_text))
    process: OperatorProcess = operator()
    replica = gateway()
    carol = await users(replica.url, "carol")
    mallory = await users(replica.url, "mallory")

    answered = await carol.send("Hello.", task_id="carols")
    own = await mallory.get("mallorys")
    shown = await harness.run("get", "mallorys", "--history", "5", participant="mallory")

    assert states(answered)[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert said(await carol.get("carols")) == [("user", "Hello."), ("agent", "Hello, Carol.")]
    assert said(own) == []
    assert shown.returncode == 0, shown.stderr
    for log in (process.log(), replica.log(), shown.stderr):
        assert flagged(namespace) in log


#: Where the message CRD holds a data part's schema.
DATA_PATH = (
    "/spec/versions/0/schema/openAPIV3Schema/properties/spec/properties/parts/items/properties/data"
)
MESSAGE_CRD = f"{MESSAGE_PLURAL}.{GROUP}"


def data_schema(kubectl: Kubectl) -> dict[str, Any]:
    crd = kubectl.get_json("crd", MESSAGE_CRD)
    schema: Any = crd
    for key in DATA_PATH.strip("/").split("/"):
        schema = schema[int(key)] if isinstance(schema, list) else schema[key]
    return dict(schema)


def takes_objects(kubectl: Kubectl, tmp_path: Path, task: dict[str, Any]) -> bool:
    probe = message_manifest("probe", task, "{}")
    path = tmp_path / "probe.json"
    path.write_text(probe)
    tried = kubectl.run("create", "--dry-run=server", "-f", str(path), check=False)
    return tried.returncode == 0


@contextmanager
def as_data_was_stored_before(
    kubectl: Kubectl, tmp_path: Path, task: dict[str, Any]
) -> Iterator[None]:
    """The message CRD as it was before free-form data was kept as text (an object of any
    nesting), then as it is: a message created meanwhile is one stored in the object form."""
    now = data_schema(kubectl)
    before = {"type": "object", "x-kubernetes-preserve-unknown-fields": True, "nullable": True}
    ops = [{"op": "replace", "path": DATA_PATH, "value": before}]
    kubectl.run("patch", "crd", MESSAGE_CRD, "--type=json", "-p", json.dumps(ops))
    try:
        eventually(lambda: takes_objects(kubectl, tmp_path, task), within=20, what="the old CRD")
        yield
    finally:
        ops = [{"op": "replace", "path": DATA_PATH, "value": now}]
        kubectl.run("patch", "crd", MESSAGE_CRD, "--type=json", "-p", json.dumps(ops))
        eventually(
            lambda: not takes_objects(kubectl, tmp_path, task), within=20, what="the CRD again"
        )


async def test_a_message_stored_as_an_object_too_deep_to_decode_is_skipped_by_every_reader(
    kubectl: Kubectl,
    namespace: str,
    tmp_path: Path,
    two_tasks: tuple[dict[str, Any], dict[str, Any]],
    gateway: Replicas,
    users: Users,
    harness: Harness,
    operator: Any,
    model_server: ModelServer,
) -> None:
    mallorys, _ = two_tasks
    await model_server.control.script([{"type": "text", "text": "Hello, Carol."}])
    with as_data_was_stored_before(kubectl, tmp_path, mallorys):
        stored = create_raw(
            kubectl, tmp_path, message_manifest("deep", mallorys, nested_text(LEVELS))
        )
        assert stored.returncode == 0, stored.stderr
    process: OperatorProcess = operator()
    replica = gateway()
    carol = await users(replica.url, "carol")
    mallory = await users(replica.url, "mallory")

    answered = await carol.send("Hello.", task_id="carols")
    own = await mallory.get("mallorys")
    shown = await harness.run("get", "mallorys", "--history", "5", participant="mallory")

    assert states(answered)[-1] == "TASK_STATE_INPUT_REQUIRED"
    assert said(await carol.get("carols")) == [("user", "Hello."), ("agent", "Hello, Carol.")]
    assert said(own) == []
    assert shown.returncode == 0, shown.stderr
    for log in (process.log(), replica.log(), shown.stderr):
        assert flagged(namespace) in log
