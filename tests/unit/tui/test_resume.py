"""The TUI follows a task across streams that end (tui/session.py, tui/view.py): each new stream
resumes after the last version the view applied (``Last-Event-ID``), the view skips what it has,
the pauses grow from half a second and start again after an event, and a refusal that would
only be made again (the participant's streams at the gateway's limit) ends the follow, said once.
What an end means is read from the gateway's reason code, never from its sentence.

The gateway is a scripted A2A client here: each subscription's events and how it ends."""

from __future__ import annotations

from collections.abc import AsyncIterator
from dataclasses import dataclass, field
from typing import Any

import httpx
import pytest
from a2a.client import ClientCallContext
from a2a.client.errors import A2AClientError
from a2a.types import (
    AgentCard,
    Message,
    Part,
    Role,
    StreamResponse,
    SubscribeToTaskRequest,
    Task,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.types import TaskState as A2AState
from a2a.utils.errors import A2AError, TaskNotFoundError, UnsupportedOperationError

from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.extensions import TASK_EXT_KEY
from tiny_harness.core.reason_codes import ReasonCode
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.task import TaskStatus as Status
from tiny_harness.tui.session import (
    ReadInstead,
    Reconnecting,
    Resume,
    Session,
    Unfollowed,
    after_stream,
)
from tiny_harness.tui.view import TaskView

SPEC = TaskSpec.model_validate(
    {"goal": "Talk.", "participants": [{"id": "alice", "role": "assignee"}]}
)
LIMIT = (
    "alice has 1 streams open on this gateway, as many as a participant may "
    "(gateway.max_streams_per_participant); close one, or read the task with GetTask"
)
ENDED = "the task is in a terminal state (TASK_STATE_COMPLETED)"
CUT = (
    "the stream of task 'talk' was ended: 64 changes waited unread (the client reads too "
    "slowly). Subscribe again with the header Last-Event-ID: 41 to be sent what followed"
)


def refused(error: type[A2AError], text: str, code: ReasonCode, **fields: str) -> A2AError:
    """The A2A error as the SDK's client decodes the gateway's: its sentence, and its code."""
    return error(text, data={"reason": code.value, **fields})


def limited() -> A2AError:
    return refused(UnsupportedOperationError, LIMIT, ReasonCode.TOO_MANY_STREAMS)


def task(version: int, *said: str, state: str = "TASK_STATE_INPUT_REQUIRED") -> Task:
    status = Status.model_validate({"state": state})
    history = [reply(i + 1, text) for i, text in enumerate(said)]
    return task_to_a2a("talk", "talk", SPEC, status, history=history, version=str(version))


def reply(n: int, text: str) -> Message:
    return Message(message_id=f"r{n}", role=Role.ROLE_AGENT, parts=[Part(text=text)])


def said(
    version: int, text: str, state: A2AState = A2AState.TASK_STATE_INPUT_REQUIRED
) -> StreamResponse:
    """A status update at ``version`` whose message is the agent's ``text`` (id r<version>)."""
    event = TaskStatusUpdateEvent(
        task_id="talk", status=TaskStatus(state=state, message=reply(version, text))
    )
    event.metadata.update({TASK_EXT_KEY: {"version": str(version)}})
    return StreamResponse(status_update=event)


def http_error(status: int, headers: dict[str, str] | None = None) -> A2AClientError:
    """An HTTP refusal as the SDK raises it: its own error, from httpx's."""
    request = httpx.Request("POST", "http://gateway/")
    response = httpx.Response(status, headers=headers, request=request)
    cause = httpx.HTTPStatusError(f"HTTP {status}", request=request, response=response)
    error = A2AClientError(f"HTTP Error {status}: {cause}")
    error.__cause__ = cause
    return error


def unreachable() -> A2AClientError:
    """A gateway that cannot be reached, as the SDK raises it: its own error, from httpx's."""
    error = A2AClientError("Network communication error: All connection attempts failed")
    error.__cause__ = httpx.ConnectError("All connection attempts failed")
    return error


@dataclass
class Stream:
    events: list[StreamResponse]
    #: How it ends: None, cleanly.
    end: BaseException | None = None


@dataclass
class ScriptedClient:
    """The SDK client's calls a follow makes, answered from a script of streams."""

    streams: list[Stream]
    read: Task | None = None
    asked: list[str | None] = field(default_factory=list)

    async def subscribe(
        self, request: SubscribeToTaskRequest, *, context: ClientCallContext | None = None
    ) -> AsyncIterator[StreamResponse]:
        assert request.id == "talk"
        parameters = context.service_parameters if context is not None else None
        self.asked.append((parameters or {}).get("Last-Event-ID"))
        stream = self.streams.pop(0)
        for event in stream.events:
            yield event
        if stream.end is not None:
            raise stream.end

    async def get_task(self, request: Any) -> Task:
        if self.read is None:
            raise TaskNotFoundError("task 'talk' not found")
        return self.read


async def follow(client: ScriptedClient, view: TaskView) -> tuple[list[object], list[float]]:
    """Follow as the app does, every event folded into ``view``, until the follow ends."""
    pauses: list[float] = []

    async def pause(seconds: float) -> None:
        pauses.append(seconds)

    session = Session(client, None, AgentCard(), "alice", pause=pause)  # type: ignore[arg-type]
    seen: list[object] = []
    async for item in session.follow("talk", since=lambda: view.version):
        seen.append(item)
        if isinstance(item, StreamResponse):
            view.take(item)
            if view.state.is_terminal:
                break
    return seen, pauses


def lines(view: TaskView) -> list[str]:
    return [f"{line.who}: {line.text}" for line in view.lines]


async def test_a_follow_resumes_after_the_last_version_and_shows_every_message_once_in_order() -> (
    None
):
    client = ScriptedClient(
        [
            # The task, one change, then the gateway goes away.
            Stream([StreamResponse(task=task(1, "one")), said(2, "two")], httpx.ReadError("gone")),
            # Still away.
            Stream([], http_error(502)),
            # A replica sends what was missed, a replay of it, and ends at its lifetime.
            Stream([said(3, "three"), said(4, "four"), said(4, "four"), said(3, "three")]),
            # Nothing missed: the task as the view has it; news; the stream limit.
            Stream(
                [StreamResponse(task=task(4, "one")), said(5, "five")],
                limited(),
            ),
        ],
        read=task(5, "one"),
    )
    view = TaskView("talk", "alice")
    seen, pauses = await follow(client, view)

    assert lines(view) == ["agent: one", "agent: two", "agent: three", "agent: four", "agent: five"]
    assert view.version == 5
    assert client.asked == [None, "2", "2", "4"]
    assert pauses == [0.5, 1.0, 0.5]  # growing while nothing comes, from the first after an event
    # Not followed, the task is read once (the gateway's refusal says it can be), and no more.
    assert seen[-2:] == [StreamResponse(task=task(5, "one")), Unfollowed(LIMIT)]
    assert [type(i) for i in seen].count(Reconnecting) == 3


async def test_an_ended_task_is_read_rather_than_followed() -> None:
    ended = refused(UnsupportedOperationError, ENDED, ReasonCode.TASK_ENDED)
    client = ScriptedClient(
        [Stream([], ended)], read=task(9, "Done.", state="TASK_STATE_COMPLETED")
    )
    view = TaskView("talk", "alice")
    seen, pauses = await follow(client, view)
    assert view.header == "COMPLETED"
    assert lines(view) == ["agent: Done."]
    assert pauses == []
    assert len(seen) == 1


async def test_a_task_that_is_not_there_ends_the_follow_saying_so() -> None:
    client = ScriptedClient([Stream([], TaskNotFoundError("task 'talk' not found"))])
    seen, pauses = await follow(client, TaskView("talk", "alice"))
    assert seen == [Unfollowed("task 'talk' not found")]
    assert pauses == []


@pytest.mark.parametrize(
    ("error", "decision"),
    [
        (None, Resume("the gateway ended the stream")),
        (httpx.ConnectError("refused"), Resume("the gateway cannot be reached")),
        (unreachable(), Resume("the gateway cannot be reached")),
        (
            refused(UnsupportedOperationError, CUT, ReasonCode.STREAM_BEHIND, last_event_id="41"),
            Resume("the gateway ended the stream: this client read it too slowly"),
        ),
        (
            http_error(429, {"Retry-After": "3"}),
            Resume("too many requests: wait a moment and send again", 3.0),
        ),
        (limited(), Unfollowed(LIMIT)),
        (
            http_error(401),
            Unfollowed("the gateway does not know who you are: check the participant or the token"),
        ),
        (TaskNotFoundError("task 'talk' not found"), Unfollowed("task 'talk' not found")),
        (refused(UnsupportedOperationError, ENDED, ReasonCode.TASK_ENDED), ReadInstead()),
    ],
)
def test_what_the_end_of_a_stream_means(
    error: BaseException | None, decision: Resume | Unfollowed | ReadInstead
) -> None:
    assert after_stream(error) == decision


@pytest.mark.parametrize("text", [LIMIT, ENDED, CUT])
def test_a_sentence_without_its_code_decides_nothing_and_is_shown_as_it_is(text: str) -> None:
    """The gateway's sentences may be reworded; only the code says what an end means."""
    assert after_stream(UnsupportedOperationError(text)) == Resume(text)


def test_a_code_this_version_does_not_know_is_no_code() -> None:
    error = UnsupportedOperationError(LIMIT, data={"reason": "a_code_from_a_later_gateway"})
    assert after_stream(error) == Resume(LIMIT)


def test_the_view_skips_the_status_of_an_update_not_after_the_version_it_applied() -> None:
    view = TaskView.of(task(7, state="TASK_STATE_WORKING"), "alice")
    view.take(said(9, "Planned."))
    stale = TaskStatusUpdateEvent(
        task_id="talk", status=TaskStatus(state=A2AState.TASK_STATE_WORKING)
    )
    stale.metadata.update({TASK_EXT_KEY: {"version": "8"}})
    view.take(StreamResponse(status_update=stale))
    view.take(said(9, "Planned.", A2AState.TASK_STATE_WORKING))  # a replay of version 9
    assert view.header == "INPUT_REQUIRED"
    assert view.version == 9
    assert lines(view) == ["agent: Planned."]


def test_a_note_on_the_last_change_shows_its_message_and_leaves_the_status() -> None:
    """A send's stream that ends on a quiet tick sends the gateway's note (a refusal, a
    command's reply) on the last change it showed, at that change's version."""
    view = TaskView.of(task(9, state="TASK_STATE_INPUT_REQUIRED"), "alice")
    note = TaskStatusUpdateEvent(
        task_id="talk",
        status=TaskStatus(
            state=A2AState.TASK_STATE_INPUT_REQUIRED,
            message=Message(
                message_id="refused-m1", role=Role.ROLE_AGENT, parts=[Part(text="refused: no.")]
            ),
        ),
    )
    note.metadata.update({TASK_EXT_KEY: {"version": "9"}})
    view.take(StreamResponse(status_update=note))
    assert lines(view) == ["harness: refused: no."]
    assert view.version == 9


def test_an_older_task_adds_only_the_messages_the_view_lacks() -> None:
    view = TaskView.of(task(7, "one", state="TASK_STATE_WORKING"), "alice")
    view.take(said(9, "Planned."))
    older = task(8, "one", state="TASK_STATE_WORKING")
    older.history.append(
        Message(message_id="m2", role=Role.ROLE_USER, parts=[Part(text="From bob.")])
    )
    view.take(StreamResponse(task=older))
    assert view.header == "INPUT_REQUIRED"
    assert lines(view) == ["agent: one", "agent: Planned.", "you: From bob."]


def test_events_without_a_version_are_applied_as_before() -> None:
    view = TaskView.of(task(7, state="TASK_STATE_WORKING"), "alice")
    view.take(
        StreamResponse(
            status_update=TaskStatusUpdateEvent(
                task_id="talk", status=TaskStatus(state=A2AState.TASK_STATE_INPUT_REQUIRED)
            )
        )
    )
    assert view.header == "INPUT_REQUIRED"
    assert view.version == 7
