"""Helpers for the gateway tests: gateway processes with the chart's RBAC, and A2A clients that
act as a participant over JSON-RPC or HTTP+JSON, exactly as any a2a-sdk client would."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
import urllib.request
import uuid
from collections.abc import AsyncIterator, Iterable
from pathlib import Path
from typing import Any

import httpx
import yaml
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.types import (
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
)

from tests.conftest import Kubectl, free_port
from tests.eventually import eventually
from tiny_harness.core.control_envelope import control_part
from tiny_harness.core.extensions import STATUS_EXT_KEY, TASK_EXT_KEY
from tiny_harness.kube.client import HarnessTasks
from tiny_harness.kube.crd import REPO_ROOT

JSONRPC = "JSONRPC"
REST = "HTTP+JSON"
TRANSPORTS = (JSONRPC, REST)
PROTOCOLS = ("1.0", "0.3")
GATEWAY_ACCOUNT = "tiny-harness-gateway"


# -- the gateway's identity: the chart's RBAC, nothing more ------------------------------------


def chart_gateway_rules() -> list[dict[str, Any]]:
    """The gateway's RBAC rules exactly as the Helm chart grants them."""
    helpers = (REPO_ROOT / "charts/tiny-harness/templates/_helpers.tpl").read_text()
    match = re.search(
        r'\{\{- define "tiny-harness\.gatewayRules" -\}\}\n(.*?)\{\{- end \}\}', helpers, re.S
    )
    assert match, "the chart defines no tiny-harness.gatewayRules"
    rules: list[dict[str, Any]] = yaml.safe_load(match.group(1))
    return rules


def kubectl(admin: Path, *args: str, stdin: str | None = None) -> str:
    proc = subprocess.run(
        ["kubectl", f"--kubeconfig={admin}", *args],
        input=stdin,
        capture_output=True,
        text=True,
        timeout=60,
    )
    if proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed: {proc.stderr}")
    return proc.stdout


def account_kubeconfig(admin: Path, namespace: str, account: str, out: Path) -> Path:
    """A kubeconfig that authenticates as a ServiceAccount (a bound token from TokenRequest)."""
    token = kubectl(admin, "-n", namespace, "create", "token", account, "--duration=2h").strip()
    config = yaml.safe_load(admin.read_text())
    config["users"] = [{"name": account, "user": {"token": token}}]
    for context in config["contexts"]:
        context["context"]["user"] = account
        context["context"]["namespace"] = namespace
    out.write_text(yaml.safe_dump(config))
    out.chmod(0o600)
    return out


def gateway_kubeconfig(admin: Path, namespace: str, directory: Path) -> Path:
    """A ServiceAccount for the gateway with the chart's rules in ``namespace`` (and TokenReview),
    and a kubeconfig for it: the gateway under test can do what the chart lets it, no more."""
    role = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "Role",
        "metadata": {"name": "gateway", "namespace": namespace},
        "rules": chart_gateway_rules(),
    }
    binding = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "RoleBinding",
        "metadata": {"name": "gateway", "namespace": namespace},
        "roleRef": {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "gateway"},
        "subjects": [{"kind": "ServiceAccount", "name": GATEWAY_ACCOUNT, "namespace": namespace}],
    }
    reviews = {
        "apiVersion": "rbac.authorization.k8s.io/v1",
        "kind": "ClusterRoleBinding",
        "metadata": {"name": f"gateway-tokenreview-{namespace}"},
        "roleRef": {
            "apiGroup": "rbac.authorization.k8s.io",
            "kind": "ClusterRole",
            "name": "system:auth-delegator",
        },
        "subjects": [{"kind": "ServiceAccount", "name": GATEWAY_ACCOUNT, "namespace": namespace}],
    }
    kubectl(admin, "-n", namespace, "create", "serviceaccount", GATEWAY_ACCOUNT)
    manifest = yaml.safe_dump_all([role, binding, reviews])
    kubectl(admin, "apply", "-f", "-", stdin=manifest)
    return account_kubeconfig(admin, namespace, GATEWAY_ACCOUNT, directory / "gateway.kubeconfig")


# -- gateway processes ---------------------------------------------------------------------------


class GatewayProcess:
    """One gateway replica: ``python -m tiny_harness.a2a_gateway`` on its own port. It starts
    at once; :meth:`ready` waits until it answers."""

    def __init__(
        self,
        kubeconfig: Path,
        namespace: str,
        directory: Path,
        env: dict[str, str] | None = None,
        **gateway: Any,
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        name = uuid.uuid4().hex[:6]
        settings = {"bind": f"127.0.0.1:{self.port}", "namespace": namespace, **gateway}
        self.config = directory / f"gateway-{name}.toml"
        self.config.write_text(
            "[gateway]\n" + "".join(f"{k} = {json.dumps(v)}\n" for k, v in settings.items())
        )
        self.log_path = directory / f"gateway-{name}.log"
        self._kubeconfig = kubeconfig
        self._env = env
        self._spawn()

    def _spawn(self) -> None:
        self._log = self.log_path.open("ab")
        self.proc = subprocess.Popen(
            [
                sys.executable,
                "-m",
                "tiny_harness.a2a_gateway",
                "--config",
                str(self.config),
                "--kubeconfig",
                str(self._kubeconfig),
            ],
            stdout=self._log,
            stderr=subprocess.STDOUT,
            env={
                **{k: v for k, v in os.environ.items() if k != "KUBECONFIG"},
                **(self._env or {}),
            },
        )

    def restart(self) -> GatewayProcess:
        """Stop (if running) and start again on the same port and settings; ready."""
        self.stop()
        self._spawn()
        return self.ready()

    def ready(self) -> GatewayProcess:
        eventually(self._healthy, within=30, what="the gateway's /healthz")
        return self

    def _healthy(self) -> bool:
        if self.proc.poll() is not None:
            raise AssertionError(f"the gateway exited: {self.log()[-2000:]}")
        try:
            with urllib.request.urlopen(f"{self.url}/healthz", timeout=1) as resp:
                return bool(resp.status == 200)
        except OSError:
            return False

    def metrics(self) -> str:
        with urllib.request.urlopen(f"{self.url}/metrics", timeout=5) as resp:
            return str(resp.read().decode())

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=15)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self._log.close()


# -- A2A clients -----------------------------------------------------------------------------


def text_message(
    text: str,
    *,
    task_id: str = "",
    context_id: str = "",
    envelope: dict[str, Any] | None = None,
) -> Message:
    message = Message(
        message_id=str(uuid.uuid4()),
        task_id=task_id,
        context_id=context_id,
        role=Role.ROLE_USER,
        parts=[Part(text=text)],
    )
    if envelope is not None:
        message.metadata.update({TASK_EXT_KEY: envelope})
    return message


def control_message(task_id: str, envelope: dict[str, Any] | None = None) -> Message:
    """A completion: one data part of the event media type; ``envelope`` replaces the
    well-formed ``{"kind": "control", "action": "complete"}``."""
    part = control_part("complete")
    if envelope is not None:
        part.data.struct_value.Clear()
        part.data.struct_value.update(envelope)
    return Message(message_id=str(uuid.uuid4()), task_id=task_id, role=Role.ROLE_USER, parts=[part])


class A2AUser:
    """A participant using an a2a-sdk client against a gateway, over one transport."""

    def __init__(self, client: Client, http: httpx.AsyncClient, name: str) -> None:
        self.client = client
        self.http = http
        self.name = name
        #: The ``A2A-Version`` header of every A2A call sent ("none" for a call without one).
        self.versions_sent: set[str] = set()

    @classmethod
    async def connect(
        cls,
        url: str,
        name: str | None,
        *,
        transport: str = JSONRPC,
        token: str | None = None,
        headers: dict[str, str] | None = None,
        streaming: bool = True,
        protocol: str = "1.0",
    ) -> A2AUser:
        """A client of the gateway at ``url`` acting as ``name``. ``protocol="0.3"`` gives the
        SDK's own 0.3 client (its compatibility transports), chosen from the card's 0.3
        interfaces exactly as a client that only knew 0.3 would choose them."""
        sent = dict(headers or {})
        if name is not None:
            sent["X-Participant-Id"] = name
        if token is not None:
            sent["Authorization"] = f"Bearer {token}"
        versions: set[str] = set()

        async def note_version(request: httpx.Request) -> None:
            if "/.well-known/" not in request.url.path:  # the card is fetched before a version
                versions.add(request.headers.get("A2A-Version", "none"))

        http = httpx.AsyncClient(
            headers=sent,
            timeout=httpx.Timeout(60.0),
            event_hooks={"request": [note_version]},
        )
        factory = ClientFactory(
            ClientConfig(
                streaming=streaming, httpx_client=http, supported_protocol_bindings=[transport]
            )
        )
        if protocol == "1.0":
            client = await factory.create_from_url(url)
        else:
            card = await A2ACardResolver(http, url).get_agent_card()
            offered = [i for i in card.supported_interfaces if i.protocol_version == protocol]
            assert offered, f"the card offers no {protocol} interface"
            del card.supported_interfaces[:]
            card.supported_interfaces.extend(offered)
            client = factory.create(card)
        user = cls(client, http, name or "")
        user.versions_sent = versions
        return user

    async def close(self) -> None:
        await self.client.close()
        await self.http.aclose()

    async def stream(self, message: Message) -> list[StreamResponse]:
        """SendStreamingMessage, collected until the gateway ends the stream."""
        return [e async for e in self.client.send_message(SendMessageRequest(message=message))]

    def events(self, message: Message) -> AsyncIterator[StreamResponse]:
        return self.client.send_message(SendMessageRequest(message=message))

    async def send(self, text: str, **kwargs: Any) -> list[StreamResponse]:
        return await self.stream(text_message(text, **kwargs))

    async def complete(self, task_id: str) -> list[StreamResponse]:
        return await self.stream(control_message(task_id))

    async def get(self, task_id: str, history_length: int | None = None) -> Task:
        request = GetTaskRequest(id=task_id)
        if history_length is not None:
            request.history_length = history_length
        return await self.client.get_task(request)

    async def list(self, **kwargs: Any) -> ListTasksResponse:
        return await self.client.list_tasks(ListTasksRequest(**kwargs))

    async def cancel(self, task_id: str) -> Task:
        return await self.client.cancel_task(CancelTaskRequest(id=task_id))

    def subscribe(self, task_id: str) -> AsyncIterator[StreamResponse]:
        return self.client.subscribe(SubscribeToTaskRequest(id=task_id))


def task_id_of(events: Iterable[StreamResponse]) -> str:
    for event in events:
        if event.HasField("task"):
            return str(event.task.id)
        if event.HasField("status_update"):
            return str(event.status_update.task_id)
    raise AssertionError("no event names a task")


def states(events: Iterable[StreamResponse]) -> list[str]:
    """The task states the stream showed, in order (the first Task, then each update)."""
    out: list[str] = []
    for event in events:
        if event.HasField("task"):
            out.append(_state_name(event.task.status.state))
        elif event.HasField("status_update"):
            out.append(_state_name(event.status_update.status.state))
    return out


def _state_name(value: int) -> str:
    from a2a.types import TaskState

    return str(TaskState.Name(value))


def sub_state(event: StreamResponse) -> str | None:
    metadata = event.status_update.metadata if event.HasField("status_update") else None
    if metadata is None or STATUS_EXT_KEY not in metadata:
        return None
    return str(metadata[STATUS_EXT_KEY]["sub_state"])


def said(task: Task) -> list[tuple[str, str]]:
    """The history as (role, text) pairs: what the participants and the agent said."""
    return [
        ("user" if m.role == Role.ROLE_USER else "agent", "".join(p.text for p in m.parts))
        for m in task.history
    ]


class Replicas:
    """Gateway replicas started on demand as the chart's ServiceAccount; all stop at the end.

    One replica with default settings is started at once, so that it boots while the test
    starts its operator; the first ``replicas()`` without settings returns it.
    """

    def __init__(self, admin: Path, namespace: str, directory: Path) -> None:
        self.kubeconfig = gateway_kubeconfig(admin, namespace, directory)
        self.namespace = namespace
        self.directory = directory
        self.spare: GatewayProcess | None = self._spawn()
        self.started: list[GatewayProcess] = [self.spare]

    def _spawn(self, env: dict[str, str] | None = None, **settings: Any) -> GatewayProcess:
        return GatewayProcess(self.kubeconfig, self.namespace, self.directory, env, **settings)

    def __call__(self, env: dict[str, str] | None = None, **settings: Any) -> GatewayProcess:
        """A ready replica; ``env`` is added to its environment, ``settings`` are [gateway]."""
        if not settings and not env and self.spare is not None:
            replica, self.spare = self.spare, None
            return replica.ready()
        replica = self._spawn(env, **settings)
        self.started.append(replica)
        return replica.ready()

    def stop(self) -> None:
        for replica in self.started:
            replica.stop()


class Users:
    """A2A clients opened on demand; all are closed at the end."""

    def __init__(self) -> None:
        self.opened: list[A2AUser] = []

    async def __call__(self, url: str, name: str | None, **kwargs: Any) -> A2AUser:
        user = await A2AUser.connect(url, name, **kwargs)
        self.opened.append(user)
        return user

    async def close(self) -> None:
        for user in self.opened:
            await user.close()


def cluster_objects(kubectl: Kubectl) -> dict[str, dict[str, str]]:
    """Every task, message and turn record in the namespace, by kind, name -> resourceVersion:
    equal before and after a refused request means the request changed nothing."""
    return {
        kind: {
            o["metadata"]["name"]: o["metadata"]["resourceVersion"]
            for o in kubectl.get_json(kind)["items"]
        }
        for kind in ("harnesstasks", "harnessmessages", "harnessturns")
    }


def parse_metrics(text: str) -> dict[tuple[str, str, str], float]:
    """Prometheus text as (metric, method, outcome) -> value."""
    out: dict[tuple[str, str, str], float] = {}
    for line in text.splitlines():
        if line.startswith("#") or not line.strip():
            continue
        series, _, value = line.rpartition(" ")
        name, _, labels = series.partition("{")
        pairs = dict(re.findall(r'(\w+)="([^"]*)"', labels))
        out[(name, pairs.get("method", ""), pairs.get("outcome", ""))] = float(value)
    return out


async def agent_says(tasks: HarnessTasks, name: str, text: str) -> None:
    """What the operator writes when the agent says ``text`` and waits for the next message:
    the tests that drive a task's changes themselves write them so."""
    await tasks.patch_status(
        name,
        {
            "state": "TASK_STATE_INPUT_REQUIRED",
            "subState": "awaiting-next-message",
            "message": text,
            "messageId": f"{name}/{text}",
        },
    )


async def alices_task(api: Any, namespace: str, name: str) -> HarnessTasks:
    """A conversation of alice's whose agent has said "one" and waits for her."""
    tasks = HarnessTasks(api, namespace)
    await tasks.create(
        name, {"goal": "Talk.", "participants": [{"id": "alice", "role": "assignee"}]}
    )
    await agent_says(tasks, name, "one")
    return tasks
