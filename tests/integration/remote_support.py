"""Remote agents for the tests: a second tiny-harness (its own namespace, operator and
gateway, on the same control plane), a foreign agent built with the a2a-sdk's own server, and
``HarnessAgent`` objects that point at them."""

from __future__ import annotations

import asyncio
import contextlib
import json
import subprocess
import uuid
from collections.abc import AsyncIterator, Callable
from pathlib import Path
from typing import Any

import uvicorn
from a2a.server.agent_execution import AgentExecutor, RequestContext
from a2a.server.events.event_queue_v2 import EventQueue
from a2a.server.request_handlers import DefaultRequestHandler
from a2a.server.routes import create_agent_card_routes, create_jsonrpc_routes
from a2a.server.tasks import InMemoryTaskStore, TaskUpdater
from a2a.types import (
    AgentCapabilities,
    AgentCard,
    AgentInterface,
    AgentSkill,
    Part,
    Task,
    TaskState,
    TaskStatus,
)
from a2a.utils.constants import TransportProtocol
from starlette.applications import Starlette
from starlette.middleware import Middleware
from starlette.responses import PlainTextResponse
from starlette.types import ASGIApp, Receive, Scope, Send

from tests.conftest import OperatorProcess, free_port, operator_config
from tests.integration.gateway_support import GatewayProcess, Replicas, kubectl

#: How the harness under test signs in at the remote tiny-harness (header identity mode).
CALLER = "harness-a"


class RemoteHarness:
    """Another tiny-harness in namespace ``namespace``: its operator and gateway."""

    def __init__(
        self, admin: Path, directory: Path, model_url: str, *, lease_seconds: float = 6
    ) -> None:
        self.admin = admin
        self.namespace = f"r-{uuid.uuid4().hex[:10]}"
        kubectl(admin, "create", "namespace", self.namespace)
        directory.mkdir(parents=True, exist_ok=True)
        config = operator_config(
            directory / "remote-operator.toml", model_url, lease_seconds=lease_seconds
        )
        self.operator = OperatorProcess(
            admin, self.namespace, directory, config, identity="remote-operator"
        ).start()
        self.replicas = Replicas(admin, self.namespace, directory)
        self.gateway: GatewayProcess = self.replicas()

    @property
    def card_url(self) -> str:
        return f"{self.gateway.url}/.well-known/agent-card.json"

    def objects(self, plural: str) -> list[dict[str, Any]]:
        out = kubectl(self.admin, "-n", self.namespace, "get", plural, "-o", "json")
        return list(json.loads(out)["items"])

    def tasks(self) -> list[dict[str, Any]]:
        return self.objects("harnesstasks")

    def messages(self) -> list[dict[str, Any]]:
        return self.objects("harnessmessages")

    def stop(self) -> None:
        self.replicas.stop()
        self.operator.stop()
        subprocess.run(
            [
                "kubectl",
                f"--kubeconfig={self.admin}",
                "delete",
                "namespace",
                self.namespace,
                "--wait=false",
            ],
            capture_output=True,
            check=False,
        )


def agent_manifest(
    name: str, card_url: str, *, headers: list[dict[str, Any]] | None = None, **spec: Any
) -> str:
    """A HarnessAgent named ``name`` at ``card_url``, signing in as :data:`CALLER` unless
    ``headers`` say otherwise."""
    body = {
        "apiVersion": "tiny-harness.madarauchiha-314.github.io/v1alpha1",
        "kind": "HarnessAgent",
        "metadata": {"name": name},
        "spec": {
            "cardUrl": card_url,
            "headers": headers
            if headers is not None
            else [{"name": "X-Participant-Id", "value": CALLER}],
            **spec,
        },
    }
    return json.dumps(body)


def ready_condition(agent: dict[str, Any]) -> dict[str, Any]:
    conditions = (agent.get("status") or {}).get("conditions") or []
    return next((c for c in conditions if c.get("type") == "Ready"), {})


async def wait_ready(
    get: Callable[[], dict[str, Any]], *, status: str = "True", within: float = 30.0
) -> dict[str, Any]:
    """The agent once its Ready condition is ``status``. Asynchronous, so an agent served in
    the test's own event loop (:class:`ForeignAgent`) answers meanwhile."""
    deadline = asyncio.get_running_loop().time() + within
    last: dict[str, Any] = {}
    while asyncio.get_running_loop().time() < deadline:
        last = await asyncio.to_thread(get)
        if ready_condition(last).get("status") == status:
            return last
        await asyncio.sleep(0.1)
    raise AssertionError(f"the agent's Ready condition did not become {status}: {last}")


# -- a foreign agent: the a2a-sdk's own server ---------------------------------------------------


class Echo(AgentExecutor):
    """Answers each message with an artifact ("echo: <text>") and completes the task; a
    message that says "wait" is held until cancelled (a task that never answers)."""

    def __init__(self) -> None:
        self.received: list[str] = []
        self.cancelled: list[str] = []

    async def execute(self, context: RequestContext, event_queue: EventQueue) -> None:
        text = context.get_user_input()
        self.received.append(text)
        assert context.task_id is not None
        assert context.context_id is not None
        if context.current_task is None:
            await event_queue.enqueue_event(
                Task(
                    id=context.task_id,
                    context_id=context.context_id,
                    status=TaskStatus(state=TaskState.TASK_STATE_SUBMITTED),
                    history=[context.message] if context.message else [],
                )
            )
        updater = TaskUpdater(event_queue, context.task_id, context.context_id)
        await updater.start_work()
        if "wait" in text:
            await asyncio.Event().wait()
        await updater.add_artifact([Part(text=f"echo: {text}")], name="answer")
        await updater.complete()

    async def cancel(self, context: RequestContext, event_queue: EventQueue) -> None:
        assert context.task_id is not None
        self.cancelled.append(context.task_id)
        updater = TaskUpdater(event_queue, context.task_id, context.context_id or "")
        await updater.update_status(TaskState.TASK_STATE_CANCELED)


class BearerOnly:
    """Refuses every A2A call (the card stays public) without ``Authorization: Bearer
    <token>``, with 401, as an agent that checks its callers does."""

    def __init__(self, app: ASGIApp, token: str) -> None:
        self.app = app
        self.expected = f"Bearer {token}".encode()

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and not scope["path"].startswith("/.well-known/"):
            headers = dict(scope.get("headers") or [])
            if headers.get(b"authorization") != self.expected:
                await PlainTextResponse("unauthorized", status_code=401)(scope, receive, send)
                return
        await self.app(scope, receive, send)


class ForeignAgent:
    """An A2A agent that is not a tiny-harness, served on 127.0.0.1 in the test's process."""

    def __init__(self, *, streaming: bool = True, token: str | None = None) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.executor = Echo()
        self.card = AgentCard(
            name="echo",
            description="Repeats what it is told.",
            version="1.0",
            capabilities=AgentCapabilities(streaming=streaming),
            supported_interfaces=[
                AgentInterface(
                    url=f"{self.url}/",
                    protocol_binding=TransportProtocol.JSONRPC,
                    protocol_version="1.0",
                )
            ],
            skills=[AgentSkill(id="echo", name="Echo", description="Says it back.", tags=["echo"])],
            default_input_modes=["text/plain"],
            default_output_modes=["text/plain"],
        )
        handler = DefaultRequestHandler(self.executor, InMemoryTaskStore(), self.card)
        app = Starlette(
            routes=[*create_agent_card_routes(self.card), *create_jsonrpc_routes(handler, "/")],
            middleware=[Middleware(BearerOnly, token=token)] if token else [],
        )
        self.server = uvicorn.Server(
            uvicorn.Config(app, host="127.0.0.1", port=self.port, log_level="warning")
        )

    @property
    def card_url(self) -> str:
        return f"{self.url}/.well-known/agent-card.json"

    @contextlib.asynccontextmanager
    async def running(self) -> AsyncIterator[ForeignAgent]:
        serving = asyncio.create_task(self.server.serve())
        try:
            for _ in range(500):  # uvicorn says it has started by a flag, not an event
                if self.server.started:
                    break
                await asyncio.sleep(0.02)
            else:
                raise AssertionError("the foreign agent did not start within 10s")
            yield self
        finally:
            self.server.should_exit = True
            await serving
