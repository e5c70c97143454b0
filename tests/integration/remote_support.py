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
    AgentExtension,
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
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from tests.conftest import Kubectl, OperatorProcess, free_port, operator_config
from tests.eventually import NotYet, eventually_async
from tests.integration.gateway_support import GatewayProcess, Replicas, kubectl
from tests.integration.lifecycle_support import Tasks
from tiny_harness.operator.host import child_name

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

    async def ready() -> dict[str, Any] | NotYet:
        agent = await asyncio.to_thread(get)
        condition = ready_condition(agent)
        return agent if condition.get("status") == status else NotYet(condition)

    return await eventually_async(
        ready, within=within, what=f"the agent's Ready condition to be {status}", interval=0.1
    )


# -- a delegation, as the tests script it -------------------------------------------------------


#: The delegating parent of most tests, its sub-task's goal, and what the remote model is
#: asked (its system prompt names the goal; the parent's never says "Goal: " before it).
PARENT = "research"
GOAL = "Summarise the market"
ON_REMOTE = f"Goal: {GOAL}"
#: The sub-task the parent's first turn spawns (its name follows from the spawning call's id).
CHILD = child_name(PARENT, f"{PARENT}/turn-1/tool-0-call-spawn")


async def declare(kubectl: Kubectl, name: str, card_url: str, **spec: Any) -> dict[str, Any]:
    applied = await asyncio.to_thread(kubectl.apply, agent_manifest(name, card_url, **spec))
    assert applied.returncode == 0, applied.stderr
    return await wait_ready(lambda: kubectl.get_json("harnessagent", name))


def spawn_on(agent: str, goal: str, call_id: str = "call-spawn") -> dict[str, Any]:
    return {
        "type": "tool_calls",
        "calls": [
            {
                "id": call_id,
                "name": "spawn_subtask",
                "arguments": {"goal": goal, "agent": agent},
            }
        ],
    }


def delegating(*remote: dict[str, Any]) -> list[dict[str, Any]]:
    """The script of a parent that hands :data:`GOAL` to agent ``market``, then of the remote
    task (``remote``, each answering what the remote model is asked once)."""
    return [
        spawn_on("market", GOAL),
        {"type": "text", "text": "Delegated.", "when": "Spawned sub-task"},
        *({**turn, "when": turn.get("when", ON_REMOTE)} for turn in remote),
    ]


async def start_delegating(kubectl: Kubectl, tasks: Tasks, card_url: str) -> None:
    """Declare agent ``market`` at ``card_url`` and give :data:`PARENT` its first message."""
    await declare(kubectl, "market", card_url)
    await tasks.create(PARENT)
    await tasks.send(PARENT, "Research the market.")


async def the_child(tasks: Tasks, parent: str) -> dict[str, Any]:
    async def spawned() -> dict[str, Any] | None:
        children = await tasks.children(parent)
        return children[0] if children else None

    return await eventually_async(spawned, within=30, what=f"{parent} to spawn a sub-task")


async def remote_state(remote: RemoteHarness, state: str, *, within: float = 30) -> dict[str, Any]:
    """The remote harness's one task, once it is in ``state``."""

    async def reached() -> dict[str, Any] | NotYet:
        found = await asyncio.to_thread(remote.tasks)
        there = found[0]["status"]  # not yet: no task, or one the operator has not initialised
        return found[0] if there["state"] == state else NotYet(there)

    return await eventually_async(reached, within=within, what=f"the remote task to be {state}")


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


class Unavailable:
    """Answers 503, as a proxy in front of an agent that has gone does, to the JSON-RPC calls
    of ``methods``; every other request reaches the agent."""

    def __init__(self, app: ASGIApp, methods: tuple[str, ...]) -> None:
        self.app = app
        self.methods = tuple(f'"{m}"'.encode() for m in methods)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] != "http" or scope["method"] != "POST":
            await self.app(scope, receive, send)
            return
        chunks: list[bytes] = []
        more = True
        while more:
            message = await receive()
            chunks.append(message.get("body", b""))
            more = message.get("more_body", False)
        body = b"".join(chunks)
        if any(m in body for m in self.methods):
            await PlainTextResponse("agent unavailable", status_code=503)(scope, receive, send)
            return
        replayed = False

        async def replay() -> Message:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class ForeignAgent:
    """An A2A agent that is not a tiny-harness, served on 127.0.0.1 in the test's process
    (``unavailable_for``: JSON-RPC methods answered 503 instead, see :class:`Unavailable`)."""

    def __init__(
        self,
        *,
        streaming: bool = True,
        token: str | None = None,
        unavailable_for: tuple[str, ...] = (),
        executor: AgentExecutor | None = None,
        extensions: tuple[str, ...] = (),
    ) -> None:
        self.port = free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.executor = executor or Echo()
        self.card = AgentCard(
            name="echo",
            description="Repeats what it is told.",
            version="1.0",
            capabilities=AgentCapabilities(
                streaming=streaming,
                extensions=[AgentExtension(uri=uri, required=False) for uri in extensions],
            ),
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
            middleware=[
                *([Middleware(BearerOnly, token=token)] if token else []),
                *([Middleware(Unavailable, methods=unavailable_for)] if unavailable_for else []),
            ],
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
            await eventually_async(  # uvicorn says it has started by a flag, not an event
                lambda: self.server.started,
                within=10,
                what="the foreign agent to start",
                interval=0.02,
            )
            yield self
        finally:
            self.server.should_exit = True
            await serving
