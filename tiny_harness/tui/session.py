"""The TUI's connection to a gateway: an a2a-sdk client acting as one participant.

The TUI is an A2A client and nothing more: whatever it does, any A2A client can. Identity is
what the gateway's mode asks for: a participant id header (header mode) or a bearer token
(token-review mode), sent with every request.

A followed task's stream (:meth:`Session.follow`) survives a gateway that is slow or gone: the
subscription is opened again with a growing pause (bounded), and each attempt is announced as a
:class:`Reconnecting` item, so the screen can say so instead of freezing. Every reconnection
starts with the whole task again (the gateway's SubscribeToTask does); the view's fold keeps
each message once.
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass
from typing import Any, Final

import httpx
from a2a.client import A2ACardResolver, Client, ClientConfig, ClientFactory
from a2a.client.errors import A2AClientError
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    GetTaskRequest,
    ListTasksRequest,
    Message,
    Part,
    Role,
    SendMessageRequest,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
)
from a2a.utils.errors import A2AError

from tiny_harness.core.backoff import Backoff
from tiny_harness.core.command_spec import CommandSpec, commands_from_params
from tiny_harness.core.control import control_message
from tiny_harness.core.extensions import COMMANDS_EXT_URI, TASK_EXT_KEY
from tiny_harness.core.status_ext import metadata_dict

#: Pauses between attempts to follow a task again: 0.5 s doubling, at most 5 s (shown on the
#: screen as it is, so without jitter).
RECONNECT_PAUSES: Final = Backoff(first=0.5, cap=5.0, jitter=0.0)
#: Header mode: the header naming the participant.
PARTICIPANT_HEADER: Final = "X-Participant-Id"


@dataclass(frozen=True)
class Reconnecting:
    """The stream of a followed task broke; the next attempt is in ``pause`` seconds."""

    reason: str
    pause: float


class SessionError(Exception):
    """What the gateway refused, or why it cannot be reached, as a sentence for a person."""


def explain(exc: BaseException) -> str:
    """A refusal or a failure as what to do, not as a code."""
    if isinstance(exc, httpx.HTTPStatusError):
        code = exc.response.status_code
        if code == 401:
            return "the gateway does not know who you are: check the participant or the token"
        if code == 413:
            return "that message is too large for the gateway: send less at once"
        if code == 429:
            return "too many requests: wait a moment and send again"
        return f"the gateway answered HTTP {code}"
    if isinstance(exc, httpx.TransportError | OSError):
        return "the gateway cannot be reached"
    text = str(exc).strip() or type(exc).__name__
    return text


class Session:
    """One participant's A2A client of one gateway. :meth:`close` when done."""

    def __init__(self, client: Client, http: httpx.AsyncClient, card: AgentCard, me: str) -> None:
        self.client = client
        self.http = http
        self.card = card
        self.me = me
        self.commands: tuple[CommandSpec, ...] = commands_of(card)

    @classmethod
    async def connect(
        cls, url: str, *, participant: str | None = None, token: str | None = None
    ) -> Session:
        headers: dict[str, str] = {}
        if participant:
            headers[PARTICIPANT_HEADER] = participant
        if token:
            headers["Authorization"] = f"Bearer {token}"
        http = httpx.AsyncClient(headers=headers, timeout=httpx.Timeout(30.0, read=None))
        try:
            card = await A2ACardResolver(http, url).get_agent_card()
            client = ClientFactory(ClientConfig(streaming=True, httpx_client=http)).create(card)
        except Exception as exc:
            await http.aclose()
            raise SessionError(f"cannot attach to {url}: {explain(exc)}") from None
        return cls(client, http, card, participant or "")

    async def close(self) -> None:
        await self.client.close()
        await self.http.aclose()

    # -- reads -------------------------------------------------------------------------------

    async def tasks(self) -> list[Task]:
        """Every task this participant may see (all pages)."""
        out: list[Task] = []
        token = ""
        try:
            while True:
                page = await self.client.list_tasks(
                    ListTasksRequest(page_size=100, page_token=token)
                )
                out.extend(page.tasks)
                token = page.next_page_token
                if not token:
                    return out
        except (A2AError, A2AClientError, httpx.HTTPError) as exc:
            raise SessionError(explain(exc)) from None

    async def task(self, task_id: str) -> Task:
        try:
            return await self.client.get_task(GetTaskRequest(id=task_id))
        except (A2AError, A2AClientError, httpx.HTTPError) as exc:
            raise SessionError(explain(exc)) from None

    # -- writes ------------------------------------------------------------------------------

    async def send(
        self,
        text: str,
        *,
        task_id: str = "",
        envelope: dict[str, Any] | None = None,
        message_id: str = "",
    ) -> AsyncIterator[StreamResponse]:
        """Send ``text`` (to ``task_id``, or as a new task described by ``envelope``) and
        stream what the gateway answers until it ends the stream. ``message_id`` (else a new
        one) lets the caller show the message as the history will name it."""
        message = Message(
            message_id=message_id or str(uuid.uuid4()),
            task_id=task_id,
            role=Role.ROLE_USER,
            parts=[Part(text=text)],
        )
        if envelope is not None:
            message.metadata.update({TASK_EXT_KEY: envelope})
        async for event in self._stream(message):
            yield event

    async def complete(self, task_id: str) -> AsyncIterator[StreamResponse]:
        async for event in self._stream(control_message(task_id, "complete")):
            yield event

    async def cancel(self, task_id: str) -> Task:
        try:
            return await self.client.cancel_task(CancelTaskRequest(id=task_id))
        except (A2AError, A2AClientError, httpx.HTTPError) as exc:
            raise SessionError(explain(exc)) from None

    async def _stream(self, message: Message) -> AsyncIterator[StreamResponse]:
        try:
            async for event in self.client.send_message(SendMessageRequest(message=message)):
                yield event
        except (A2AError, A2AClientError, httpx.HTTPError) as exc:
            raise SessionError(explain(exc)) from None

    # -- following a task --------------------------------------------------------------------

    async def follow(self, task_id: str) -> AsyncIterator[StreamResponse | Reconnecting]:
        """The task's events for as long as the caller iterates, through reconnections."""
        attempt = 0
        while True:
            try:
                async for event in self.client.subscribe(SubscribeToTaskRequest(id=task_id)):
                    attempt = 0
                    yield event
                reason = "the gateway ended the stream"
            except (A2AError, A2AClientError, httpx.HTTPError, OSError) as exc:
                reason = explain(exc)
            attempt += 1
            pause = RECONNECT_PAUSES.delay(attempt)
            yield Reconnecting(reason, pause)
            await asyncio.sleep(pause)


def commands_of(card: AgentCard) -> tuple[CommandSpec, ...]:
    """The /commands the card's commands extension lists (none when it lists none)."""
    for extension in card.capabilities.extensions:
        if extension.uri == COMMANDS_EXT_URI:
            return commands_from_params(metadata_dict(extension.params))
    return ()
