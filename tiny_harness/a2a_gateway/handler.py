"""The A2A methods: a2a-sdk's ``RequestHandler`` over the Kubernetes task store and watch.

The SDK's routes (JSON-RPC and HTTP+JSON, with SSE for streams) call this handler; it decides
who may do what (:mod:`~tiny_harness.a2a_gateway.policy`), then reads and writes through the
versioned task store (:class:`~tiny_harness.a2a_gateway.store.KubeTaskStore`) and follows a task
through its namespace's streams (:class:`~tiny_harness.a2a_gateway.stream.TaskStreams`).

Why not the SDK's ``DefaultRequestHandler``: it runs the agent inside the serving process (an
``AgentExecutor`` per task, held by an in-memory ``ActiveTask``) and persists the task state it
computes from the agent's events. Here the agent runs in the operator, which is the only writer
of task state, so every gateway replica is in the position the SDK's cluster design calls a
"remote replica": it writes a request (a message, a cancel) and follows the task through the
shared event stream. That is what this handler does for every call, so any replica can answer
any call and nothing is kept between calls.

How a send is followed: the stream shows the task as written, then each change a participant
can see (state, sub-state, status text), and ends when the task ends or when it waits for a
participant again after a turn has taken the message (its id is in a turn journal).
"""

from __future__ import annotations

import asyncio
import contextlib
import json
import uuid
from collections.abc import AsyncGenerator, AsyncIterator, Iterator, MutableMapping
from dataclasses import dataclass, replace
from typing import Any, Final

from a2a.server.cluster import ConcurrentTaskModificationError, TaskVersion
from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
from a2a.server.routes.common import DefaultServerCallContextBuilder
from a2a.types import (
    AgentCard,
    CancelTaskRequest,
    DeleteTaskPushNotificationConfigRequest,
    GetExtendedAgentCardRequest,
    GetTaskPushNotificationConfigRequest,
    GetTaskRequest,
    ListTaskPushNotificationConfigsRequest,
    ListTaskPushNotificationConfigsResponse,
    ListTasksRequest,
    ListTasksResponse,
    Message,
    Role,
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskState,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    InvalidParamsError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.proto_utils import validate_proto_required_fields
from a2a.utils.task import apply_history_length, validate_history_length, validate_page_size
from starlette.requests import Request

from tiny_harness.a2a_gateway.artifacts import ArtifactFollower
from tiny_harness.a2a_gateway.event_ids import LAST_EVENT_ID_KEY, last_event_id
from tiny_harness.a2a_gateway.event_ids import note as note_version
from tiny_harness.a2a_gateway.fanout import Subscription
from tiny_harness.a2a_gateway.inbound import Inbound, inbound
from tiny_harness.a2a_gateway.limits import RAW_BODY_KEY, STATUS_KEY
from tiny_harness.a2a_gateway.metrics import METHOD_KEY, OUTCOME_KEY, GatewayMetrics, note
from tiny_harness.a2a_gateway.metrics import outcome_of as _outcome_of
from tiny_harness.a2a_gateway.policy import (
    caller,
    closed,
    first_task_spec,
    refuse_if_ended,
    require_ending_role,
    validate_status_filter,
)
from tiny_harness.a2a_gateway.quotas import Refused
from tiny_harness.a2a_gateway.rendering import (
    ProgressKey,
    StatusKey,
    TaskChange,
    artifacts_of,
    as_of,
    change_of,
    is_interrupted,
    is_terminal,
    noted,
    progress_key,
    status_event,
    status_key,
    version_of,
)
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import Opening, TaskStreams, visible
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.a2a_gateway.waiting import Note, Quiet, Waits, at_quiet_tick, with_quiet_ticks
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.artifact_index import ArtifactRow
from tiny_harness.core.reply_ids import command_reply_id, refusal_id
from tiny_harness.core.task import TaskStatus

#: The ASGI request state, as the call context carries it to the handler (for metrics).
REQUEST_STATE: Final = "tiny_harness.request_state"
#: Tasks the gateway creates are named from their sender and first message id (UUID v5), so a
#: retried first message finds the task it created instead of creating another.
_TASK_NAMESPACE: Final = uuid.UUID("6b1c8f6e-2a4e-5d0b-9a57-0f6c3e3c1a10")
#: How long CancelTask waits for the operator to apply the cancel before answering.
CANCEL_WAIT_SECONDS: Final = 30.0


class GatewayCallContextBuilder(DefaultServerCallContextBuilder):
    """The SDK's call context, plus the request's ASGI state so the handler can report the A2A
    method and outcome to the metrics middleware."""

    def build(self, request: Request) -> ServerCallContext:
        context = super().build(request)
        state = request.scope.setdefault("state", {})
        state[QUERY_KEY] = request.query_params
        state[LAST_EVENT_ID_KEY] = request.headers.get("last-event-id")
        context.state[REQUEST_STATE] = state
        return context


#: The request's query parameters, as the client sent them, in the request state.
QUERY_KEY: Final = "query"


def requested(context: ServerCallContext, name: str) -> object | None:
    """A request parameter as the client sent it, before the SDK's lenient parse: from the
    query (HTTP+JSON) or the JSON-RPC ``params``. None when it was not sent."""
    state = _request_state(context)
    if state is None:
        return None
    query = state.get(QUERY_KEY)
    if query is not None and name in query:
        return str(query[name])
    body = state.get(RAW_BODY_KEY)
    if not body:
        return None
    try:
        document = json.loads(body)
    except ValueError:
        return None
    params = document.get("params") if isinstance(document, dict) else None
    return params.get(name) if isinstance(params, dict) else None


@dataclass(frozen=True)
class _Sent:
    """A message written to a task, the task as it was when the message was written (and as a
    change: its status event and the keys the wait compares the next ones with), and the
    subscription to its changes, opened before that read (closed by whoever follows it)."""

    task: Task
    version: TaskVersion
    message_id: str
    existed: bool
    subscription: Subscription[TaskChange]
    opening: TaskChange


def _number(version: TaskVersion) -> int:
    """A version as a number to order changes by (0: none, before every change)."""
    return 0 if version.is_missing else int(str(version._value))


def _request_state(context: ServerCallContext) -> MutableMapping[str, Any] | None:
    state = context.state.get(REQUEST_STATE)
    return state if isinstance(state, MutableMapping) else None


def _stamped(message: Message, task_id: str, context_id: str) -> Message:
    out = Message()
    out.CopyFrom(message)
    out.task_id = task_id
    out.context_id = context_id
    out.role = Role.ROLE_USER
    return out


class GatewayRequestHandler(RequestHandler):
    """Every A2A method as reads, writes and watches of ``HarnessTask`` objects."""

    def __init__(
        self,
        store: KubeTaskStore,
        streams: TaskStreams,
        metrics: GatewayMetrics,
        *,
        cancel_wait_seconds: float = CANCEL_WAIT_SECONDS,
        waits: Waits | None = None,
        limits: StreamLimits | None = None,
    ) -> None:
        self._store = store
        self._streams = streams
        self._metrics = metrics
        self._cancel_wait = cancel_wait_seconds
        self._waits = waits or Waits()
        self._limits = limits or StreamLimits()

    # -- instrumentation ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _observed(self, context: ServerCallContext, method: str) -> Iterator[None]:
        state = _request_state(context)
        note(state, **{METHOD_KEY: method})
        try:
            yield
        except (GeneratorExit, asyncio.CancelledError):
            note(state, **{OUTCOME_KEY: "cancelled"})
            raise
        except Refused as refused:
            # Too much to store: the A2A error, with the HTTP status that says which kind
            # (RefusalStatus gives it to an HTTP+JSON answer).
            note(state, **{OUTCOME_KEY: refused.outcome, STATUS_KEY: str(refused.status)})
            raise refused.error from None
        except BaseException as exc:
            note(state, **{OUTCOME_KEY: _outcome_of(exc)})
            raise
        note(state, **{OUTCOME_KEY: "ok"})

    @contextlib.contextmanager
    def _streaming(self, context: ServerCallContext, method: str) -> Iterator[float]:
        """A stream's bounds: one of the caller's open streams (refused past the limit), and
        its lifetime, whose end (the event loop's clock) it yields."""
        gauge = self._metrics.open_streams.labels(method)
        gauge.inc()
        try:
            with self._observed(context, method), self._limits.slot(caller(context)):
                yield self._limits.deadline()
        finally:
            gauge.dec()

    # -- SendMessage, SendStreamingMessage ---------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        """Write the message, wait until the task waits for a participant again or ends
        (unless ``return_immediately``), and answer with the task and its history."""
        with self._observed(context, "SendMessage"):
            validate_proto_required_fields(params)
            sent = await self._send(params, context)
            last: TaskStatusUpdateEvent | None = None
            with sent.subscription:
                if not params.configuration.return_immediately:
                    async for event in self._follow(sent):
                        if isinstance(event, TaskStatusUpdateEvent):
                            last = event
            stored = await self._store.get(sent.task.id, context)
            if stored is None:
                raise TaskNotFoundError(message=f"task {sent.task.id!r} was deleted")
            # The status the wait ended on (the answer, or the gateway's note), with the
            # history as it is now: a later change (a turn a child's news started) must not
            # hide the answer from the caller who waited for it.
            task = stored.task if last is None else as_of(stored.task, last)
            return apply_history_length(task, params.configuration)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """Write the message, then stream the task: as written, then each visible change."""
        with self._streaming(context, "SendStreamingMessage") as until:
            validate_proto_required_fields(params)
            sent = await self._send(params, context)
            with sent.subscription:
                yield self._told(context, sent.task)
                follower = self._follower(
                    sent.task.id, sent.task.context_id, sent.opening.artifacts
                )
                async for event in self._follow(sent, until=until, follower=follower):
                    yield self._told(context, event)

    async def _send(self, params: SendMessageRequest, context: ServerCallContext) -> _Sent:
        participant = caller(context)
        validate_history_length(params.configuration)
        # Read (and refuse) the message once, before anything is read or written.
        said = inbound(params.message, participant)
        message = said.message
        if message.task_id:
            if said.envelope is not None:
                raise InvalidParamsError(
                    message="a task envelope is accepted only on a task's first message; "
                    "this message names an existing task"
                )
            return await self._append(said, context)
        if said.control is not None:
            raise InvalidParamsError(
                message="a control message must name its task in message.task_id"
            )
        task_id = str(uuid.uuid5(_TASK_NAMESPACE, f"{participant}\n{message.message_id}"))
        context_id = message.context_id or task_id
        spec = first_task_spec(said.envelope, participant, message)
        task = task_to_a2a(task_id, context_id, spec, TaskStatus())
        # Before the write: the task's first change is the one its creation made.
        subscription = self._streams.follow(task_id)
        try:
            version = await self._store.create(
                task_id, context_id, spec, [said.to(task_id)], participant
            )
        except ConcurrentTaskModificationError:
            subscription.close()
            # The same first message again: the task it created answers it.
            retry = replace(said, message=_stamped(message, task_id, context_id))
            return await self._append(retry, context)
        except BaseException:
            subscription.close()
            raise
        # Its first event is the task as written: nothing else of it is read back.
        opening = TaskChange.of(status_event(task), version, turn=0, running=False)
        return _Sent(task, version, message.message_id, False, subscription, opening)

    async def _append(self, said: Inbound, context: ServerCallContext) -> _Sent:
        # Opened before the read the wait starts from, so no change after it is missed.
        subscription = self._streams.follow(said.message.task_id)
        try:
            return await self._append_read(said, context, subscription)
        except BaseException:
            subscription.close()
            raise

    async def _append_read(
        self, said: Inbound, context: ServerCallContext, subscription: Subscription[TaskChange]
    ) -> _Sent:
        message, participant = said.message, said.sender
        found = await self._store.get_with_change(message.task_id, context)
        if found is None:
            raise TaskNotFoundError(message=f"task {message.task_id!r} not found")
        stored, opening = found
        task = stored.task
        if message.context_id and message.context_id != task.context_id:
            raise InvalidParamsError(
                message=f"message.context_id {message.context_id!r} is not the context of task "
                f"{task.id!r} ({task.context_id!r})"
            )
        retried = closed(task) and await self._store.already_sent(
            task.id, message.message_id, participant
        )
        if retried:
            # The same message again after it ended the task (a retried completion): the
            # answer is the task as it is, as it was for the first send.
            return _Sent(task, stored.version, message.message_id, True, subscription, opening)
        refuse_if_ended(task)
        if said.control is not None:
            require_ending_role(task, participant, said.control)
        version = await self._store.append(task.id, [said.to(task.id)], participant)
        # A message that was already stored (a retry) may have been taken long ago.
        existed = not version.is_after(stored.version)
        return _Sent(task, stored.version, message.message_id, existed, subscription, opening)

    def _follower(
        self, task_id: str, context_id: str, shown: tuple[ArtifactRow, ...]
    ) -> ArtifactFollower:
        """What a stream of the task has shown of its artifacts (``shown``), to tell the rest."""
        return ArtifactFollower(self._store.artifact_chunks, task_id, context_id, shown)

    async def _follow(
        self,
        sent: _Sent,
        *,
        until: float | None = None,
        follower: ArtifactFollower | None = None,
    ) -> AsyncIterator[TaskStatusUpdateEvent | TaskArtifactUpdateEvent]:
        """The visible changes of the task after the send (with ``follower``, each change's
        new artifact chunks before it), until the wait ends as
        :mod:`tiny_harness.a2a_gateway.waiting` says: the task ends, the message's answer
        outside a turn arrives, the turn that took it has ended (as of each change), or a
        quiet tick finds an answer with no status event or a bound passed (then the last event
        is the gateway's note)."""
        if closed(sent.task):
            return
        # The turns that can take the message: from the one the task showed when it was
        # written (the store reads theirs alone); a retried message was written at a turn no
        # one knows.
        since = None if sent.existed else sent.opening.turn
        if sent.existed and is_interrupted(sent.task):
            # A retried message may have been answered long ago: by a notice, or by the end of
            # the turn that gave it to the model, as of the task now?
            fate = await self._store.fate(sent.task.id, sent.message_id, since=None)
            if fate.answer is not None:
                yield noted(sent.opening.event, Note(fate.answer.id, fate.answer.text))
                return
            stand = await self._store.turn_stand(sent.task.id)
            if stand is not None and await self._store.answered(
                sent.task.id, sent.message_id, turn=stand[0], running=stand[1], since=None
            ):
                return
        answers = {command_reply_id(sent.message_id), refusal_id(sent.message_id)}
        clock = asyncio.get_running_loop().time
        written = changed = clock()
        last = sent.opening.event
        source = self._streams.changes(sent.subscription, after=_number(sent.version), until=until)
        shown = follower.shown if follower is not None else None
        changes = with_quiet_ticks(
            visible(source, sent.opening.key, sent.opening.progress, shown),
            first=self._waits.first_tick,
            cap=self._waits.tick_cap,
        )
        async with contextlib.aclosing(changes):
            async for change in changes:
                if isinstance(change, Quiet):
                    fate = await self._store.fate(sent.task.id, sent.message_id, since=since)
                    note = at_quiet_tick(
                        fate,
                        sent.message_id,
                        since_written=clock() - written,
                        since_change=clock() - changed,
                        waits=self._waits,
                    )
                    if note is not None:
                        yield noted(last, note)
                        return
                    continue
                changed = clock()
                if follower is not None:
                    for update in await follower.updates(change.artifacts):
                        yield update
                event = last = change.event
                yield event
                if change.progress_only:
                    # The turn is at work (its lease was renewed with more calls made): the
                    # stream shows it, and it neither ends the wait nor is read as an answer.
                    continue
                if is_terminal(event) or event.status.message.message_id in answers:
                    return  # ended, or answered outside a turn (a command's reply, a refusal)
                if is_interrupted(event) and await self._store.answered(
                    sent.task.id,
                    sent.message_id,
                    turn=change.turn,
                    running=change.running,
                    since=since,
                ):
                    return

    # -- GetTask, ListTasks, SubscribeToTask -------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        with self._observed(context, "GetTask"):
            validate_proto_required_fields(params)
            validate_history_length(params)
            stored = await self._store.get(params.id, context)
            if stored is None:
                raise TaskNotFoundError(message=f"task {params.id!r} not found")
            return apply_history_length(stored.task, params)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        with self._observed(context, "ListTasks"):
            validate_status_filter(requested(context, "status"))
            validate_history_length(params)
            if params.HasField("page_size"):
                validate_page_size(params.page_size)
            page = await self._store.list(params, context)
            for task in page.tasks:
                if not params.include_artifacts:
                    task.ClearField("artifacts")
            return page

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        """The task as it is now, then every visible change, until it ends. A client that
        sends ``Last-Event-ID`` (the version of the last event it read, from any replica) is
        sent the changes it missed instead, then the live ones (:mod:`.stream`)."""
        with self._streaming(context, "SubscribeToTask") as until:
            validate_proto_required_fields(params)
            resume = last_event_id(_request_state(context))
            with self._streams.follow(params.id) as subscription:
                opening = await self._opening(params.id, context, resume)
                follower = self._follower(params.id, opening.context_id, opening.shown)
                if opening.index is not None and opening.events:
                    # A resume: what changed of the artifacts since the client's version,
                    # whole, before the last change it missed.
                    updates = await follower.whole_updates(opening.index)
                    opening.events[-1:-1] = updates
                while opening.events:
                    first = opening.events.pop(0)
                    yield self._told(context, first)
                    if not isinstance(first, TaskArtifactUpdateEvent) and is_terminal(first):
                        return
                    del first
                # A stream may stay open for hours: its frame keeps the versions and keys it
                # compares with, not the task (and its history) it started from.
                held, key, progress = opening.held, opening.key, opening.progress
                del opening
                source = self._streams.changes(subscription, after=held, until=until)
                async for seen in visible(source, key, progress, follower.shown):
                    for update in await follower.updates(seen.artifacts):
                        yield self._told(context, update)
                    yield self._told(context, seen.event)
                    if is_terminal(seen.event):
                        return

    async def _opening(
        self, task_id: str, context: ServerCallContext, resume: int | None
    ) -> Opening:
        """What a subscription shows first, read after it was opened: the task as it is now,
        or, resuming from ``resume``, the visible changes the client missed (:mod:`.stream`)."""
        stored = await self._store.get(task_id, context)
        if stored is None:
            raise TaskNotFoundError(message=f"task {task_id!r} not found")
        held = _number(stored.version)
        if resume is None:
            refuse_if_ended(stored.task)
            return Opening(
                [stored.task],
                held,
                status_key(stored.task),
                progress_key(stored.task),
                shown=artifacts_of(stored.task),
                context_id=stored.task.context_id,
            )
        key: StatusKey | None = None
        progress: ProgressKey = (0, 0)
        shown: tuple[ArtifactRow, ...] = ()
        resumed = await self._streams.missed(task_id, since=resume, held=held)
        if resumed.baseline is not None:
            base = change_of(resumed.baseline)
            key, progress, shown = base.key, base.progress, base.artifacts
        if not resumed.changes:
            # Nothing missed: the task as the client last saw it, for the SDK's stream starts
            # with an event.
            return Opening(
                [stored.task],
                held,
                key,
                progress,
                shown=artifacts_of(stored.task),
                context_id=stored.task.context_id,
            )
        events: list[Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent] = []
        upto = resume
        for change in resumed.changes:
            upto = max(upto, change.revision)
            new_key, moved = change.key, change.progress
            if new_key == key and moved == progress and not resumed.gap:
                continue
            key, progress = new_key, moved
            events.append(change.event)
        index = resumed.changes[-1].artifacts
        if not events and index != shown:
            # Only the artifacts changed: the last status follows their updates, with its id.
            events.append(resumed.changes[-1].event)
        return Opening(
            events,
            max(held, upto),
            key,
            progress,
            shown=shown,
            index=index,
            context_id=stored.task.context_id,
        )

    def _told(
        self,
        context: ServerCallContext,
        item: Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent,
    ) -> Event:
        """``item``, with its version noted for the event id of the SSE event it becomes
        (:mod:`.event_ids`); an artifact update has none of its own (:mod:`.artifacts`)."""
        version = None if isinstance(item, TaskArtifactUpdateEvent) else version_of(item)
        note_version(_request_state(context), version)
        return item

    # -- CancelTask --------------------------------------------------------------------------

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        """Record a cancel request, wait (a bounded time) for the operator to cancel the task,
        and answer with the task. A task still running when the wait ends is returned as it
        is: the request stays recorded and the operator applies it."""
        with self._observed(context, "CancelTask"):
            validate_proto_required_fields(params)
            participant = caller(context)
            with self._streams.follow(params.id) as subscription:
                return await self._cancel(params, context, participant, subscription)

    async def _cancel(
        self,
        params: CancelTaskRequest,
        context: ServerCallContext,
        participant: str,
        subscription: Subscription[TaskChange],
    ) -> Task:
        """:meth:`on_cancel_task`, with the subscription its wait reads opened before."""
        stored = await self._store.get_without_history(params.id, context)
        if stored is None:
            raise TaskNotFoundError(message=f"task {params.id!r} not found")
        task = stored.task
        refuse_if_ended(task, TaskNotCancelableError)
        require_ending_role(task, participant, "cancel")
        cancelled = Task()
        cancelled.CopyFrom(task)
        cancelled.status.state = TaskState.TASK_STATE_CANCELED
        # A conflict means the task ended meanwhile; the read below says how.
        with contextlib.suppress(ConcurrentTaskModificationError):
            await self._store.save(
                cancelled,
                event=None,
                prev=task,
                prev_version=stored.version,
                context=context,
            )
        await self._until_ended(subscription, stored.version)
        final = await self._store.get(params.id, context)
        if final is None:
            raise TaskNotFoundError(message=f"task {params.id!r} was deleted")
        state = final.task.status.state
        if is_terminal(final.task) and state != TaskState.TASK_STATE_CANCELED:
            raise TaskNotCancelableError(
                message=f"the task ended as {TaskState.Name(state)} before it was cancelled"
            )
        return final.task

    async def _until_ended(
        self, subscription: Subscription[TaskChange], version: TaskVersion
    ) -> None:
        """Wait (at most the cancel wait) until the task has ended."""
        with contextlib.suppress(TimeoutError):
            async with asyncio.timeout(self._cancel_wait):
                changes = self._streams.changes(subscription, after=_number(version))
                async with contextlib.aclosing(changes):
                    async for change in changes:
                        if is_terminal(change.event):
                            return

    # -- what this agent does not offer ------------------------------------------------------

    async def on_create_task_push_notification_config(
        self, params: TaskPushNotificationConfig, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        with self._observed(context, "CreateTaskPushNotificationConfig"):
            raise PushNotificationNotSupportedError

    async def on_get_task_push_notification_config(
        self, params: GetTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> TaskPushNotificationConfig:
        with self._observed(context, "GetTaskPushNotificationConfig"):
            raise PushNotificationNotSupportedError

    async def on_list_task_push_notification_configs(
        self, params: ListTaskPushNotificationConfigsRequest, context: ServerCallContext
    ) -> ListTaskPushNotificationConfigsResponse:
        with self._observed(context, "ListTaskPushNotificationConfigs"):
            raise PushNotificationNotSupportedError

    async def on_delete_task_push_notification_config(
        self, params: DeleteTaskPushNotificationConfigRequest, context: ServerCallContext
    ) -> None:
        with self._observed(context, "DeleteTaskPushNotificationConfig"):
            raise PushNotificationNotSupportedError

    async def on_get_extended_agent_card(
        self, params: GetExtendedAgentCardRequest, context: ServerCallContext
    ) -> AgentCard:
        with self._observed(context, "GetExtendedAgentCard"):
            raise UnsupportedOperationError(
                message="this agent has no extended card; its public card is the whole card"
            )
