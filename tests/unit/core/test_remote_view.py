"""The fold of what a remote agent sends into the sub-task's view, and the rule for when the
remote task has answered what was sent: every kind of event, a resumed turn, and the race of a
stale first event against the answer."""

from __future__ import annotations

import random

import pytest
from a2a.types import (
    Artifact,
    Message,
    Part,
    Role,
    StreamResponse,
    Task,
    TaskArtifactUpdateEvent,
    TaskStatus,
    TaskStatusUpdateEvent,
)
from a2a.types import TaskState as A2AState

from tiny_harness.core.extensions import STATUS_EXT_KEY
from tiny_harness.core.remote_view import RemoteView, kept_artifacts, remote_ref_of, reply_id
from tiny_harness.core.sizes import ARTIFACT_CHUNK_BYTES, CHUNK_BYTES, ENTRY_TEXT_BYTES
from tiny_harness.core.states import SubState, TaskState
from tiny_harness.core.turn import (
    RemoteArtifactEntry,
    RemoteRef,
    RemoteSentEntry,
    RemoteStatusEntry,
)


def agent_says(message_id: str, text: str) -> Message:
    return Message(message_id=message_id, role=Role.ROLE_AGENT, parts=[Part(text=text)])


def status(
    state: A2AState, message: Message | None = None, sub_state: str | None = None
) -> StreamResponse:
    update = TaskStatusUpdateEvent(task_id="r-1", context_id="c-1", status=TaskStatus(state=state))
    if message is not None:
        update.status.message.CopyFrom(message)
    if sub_state is not None:
        update.metadata.update({STATUS_EXT_KEY: {"sub_state": sub_state}})
    return StreamResponse(status_update=update)


def created(state: A2AState = A2AState.TASK_STATE_SUBMITTED) -> StreamResponse:
    return StreamResponse(task=Task(id="r-1", context_id="c-1", status=TaskStatus(state=state)))


def test_a_new_remote_task_is_followed_to_its_answer_once_it_waits_with_a_new_message() -> None:
    view = RemoteView.of(None)
    assert view.take(created())
    assert (view.task_id, view.context_id) == ("r-1", "c-1")
    assert not view.answered("")
    view.take(status(A2AState.TASK_STATE_WORKING))
    assert not view.answered("")
    view.take(
        status(
            A2AState.TASK_STATE_INPUT_REQUIRED,
            agent_says("m-1", "Which region?"),
            "awaiting-answer",
        )
    )
    assert view.answered("")
    assert (view.state, view.mirrored_sub_state) == (
        TaskState.INPUT_REQUIRED,
        SubState.AWAITING_ANSWER,
    )
    assert (view.message_id, view.result) == (reply_id("m-1"), "Which region?")
    assert [(r.id, r.text) for r in view.replies] == [("remote:m-1", "Which region?")]


def test_the_status_it_showed_before_the_send_is_not_the_answer() -> None:
    """After a restart the follow starts with the remote task as it is: still waiting with the
    message it showed before ours was sent, which is not its answer."""
    ref = RemoteRef(
        task_id="r-1",
        message_id="remote:m-1",
        state=TaskState.INPUT_REQUIRED,
        text="Which region?",
        said=("remote:m-1",),
    )
    view = RemoteView.of(ref)
    before = view.message_id
    stale = created(A2AState.TASK_STATE_INPUT_REQUIRED)
    stale.task.status.message.CopyFrom(agent_says("m-1", "Which region?"))
    stale.task.history.append(agent_says("m-1", "Which region?"))

    view.take(stale)

    assert not view.answered(before)
    assert view.replies == []  # what an earlier turn mirrored is not said again
    view.take(status(A2AState.TASK_STATE_COMPLETED, agent_says("m-2", "Europe grew 3%.")))
    assert view.answered(before)
    assert [r.text for r in view.replies] == ["Europe grew 3%."]


def test_an_answer_with_no_task_completes_the_exchange_with_that_answer() -> None:
    view = RemoteView.of(None)
    view.take(StreamResponse(message=agent_says("m-9", "Hello there.")))
    assert view.state is TaskState.COMPLETED
    assert view.answered("")
    assert view.result == "Hello there."
    assert view.task_id is None


def test_an_artifact_is_what_the_agent_said_and_the_result_when_no_status_text_is_given() -> None:
    view = RemoteView.of(None)
    view.take(created(A2AState.TASK_STATE_WORKING))
    update = TaskArtifactUpdateEvent(
        task_id="r-1",
        context_id="c-1",
        artifact=Artifact(artifact_id="a-1", parts=[Part(text="echo: hi")]),
    )
    view.take(StreamResponse(artifact_update=update))
    view.take(StreamResponse(artifact_update=update))  # once, however often it comes
    view.take(status(A2AState.TASK_STATE_COMPLETED))
    assert view.result == "echo: hi"
    assert [r.id for r in view.replies] == ["artifact:a-1"]


def test_a_remote_wait_without_our_sub_state_is_a_question() -> None:
    view = RemoteView.of(None)
    view.take(status(A2AState.TASK_STATE_INPUT_REQUIRED, agent_says("m-1", "Which?")))
    assert view.mirrored_sub_state is SubState.AWAITING_ANSWER
    view.take(status(A2AState.TASK_STATE_INPUT_REQUIRED, agent_says("m-2", "And?"), "odd"))
    assert view.mirrored_sub_state is SubState.AWAITING_ANSWER
    view.take(
        status(
            A2AState.TASK_STATE_INPUT_REQUIRED, agent_says("m-3", "Next?"), "awaiting-next-message"
        )
    )
    assert view.mirrored_sub_state is SubState.AWAITING_NEXT_MESSAGE


def test_an_unknown_remote_state_changes_nothing() -> None:
    view = RemoteView.of(None)
    view.take(status(A2AState.TASK_STATE_WORKING))
    assert not view.take(status(A2AState.TASK_STATE_UNSPECIFIED))
    assert view.state is TaskState.WORKING


def test_where_the_conversation_stands_is_read_from_the_journal_in_order() -> None:
    first = RemoteSentEntry(id="s-0", message_id="d-0", task_id="r-1", context_id="c-1")
    asked = RemoteStatusEntry(
        id="r-0",
        state=TaskState.INPUT_REQUIRED,
        sub_state="awaiting-answer",
        message_id="remote:m-1",
        text="Which?",
        replies=(),
    )
    again = RemoteSentEntry(id="s-1", message_id="d-1", task_id="r-1", before="remote:m-1")
    assert remote_ref_of([]) is None
    ref = remote_ref_of([first, asked, again])
    assert ref is not None
    assert (ref.task_id, ref.context_id, ref.message_id, ref.state) == (
        "r-1",
        "c-1",
        "remote:m-1",
        TaskState.INPUT_REQUIRED,
    )


@pytest.mark.parametrize("seed", range(50))
def test_a_stale_event_and_the_answer_in_any_order_answer_once_with_the_answer(seed: int) -> None:
    """A subscribe that starts late shows the task as it was before our send, or already
    answered; a stream may repeat what it sent. Whatever the order of stale, repeated and new
    events, the view answers only once the new message is in, and keeps each message once."""
    rng = random.Random(seed)
    ref = RemoteRef(task_id="r-1", message_id="remote:m-1", state=TaskState.INPUT_REQUIRED)
    stale = status(A2AState.TASK_STATE_INPUT_REQUIRED, agent_says("m-1", "Which?"))
    working = status(A2AState.TASK_STATE_WORKING)
    answer = status(A2AState.TASK_STATE_INPUT_REQUIRED, agent_says("m-2", "Europe, then."))
    events = [stale, working, stale] + [
        rng.choice([stale, working]) for _ in range(rng.randint(0, 4))
    ]
    rng.shuffle(events)
    view = RemoteView.of(ref)
    for event in events:
        view.take(event)
        assert not view.answered("remote:m-1")
    view.take(answer)
    view.take(answer)
    assert view.answered("remote:m-1")
    assert [r.text for r in view.replies] == ["Europe, then."]


def test_a_remote_reply_too_long_to_journal_is_cut_to_an_entry_and_says_so() -> None:
    view = RemoteView.of(None)
    view.take(created())
    long = "w" * (2 * ENTRY_TEXT_BYTES)
    view.take(status(A2AState.TASK_STATE_COMPLETED, agent_says("m-1", long)))
    [reply] = view.replies
    assert len(reply.text.encode()) <= ENTRY_TEXT_BYTES
    assert reply.text.endswith("[the remote reply was 512 KiB; only its first 256 KiB are kept]")
    entry = view.entry("t/remote-0", 0)
    assert len(entry.model_dump_json()) < CHUNK_BYTES


# -- a remote agent's artifacts, kept as the sub-task's own ------------------------------------


def artifact_update(
    artifact_id: str, *parts: Part, append: bool = False, name: str = "report"
) -> StreamResponse:
    update = TaskArtifactUpdateEvent(
        task_id="r-1",
        context_id="c-1",
        artifact=Artifact(artifact_id=artifact_id, name=name, parts=list(parts)),
        append=append,
    )
    return StreamResponse(artifact_update=update)


def test_a_remote_artifact_is_kept_as_chunks_appended_in_order_and_each_once() -> None:
    view = RemoteView.of(None)
    view.take(artifact_update("a-1", Part(text="Part one.")))
    view.take(artifact_update("a-1", Part(text="Part two."), append=True))
    view.take(artifact_update("a-1", Part(text="Part two."), append=True))  # a later chunk

    chunks = [chunk for chunk, _ in view.chunks]
    assert [(c.artifact_id, c.name, c.append) for c in chunks] == [
        ("a-1", "report", False),
        ("a-1", "report", True),
        ("a-1", "report", True),
    ]
    assert [c.parts[0].text for c in chunks] == ["Part one.", "Part two.", "Part two."]


def test_a_poll_that_shows_a_kept_artifact_again_keeps_nothing_and_a_changed_one_again() -> None:
    view = RemoteView.of(None)
    task = Task(id="r-1", context_id="c-1", status=TaskStatus(state=A2AState.TASK_STATE_WORKING))
    task.artifacts.append(
        Artifact(
            artifact_id="a-1",
            name="chart",
            parts=[Part(raw=b"\x89PNG", media_type="image/png", filename="chart.png")],
        )
    )
    view.take(StreamResponse(task=task))
    view.take(StreamResponse(task=task))
    [(chunk, digest)] = view.chunks
    assert chunk.parts[0].file is not None
    assert (chunk.parts[0].file.name, chunk.parts[0].file.raw()) == ("chart.png", b"\x89PNG")

    # The next turn starts from what the journal kept: the same artifact is not kept again.
    sent = RemoteSentEntry(id="t/turn-1/sent-0", message_id="m", task_id="r-1")
    kept = RemoteArtifactEntry(id="t/turn-1/artifact-0", artifact=chunk, digest=digest)
    later = RemoteView.of(remote_ref_of([sent, kept]))
    later.take(StreamResponse(task=task))
    assert later.chunks == []
    task.artifacts[0].parts.append(Part(text="A caption."))
    later.take(StreamResponse(task=task))
    assert [(c.append, len(c.parts)) for c, _ in later.chunks] == [(False, 2)]


def test_kept_chunks_make_the_sub_tasks_index_within_its_bounds() -> None:
    view = RemoteView.of(None)
    view.take(artifact_update("a-1", Part(text="x" * 100)))
    view.take(artifact_update("a-1", Part(text="y" * 50), append=True))
    entries = [
        RemoteArtifactEntry(id=f"t/turn-2/artifact-{i}", artifact=chunk, digest=digest)
        for i, (chunk, digest) in enumerate(view.chunks)
    ]

    [row] = kept_artifacts((), entries, turn=2)

    assert (row.artifact_id, row.name, row.size) == ("a-1", "report", 150)
    assert [(ref.turn, ref.entry) for ref in row.chunks] == [(2, "artifact-0"), (2, "artifact-1")]


def test_a_remote_chunk_too_large_to_keep_is_said_instead() -> None:
    view = RemoteView.of(None)
    view.take(artifact_update("a-1", Part(text="z" * (ARTIFACT_CHUNK_BYTES + 1))))

    assert view.chunks == []
    assert view.replies[-1].text == (
        "The agent's artifact 'report' sent 262,145 bytes at once, more than this installation "
        "keeps in one piece (262,144 bytes): it was not kept."
    )
