"""Sub-tasks on remote agents: the operator's side of every conversation with one.

A ``HarnessTask`` with ``spec.agent`` is done by that remote A2A agent (a ``HarnessAgent``).
Its turns run here instead of the core loop, each an exchange with the agent's task
(:mod:`tiny_harness.operator.remote_turn`); a participant's cancel or completion of it is
carried to the agent's task first (:class:`Remotes`). Each call is tried again, and fails, as
:mod:`tiny_harness.operator.remote_calls` says.
"""

from __future__ import annotations

import asyncio
import contextlib
from typing import Final

from a2a.client import Client
from a2a.types import CancelTaskRequest, Message, Role, SendMessageRequest
from a2a.utils.errors import TaskNotCancelableError

from tiny_harness.core.control_envelope import control_part
from tiny_harness.core.remote_view import RemoteView
from tiny_harness.core.states import TaskState
from tiny_harness.core.turn import RemoteRef
from tiny_harness.operator.agents import Agent, AgentDirectory
from tiny_harness.operator.remote_calls import RemoteCallError, settled_agent, with_retries
from tiny_harness.operator.remote_turn import RemoteLoop

#: How long a cancel or a completion sent to a remote task is waited on.
CONTROL_WAIT_SECONDS: Final = 30.0


class Remotes:
    """The operator's side of every conversation with a remote agent."""

    def __init__(self, directory: AgentDirectory) -> None:
        self.directory = directory

    async def agent(self, namespace: str, name: str) -> Agent:
        return await settled_agent(self.directory, namespace, name)

    def loop(self, namespace: str) -> RemoteLoop:
        """What runs the turns of the namespace's sub-tasks on remote agents."""
        return RemoteLoop(self.directory, namespace)

    # -- controls ----------------------------------------------------------------------------

    async def cancel(self, namespace: str, name: str, ref: RemoteRef | None) -> str | None:
        """Cancel the remote task; None when it is cancelled (or over), else why not."""
        if ref is None or not ref.task_id or (ref.state is not None and ref.state.is_terminal):
            return None
        task_id = ref.task_id

        async def cancel(client: Client) -> None:
            # A task that ended meanwhile is not cancelable: nothing is at work there.
            with contextlib.suppress(TaskNotCancelableError):
                await client.cancel_task(CancelTaskRequest(id=task_id))

        try:
            agent = await self.agent(namespace, name)
            client = agent.client()
            await with_retries(agent, lambda: cancel(client))
        except RemoteCallError as exc:
            return str(exc)
        return None

    async def complete(self, namespace: str, name: str, ref: RemoteRef | None) -> str | None:
        """Complete the remote task: a tiny-harness agent takes our control envelope (and may
        refuse, which is returned); another agent has no completion in A2A, so its task is
        cancelled, the work being done here. None when it went through."""
        if ref is None or not ref.task_id or (ref.state is not None and ref.state.is_terminal):
            return None
        agent = await self.agent(namespace, name)
        if not agent.speaks_harness:
            why = await self.cancel(namespace, name, ref)
            return None if why is None else f"the remote task could not be cancelled: {why}"
        client = agent.client()
        message = Message(
            message_id=f"{ref.task_id}/complete",
            task_id=ref.task_id,
            context_id=ref.context_id,
            role=Role.ROLE_USER,
            parts=[control_part("complete")],
        )
        view = RemoteView.of(ref)

        async def send() -> None:
            stream = client.send_message(SendMessageRequest(message=message))
            async with asyncio.timeout(CONTROL_WAIT_SECONDS):
                async for event in stream:
                    view.take(event)
                    if view.state is not None and view.state.is_terminal:
                        return

        try:
            await with_retries(agent, send)
        except TimeoutError:
            return "the remote task did not complete in time"
        if view.state is TaskState.COMPLETED:
            return None
        return view.text or f"the remote task is {view.state}"
