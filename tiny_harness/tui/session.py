"""The TUI's connection to a gateway: an a2a-sdk client acting as one participant.

The TUI is an A2A client and nothing more: whatever it does, any A2A client can. Identity is
what the gateway's mode asks for: a participant id header (header mode) or a bearer token
(token-review mode), sent with every request.

A followed task's stream (:meth:`Session.follow`) survives a gateway that ends it (its
lifetime, a reader it found too slow), stops, is replaced or cannot be reached: the
subscription is opened again after a pause (:data:`RECONNECT_PAUSES`, from the first again
once an event arrives), each attempt announced as a :class:`Reconnecting` item so the screen
can say so instead of freezing, and it names the last version the view applied
(``Last-Event-ID``), so the gateway, any replica, sends what was missed and then the live
changes; the view skips what it already has. An end that following again would only meet
again (the participant's streams at the gateway's limit, credentials it does not take, a task
that is not there) is said once, as :class:`Unfollowed`, after one read of the task, and ends
the follow; an ended task, which the gateway does not follow, is read instead
(:func:`after_stream` decides which, from the gateway's reason code
(:mod:`tiny_harness.core.reason_codes`) and the HTTP status, never from its sentences, which
are only shown).
"""

from __future__ import annotations

import asyncio
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable, Sequence
from dataclasses import dataclass
from typing import Any, Final

import httpx
from a2a.client import A2ACardResolver, Client, ClientCallContext, ClientConfig, ClientFactory
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
from a2a.utils.errors import A2AError, TaskNotFoundError

from tiny_harness.core.approval import Verdict
from tiny_harness.core.backoff import Backoff, retry_after
from tiny_harness.core.command_spec import CommandSpec, commands_from_params
from tiny_harness.core.control_envelope import ControlAction, control_message
from tiny_harness.core.extensions import COMMANDS_EXT_URI, TASK_EXT_KEY
from tiny_harness.core.reason_codes import ReasonCode, reason_of
from tiny_harness.core.status_ext import metadata_dict

#: Pauses between attempts to follow a task again: 0.5 s doubling, at most 5 s (shown on the
#: screen as it is, so without jitter).
RECONNECT_PAUSES: Final = Backoff(first=0.5, cap=5.0, jitter=0.0)
#: Header mode: the header naming the participant.
PARTICIPANT_HEADER: Final = "X-Participant-Id"
#: The header a resumed stream names the last version it applied in.
LAST_EVENT_ID: Final = "Last-Event-ID"


@dataclass(frozen=True)
class Reconnecting:
    """The stream of a followed task ended; the next attempt is in ``pause`` seconds."""

    reason: str
    pause: float


@dataclass(frozen=True)
class Unfollowed:
    """The gateway will not follow the task for this client, and would refuse again: why."""

    reason: str


@dataclass(frozen=True)
class Resume:
    """Follow the task again after a pause: why the stream ended, and the wait the gateway
    asked for (``Retry-After``), if it did."""

    reason: str
    retry_after: float | None = None


@dataclass(frozen=True)
class ReadInstead:
    """The task has ended, and the gateway follows no ended task: read it, follow no more."""


def after_stream(error: BaseException | None) -> Resume | Unfollowed | ReadInstead:
    """What a follow does once a stream ended with ``error`` (None: it ended cleanly)."""
    if error is None:
        return Resume("the gateway ended the stream")
    text = str(error).strip()
    code = reason_of(error)
    if code is ReasonCode.TOO_MANY_STREAMS:
        # The gateway's own sentence, shown as it is: it says how many are open.
        return Unfollowed(text)
    status = _http_status(error)
    if status is not None and status.response.status_code == 429:
        return Resume(explain(error), retry_after(status.response.headers))
    if status is not None and status.response.status_code == 401:
        return Unfollowed(explain(error))
    if isinstance(error, TaskNotFoundError) or code is ReasonCode.TASK_NOT_FOUND:
        return Unfollowed(text)
    if code is ReasonCode.TASK_ENDED:
        return ReadInstead()
    if code is ReasonCode.STREAM_BEHIND:
        return Resume("the gateway ended the stream: this client read it too slowly")
    return Resume(explain(error))


def _http_status(error: BaseException) -> httpx.HTTPStatusError | None:
    """The HTTP refusal ``error`` is, or was raised from (the SDK wraps httpx's errors)."""
    seen: BaseException | None = error
    for _ in range(4):
        if seen is None or isinstance(seen, httpx.HTTPStatusError):
            return seen
        seen = seen.__cause__
    return None


def _unreachable(error: BaseException) -> bool:
    """Whether ``error`` is, or was raised from, a failure to reach the gateway at all."""
    seen: BaseException | None = error
    for _ in range(4):
        if seen is None:
            return False
        if isinstance(seen, httpx.TransportError | OSError):
            return True
        seen = seen.__cause__
    return False


def resumed_from(version: int | None) -> ClientCallContext | None:
    """The call context of a subscription that resumes after ``version`` (None: afresh)."""
    if version is None:
        return None
    return ClientCallContext(service_parameters={LAST_EVENT_ID: str(version)})


class SessionError(Exception):
    """What the gateway refused, or why it cannot be reached, as a sentence for a person."""


def explain(exc: BaseException) -> str:
    """A refusal or a failure as what to do, not as a code."""
    status = _http_status(exc)
    if status is not None:
        code = status.response.status_code
        if code == 401:
            return "the gateway does not know who you are: check the participant or the token"
        if code == 413:
            return "that message is too large for the gateway: send less at once"
        if code == 429:
            return "too many requests: wait a moment and send again"
        return f"the gateway answered HTTP {code}"
    if _unreachable(exc):
        return "the gateway cannot be reached"
    text = str(exc).strip() or type(exc).__name__
    return text


class Session:
    """One participant's A2A client of one gateway. :meth:`close` when done."""

    def __init__(
        self,
        client: Client,
        http: httpx.AsyncClient,
        card: AgentCard,
        me: str,
        *,
        pause: Callable[[float], Awaitable[None]] = asyncio.sleep,
    ) -> None:
        self.client = client
        self.http = http
        self.card = card
        self.me = me
        self.commands: tuple[CommandSpec, ...] = commands_of(card)
        #: How a pause between two streams is waited out (tests give their own).
        self.pause = pause

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
        files: Sequence[Part] = (),
    ) -> AsyncIterator[StreamResponse]:
        """Send ``text`` and ``files`` (to ``task_id``, or as a new task described by
        ``envelope``; files alone, to a task, when ``text`` is empty) and stream what the
        gateway answers until it ends the stream.
        ``message_id`` (else a new one) lets the caller show the message as the history will
        name it."""
        message = Message(
            message_id=message_id or str(uuid.uuid4()),
            task_id=task_id,
            role=Role.ROLE_USER,
            parts=[*([Part(text=text)] if text else []), *files],
        )
        if envelope is not None:
            message.metadata.update({TASK_EXT_KEY: envelope})
        async for event in self._stream(message):
            yield event

    async def complete(self, task_id: str) -> AsyncIterator[StreamResponse]:
        async for event in self._stream(control_message(task_id, "complete")):
            yield event

    async def decide(
        self,
        task_id: str,
        call_id: str,
        verdict: Verdict,
        *,
        park: str,
        reason: str = "",
        arguments: dict[str, Any] | None = None,
        message_id: str = "",
    ) -> AsyncIterator[StreamResponse]:
        """Approve or reject the call ``call_id`` that waits on ``task_id`` in ``park``
        (``arguments``: an approval's edit, when its policy allows one), and stream what the
        gateway answers: the operator's answer is the status message ``cmd-<message_id>``,
        its refusal the message ``refused-<message_id>``."""
        message = decision_message(
            task_id,
            call_id,
            verdict,
            park=park,
            reason=reason,
            arguments=arguments,
            message_id=message_id,
        )
        async for event in self._stream(message):
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

    async def follow(
        self, task_id: str, *, since: Callable[[], int | None] = lambda: None
    ) -> AsyncIterator[StreamResponse | Reconnecting | Unfollowed]:
        """The task's events for as long as the caller iterates, through reconnections, each
        resuming after ``since()`` (the last version the caller applied) when it says one."""
        attempt = 0
        while True:
            error: BaseException | None = None
            try:
                request = SubscribeToTaskRequest(id=task_id)
                context = resumed_from(since())
                async for event in self.client.subscribe(request, context=context):
                    attempt = 0
                    yield event
            except (A2AError, A2AClientError, httpx.HTTPError, OSError) as exc:
                error = exc
            end = after_stream(error)
            if isinstance(end, Unfollowed):
                # Not followed, the task can still be read (the gateway's refusal says so).
                try:
                    task = await self.task(task_id)
                except SessionError:
                    pass
                else:
                    yield StreamResponse(task=task)
                yield end
                return
            if isinstance(end, ReadInstead):
                try:
                    task = await self.task(task_id)
                except SessionError as exc:
                    end = Resume(str(exc))
                else:
                    yield StreamResponse(task=task)
                    return
            attempt += 1
            pause = RECONNECT_PAUSES.delay(attempt, retry_after=end.retry_after)
            yield Reconnecting(end.reason, pause)
            await self.pause(pause)


def decision_message(
    task_id: str,
    call_id: str,
    verdict: Verdict,
    *,
    park: str,
    reason: str = "",
    arguments: dict[str, Any] | None = None,
    message_id: str = "",
) -> Message:
    """The message that decides ``call_id`` of ``park`` (the park it waits in, as the task
    shows it): the control envelope as its only part."""
    action: ControlAction = "approve" if verdict == "approve" else "reject"
    decision: dict[str, Any] = {"call_id": call_id, "reason": reason}
    if park:
        decision["park"] = park
    if arguments is not None:
        decision["arguments"] = arguments
    return control_message(task_id, action, message_id=message_id or str(uuid.uuid4()), **decision)


def commands_of(card: AgentCard) -> tuple[CommandSpec, ...]:
    """The /commands the card's commands extension lists (none when it lists none)."""
    for extension in card.capabilities.extensions:
        if extension.uri == COMMANDS_EXT_URI:
            return commands_from_params(metadata_dict(extension.params))
    return ()
