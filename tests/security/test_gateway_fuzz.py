"""The gateway under arbitrary input, over both transports: never a 5xx, never a call that hangs
(every call answers, or streams to its end, within a bound), and a refused call changes nothing
in the cluster (every object's resourceVersion is the same before and after).

A real operator answers (the scripted model server's default reply once its script is empty),
so a body that happens to be a valid message gets a turn and its call ends like any other.
``make test`` runs a bounded number of examples; set ``TINY_HARNESS_FUZZ_EXAMPLES`` for a longer
run (``TINY_HARNESS_FUZZ_EXAMPLES=2000 pytest tests/security/test_gateway_fuzz.py``).
"""

from __future__ import annotations

import json
import os
import time
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.integration.gateway_support import GatewayProcess, Replicas, cluster_objects

pytestmark = pytest.mark.controlplane

EXAMPLES = int(os.environ.get("TINY_HARNESS_FUZZ_EXAMPLES", "40"))
#: The longest any call may take: a turn on the scripted model is well under a second.
BOUND_SECONDS = 20.0
BODY_LIMIT = 4096

METHODS = [
    "SendMessage",
    "SendStreamingMessage",
    "GetTask",
    "ListTasks",
    "CancelTask",
    "SubscribeToTask",
    "GetExtendedAgentCard",
    "CreateTaskPushNotificationConfig",
    "message/send",
    "message/stream",
    "tasks/get",
    "tasks/cancel",
    "tasks/resubscribe",
]
REST_ROUTES = [
    ("POST", "/rest/message:send"),
    ("POST", "/rest/message:stream"),
    ("GET", "/rest/tasks"),
    ("GET", "/rest/tasks/{id}"),
    ("POST", "/rest/tasks/{id}:cancel"),
    ("GET", "/rest/tasks/{id}:subscribe"),
    ("POST", "/rest/v1/message:send"),
    ("GET", "/rest/v1/tasks/{id}"),
]

json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**40), 2**40)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(max_size=40),
    lambda inner: (
        st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=12), inner, max_size=4)
    ),
    max_leaves=12,
)
texts = st.text(max_size=60) | st.sampled_from(["/status", "/model gpt-5", "x" * 5000, ""])
parts = st.lists(
    st.fixed_dictionaries({"text": texts})
    | st.fixed_dictionaries({"kind": st.just("text"), "text": texts})
    | st.fixed_dictionaries({"data": json_values})
    | st.fixed_dictionaries({"url": st.text(max_size=20)})
    | st.dictionaries(st.text(max_size=8), json_values, max_size=3),
    max_size=3,
)
messages = st.fixed_dictionaries(
    {},
    optional={
        "messageId": st.text(max_size=20) | st.just(str(uuid.uuid4())),
        "role": st.sampled_from(["ROLE_USER", "ROLE_AGENT", "user", "agent", "", "x"]),
        "parts": parts,
        "taskId": st.text(max_size=20),
        "contextId": st.text(max_size=20),
        "metadata": st.dictionaries(st.text(max_size=40), json_values, max_size=2),
        "kind": st.just("message"),
    },
)
params = (
    st.fixed_dictionaries(
        {},
        optional={
            "message": messages,
            "configuration": st.dictionaries(
                st.sampled_from(["returnImmediately", "historyLength", "blocking"]),
                json_values,
                max_size=2,
            ),
            "id": st.text(max_size=20),
            "status": json_values,
            "pageSize": json_values,
            "pageToken": json_values,
            "historyLength": json_values,
        },
    )
    | json_values
)
rpc_bodies = st.fixed_dictionaries(
    {"jsonrpc": st.just("2.0") | json_values, "method": st.sampled_from(METHODS) | st.text()},
    optional={"id": st.integers() | st.text(max_size=8) | st.none(), "params": params},
)
headers = st.fixed_dictionaries(
    {},
    optional={
        "A2A-Version": st.sampled_from(["1.0", "0.3", "", "2.0", "x"]),
        "X-Participant-Id": st.sampled_from(["alice", "bob", "", "a" * 300, "mallory"]),
        "Content-Type": st.sampled_from(["application/json", "text/plain", ""]),
    },
)


@pytest.fixture
def gateway(
    kubeconfig: Path,
    namespace: str,
    tmp_path: Path,
    operator: Callable[..., OperatorProcess],
    model_server: ModelServer,
) -> Iterator[GatewayProcess]:
    operator()
    replicas = Replicas(kubeconfig, namespace, tmp_path)
    yield replicas(max_request_bytes=BODY_LIMIT, rate_limit_per_minute=1_000_000)
    replicas.stop()


def call(
    http: httpx.Client, method: str, url: str, body: bytes, sent: dict[str, str]
) -> tuple[int, bytes]:
    """The status and the whole body (a stream read to its end); a call past the bound fails
    the property as hung."""
    started = time.monotonic()
    with http.stream(method, url, content=body if method == "POST" else None, headers=sent) as r:
        received = b"".join(r.iter_bytes())
    elapsed = time.monotonic() - started
    assert elapsed < BOUND_SECONDS, f"{method} {url} took {elapsed:.1f}s"
    return r.status_code, received


def refused(status: int, received: bytes) -> bool:
    if status >= 400:
        return True
    try:
        answer = json.loads(received)
    except ValueError:
        return False
    return isinstance(answer, dict) and "error" in answer


def check(kubectl: Kubectl, http: httpx.Client, method: str, url: str, body: bytes,
          sent: dict[str, str]) -> None:  # fmt: skip
    before = cluster_objects(kubectl)
    status, received = call(http, method, url, body, sent)
    assert status < 500, (status, received[:300])
    if refused(status, received):
        assert cluster_objects(kubectl) == before, (status, received[:300])


def test_arbitrary_requests_over_both_transports_never_5xx_hang_or_change_what_they_refuse(
    gateway: GatewayProcess, kubectl: Kubectl
) -> None:
    with httpx.Client(timeout=BOUND_SECONDS + 5) as http:

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(
            rpc=rpc_bodies,
            raw=st.none() | st.binary(max_size=64),
            sent=headers,
        )
        def json_rpc(rpc: dict[str, Any], raw: bytes | None, sent: dict[str, str]) -> None:
            body = raw if raw is not None else json.dumps(rpc).encode()
            check(kubectl, http, "POST", f"{gateway.url}/", body, sent)

        @settings(
            max_examples=EXAMPLES,
            deadline=None,
            suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
        )
        @given(
            route=st.sampled_from(REST_ROUTES),
            # Printable: a client cannot put a control character in a URL at all.
            task_id=st.text(
                st.characters(min_codepoint=33, max_codepoint=126, exclude_characters="/?#%"),
                max_size=20,
            ),
            payload=params | st.fixed_dictionaries({"message": messages}),
            query=st.dictionaries(
                st.sampled_from(["status", "pageSize", "pageToken", "historyLength"]),
                st.text(max_size=20),
                max_size=2,
            ),
            sent=headers,
        )
        def rest(
            route: tuple[str, str],
            task_id: str,
            payload: Any,
            query: dict[str, str],
            sent: dict[str, str],
        ) -> None:
            method, path = route
            url = f"{gateway.url}{path.format(id=task_id or 'none')}"
            if query:
                url += "?" + str(httpx.QueryParams(query))
            check(kubectl, http, method, url, json.dumps(payload).encode(), sent)

        json_rpc()
        rest()
