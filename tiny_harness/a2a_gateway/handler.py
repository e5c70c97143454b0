"""The A2A methods: a2a-sdk's ``RequestHandler`` over the Kubernetes task store and watch.

The SDK's routes (JSON-RPC and HTTP+JSON, with SSE for streams) call this handler; it counts
each call for the metrics, bounds the streams, and hands each method to its family, every one
of which decides who may do what (:mod:`.policy`), reads and writes through the versioned task
store (:class:`~tiny_harness.a2a_gateway.store.KubeTaskStore`) and follows a task through the
one follow (:mod:`.follow`) over the task event stream (:mod:`.stream`):

- ``SendMessage``, ``SendStreamingMessage``: :mod:`.send`;
- ``SubscribeToTask``: :mod:`.subscribe`;
- ``CancelTask``: :mod:`.cancel`;
- ``GetTask``, ``ListTasks``: :mod:`.reads`;
- push notification configs and the extended card, which this agent does not offer: here.

Why not the SDK's ``DefaultRequestHandler``: it runs the agent inside the serving process (an
``AgentExecutor`` per task, held by an in-memory ``ActiveTask``) and persists the task state it
computes from the agent's events. Here the agent runs in the operator, which is the only writer
of task state, so every gateway replica is in the position the SDK's cluster design calls a
"remote replica": it writes a request (a message, a cancel) and follows the task through the
shared event stream. That is what this handler does for every call, so any replica can answer
any call and nothing is kept between calls.

Every refusal leaves here with a reason code in its data (:mod:`tiny_harness.core.
reason_codes`): the one its raiser gave it, or for an error the SDK's own checks raise inside
a method, the one its type implies.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import AsyncGenerator, Iterator
from typing import Final

from a2a.server.context import ServerCallContext
from a2a.server.events.event_queue import Event
from a2a.server.request_handlers.request_handler import RequestHandler
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
    SendMessageRequest,
    SubscribeToTaskRequest,
    Task,
    TaskArtifactUpdateEvent,
    TaskPushNotificationConfig,
    TaskStatusUpdateEvent,
)
from a2a.utils.errors import (
    A2AError,
    InvalidParamsError,
    InvalidRequestError,
    PushNotificationNotSupportedError,
    TaskNotCancelableError,
    TaskNotFoundError,
    UnsupportedOperationError,
)
from a2a.utils.proto_utils import validate_proto_required_fields

from tiny_harness.a2a_gateway.call_context import request_state
from tiny_harness.a2a_gateway.cancel import CANCEL_WAIT_SECONDS, Cancels
from tiny_harness.a2a_gateway.event_ids import last_event_id
from tiny_harness.a2a_gateway.event_ids import note as note_version
from tiny_harness.a2a_gateway.limits import STATUS_KEY
from tiny_harness.a2a_gateway.metrics import METHOD_KEY, OUTCOME_KEY, GatewayMetrics, note
from tiny_harness.a2a_gateway.metrics import outcome_of as _outcome_of
from tiny_harness.a2a_gateway.policy import caller
from tiny_harness.a2a_gateway.quotas import Refused
from tiny_harness.a2a_gateway.reads import get_task, list_tasks
from tiny_harness.a2a_gateway.rendering import version_of
from tiny_harness.a2a_gateway.send import Sends
from tiny_harness.a2a_gateway.store import KubeTaskStore
from tiny_harness.a2a_gateway.stream import TaskStreams
from tiny_harness.a2a_gateway.stream_limits import StreamLimits
from tiny_harness.a2a_gateway.subscribe import Subscriptions
from tiny_harness.a2a_gateway.waiting import Waits
from tiny_harness.core.reason_codes import REASON_KEY, ReasonCode, coded, reason_in

#: The code an error the SDK's own checks raise inside a method carries, by its type.
_IMPLIED: Final[dict[type[A2AError], ReasonCode]] = {
    InvalidParamsError: ReasonCode.INVALID_PARAMS,
    InvalidRequestError: ReasonCode.INVALID_PARAMS,
    TaskNotFoundError: ReasonCode.TASK_NOT_FOUND,
    TaskNotCancelableError: ReasonCode.TASK_ENDED,
    PushNotificationNotSupportedError: ReasonCode.NOT_OFFERED,
}


def _with_code(error: A2AError) -> None:
    """Give ``error`` the code its type implies, unless its raiser gave it one."""
    implied = _IMPLIED.get(type(error))
    if implied is not None and reason_in(error.data) is None:
        error.data = {**(error.data or {}), REASON_KEY: implied.value}


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
        self._limits = limits or StreamLimits()
        self._sends = Sends(store, streams, waits or Waits())
        self._subscriptions = Subscriptions(store, streams)
        self._cancels = Cancels(store, streams, cancel_wait_seconds)

    # -- instrumentation ---------------------------------------------------------------------

    @contextlib.contextmanager
    def _observed(self, context: ServerCallContext, method: str) -> Iterator[None]:
        state = request_state(context)
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
            if isinstance(exc, A2AError):
                _with_code(exc)
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

    @staticmethod
    async def _told(
        context: ServerCallContext,
        items: AsyncGenerator[Task | TaskStatusUpdateEvent | TaskArtifactUpdateEvent, None],
    ) -> AsyncGenerator[Event, None]:
        """Each of ``items``, with its version noted for the event id of the SSE event it
        becomes (:mod:`.event_ids`); an artifact update has none of its own (:mod:`.artifacts`)."""
        state = request_state(context)
        async with contextlib.aclosing(items):
            async for item in items:
                version = None if isinstance(item, TaskArtifactUpdateEvent) else version_of(item)
                note_version(state, version)
                yield item

    # -- SendMessage, SendStreamingMessage ---------------------------------------------------

    async def on_message_send(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> Task | Message:
        with self._observed(context, "SendMessage"):
            validate_proto_required_fields(params)
            return await self._sends.unary(params, context)

    async def on_message_send_stream(
        self, params: SendMessageRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        with self._streaming(context, "SendStreamingMessage") as until:
            validate_proto_required_fields(params)
            events = self._sends.streaming(params, context, until=until)
            async with contextlib.aclosing(self._told(context, events)) as told:
                async for event in told:
                    yield event

    # -- GetTask, ListTasks, SubscribeToTask -------------------------------------------------

    async def on_get_task(self, params: GetTaskRequest, context: ServerCallContext) -> Task | None:
        with self._observed(context, "GetTask"):
            validate_proto_required_fields(params)
            return await get_task(self._store, params, context)

    async def on_list_tasks(
        self, params: ListTasksRequest, context: ServerCallContext
    ) -> ListTasksResponse:
        with self._observed(context, "ListTasks"):
            return await list_tasks(self._store, params, context)

    async def on_subscribe_to_task(
        self, params: SubscribeToTaskRequest, context: ServerCallContext
    ) -> AsyncGenerator[Event, None]:
        with self._streaming(context, "SubscribeToTask") as until:
            validate_proto_required_fields(params)
            resume = last_event_id(request_state(context))
            events = self._subscriptions.subscribe(params, context, resume=resume, until=until)
            async with contextlib.aclosing(self._told(context, events)) as told:
                async for event in told:
                    yield event

    # -- CancelTask --------------------------------------------------------------------------

    async def on_cancel_task(
        self, params: CancelTaskRequest, context: ServerCallContext
    ) -> Task | None:
        with self._observed(context, "CancelTask"):
            validate_proto_required_fields(params)
            return await self._cancels.cancel(params, context)

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
            raise coded(
                UnsupportedOperationError,
                ReasonCode.NOT_OFFERED,
                "this agent has no extended card; its public card is the whole card",
            )
