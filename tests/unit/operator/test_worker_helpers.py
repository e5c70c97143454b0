"""The worker's pure helpers: reading turn records back, and writing a failure a participant
can act on.

Records can hold the same entry twice (two replicas racing on a notice, a journal chunk
re-read after a takeover), and a turn can be cut before it ended; the next turn must still
start from the history the model actually saw. A failed task must say why on its status, and
say it no longer once a participant's message resumes it.
"""

from __future__ import annotations

import datetime as dt
from typing import Any, Literal

import pytest

from tiny_harness.core.decide import Pending, may_cut
from tiny_harness.core.history import AckEntry, HistoryDelta, NoticeEntry, RecordEntry
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.llm import ChatMessage, LLMResponse, ToolCall
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.sizes import CONDITION_CHARS, STATUS_TEXT_CHARS
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Condition, Lifecycle, Runner, TaskStatus
from tiny_harness.core.turn import DrainEntry, InboundMessage, ModelEntry, ToolEntry
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.kube.messages import StoredMessage
from tiny_harness.kube.names import FIRST_MESSAGE_ANNOTATION
from tiny_harness.models.call_errors import ModelUnavailableError
from tiny_harness.operator.snapshot import (
    Snapshot,
    awaited_first_message,
    first_message_wait,
    history_before,
    unique_entries,
)
from tiny_harness.operator.status_writes import bounded, failed_status, resumed_conditions
from tiny_harness.operator.supervisor import failure_text

USER_HELLO = ChatMessage(role="user", content="hello")
AGENT_HI = ChatMessage(role="assistant", content="hi, what shall I do?")


def record(
    turn: int,
    *entries: RecordEntry,
    chunk: int = 0,
    history: HistoryDelta | None = None,
) -> TurnRecord:
    suffix = f"-t{turn}" + (f"-c{chunk}" if chunk else "")
    return TurnRecord(
        name=f"release{suffix}",
        task="release",
        turn=turn,
        chunk=chunk,
        entries=entries,
        history=history,
        size=0,
    )


def notice(entry_id: str, text: str) -> NoticeEntry:
    return NoticeEntry(id=entry_id, text=text)


def drain(entry_id: str, message_id: str, text: str) -> DrainEntry:
    return DrainEntry(
        id=entry_id, messages=(InboundMessage(id=message_id, content=text, sender="alice"),)
    )


def first_turn() -> TurnRecord:
    """Turn 1, ended: the model history gained alice's greeting and the agent's answer."""
    return record(
        1,
        drain("release/turn-1/drain-0", "m1", "hello"),
        history=HistoryDelta(keep=0, messages=(USER_HELLO, AGENT_HI)),
    )


# -- unique_entries -------------------------------------------------------------------------------


def test_every_entry_is_kept_once_in_record_order() -> None:
    records = [
        record(1, notice("n1", "first"), notice("n2", "second")),
        record(2, notice("n3", "third")),
    ]

    assert [e.id for e in unique_entries(records)] == ["n1", "n2", "n3"]


def test_the_first_copy_of_a_duplicated_entry_stands() -> None:
    records = [
        record(1, notice("cmd-m5", "model is now gpt-5 (replica a)")),
        record(1, notice("cmd-m5", "model is now gpt-5 (replica b)"), notice("n9", "x"), chunk=1),
    ]

    entries = unique_entries(records)

    assert [e.id for e in entries] == ["cmd-m5", "n9"]
    assert isinstance(entries[0], NoticeEntry)
    assert entries[0].text == "model is now gpt-5 (replica a)"


def test_no_records_have_no_entries() -> None:
    assert unique_entries([]) == []


# -- history_before -------------------------------------------------------------------------------


def test_the_first_turn_starts_from_an_empty_history() -> None:
    assert history_before([first_turn()], 1) == ()


def test_an_ended_turns_delta_is_applied() -> None:
    assert history_before([first_turn()], 2) == (USER_HELLO, AGENT_HI)


def test_a_cut_turn_is_replayed_from_its_journal_with_its_open_call_answered() -> None:
    call = ToolCall(id="call-1", name="shell", arguments_json='{"cmd": "make test"}')
    cut = record(
        2,
        AckEntry(id="ack-m3", message_id="m3", sender="bob", text="/model gpt-5"),
        notice("cmd-m3", "model is now gpt-5"),
        drain("release/turn-2/drain-0", "m2", "run the tests"),
        ModelEntry(
            id="release/turn-2/model-0",
            response=LLMResponse(text="running them", tool_calls=(call,)),
        ),
    )

    history = history_before([first_turn(), cut], 3)

    assert history[:4] == (
        USER_HELLO,
        AGENT_HI,
        ChatMessage(role="user", content="run the tests"),
        ChatMessage(role="assistant", content="running them", tool_calls=(call,)),
    )
    answer = history[4]
    assert (answer.role, answer.tool_call_id, answer.is_error) == ("tool", "call-1", True)
    assert "cut" in answer.content
    assert len(history) == 5, "commands and their replies never reach the model"


def test_a_cut_turns_journal_copied_into_two_chunks_is_replayed_once() -> None:
    message = drain("release/turn-2/drain-0", "m2", "run the tests")
    cut = [record(2, message), record(2, message, chunk=1)]

    history = history_before([first_turn(), *cut], 3)

    assert history == (USER_HELLO, AGENT_HI, ChatMessage(role="user", content="run the tests"))


def test_a_cut_turn_with_a_finished_tool_call_is_replayed_with_its_result() -> None:
    call = ToolCall(id="call-1", name="shell")
    cut = record(
        2,
        drain("release/turn-2/drain-0", "m2", "run the tests"),
        ModelEntry(id="release/turn-2/model-0", response=LLMResponse(tool_calls=(call,))),
        ToolEntry(id="release/turn-2/tool-0-call-1", call_id="call-1", name="shell", content="ok"),
    )

    history = history_before([first_turn(), cut], 3)

    assert history[-1] == ChatMessage(role="tool", content="ok", tool_call_id="call-1")


def test_an_ended_turns_delta_in_its_last_chunk_is_used_rather_than_its_journal() -> None:
    answer = ChatMessage(role="assistant", content="all tests pass")
    turn_2 = [
        record(2, drain("release/turn-2/drain-0", "m2", "run the tests")),
        record(
            2,
            chunk=1,
            history=HistoryDelta(
                keep=2, messages=(ChatMessage(role="user", content="run the tests"), answer)
            ),
        ),
    ]

    history = history_before([first_turn(), *turn_2], 3)

    assert history == (
        USER_HELLO,
        AGENT_HI,
        ChatMessage(role="user", content="run the tests"),
        answer,
    )


def test_a_compacting_delta_replaces_the_head_of_the_history() -> None:
    summary = ChatMessage(role="user", content="summary: alice greeted the agent")
    compacted = record(2, history=HistoryDelta(keep=0, messages=(summary,)))
    after = record(
        3, history=HistoryDelta(keep=1, messages=(ChatMessage(role="assistant", content="ok"),))
    )

    history = history_before([first_turn(), compacted, after], 4)

    assert history == (summary, ChatMessage(role="assistant", content="ok"))


def test_the_turn_itself_and_later_turns_are_left_out() -> None:
    later = record(
        2, history=HistoryDelta(keep=2, messages=(ChatMessage(role="user", content="later"),))
    )

    assert history_before([first_turn(), later], 2) == (USER_HELLO, AGENT_HI)
    assert history_before([later, first_turn()], 1) == ()


# -- failed_status and resumed_conditions ---------------------------------------------------------


def conditions_by_type(patch: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {c["type"]: c for c in patch["conditions"]}


#: When the conditions these tests start from last turned.
EARLIER = "2026-11-30T15:00:00Z"


def condition(
    type_: str, status: Literal["True", "False"], reason: str, message: str = ""
) -> Condition:
    return Condition(
        type=type_, status=status, reason=reason, message=message, last_transition_time=EARLIER
    )


def test_a_failure_ends_the_task_in_failed_and_frees_the_runner() -> None:
    status = TaskStatus(
        state=TaskState.WORKING,
        sub_state="awaiting-answer",
        runner=Runner(holder="replica-a", renew_time="2026-11-30T16:00:00Z", epoch=2),
        observed_generation=3,
    )

    patch = failed_status(status, "ModelUnavailable", "The model call failed: openai: 503.")

    assert patch["state"] == "TASK_STATE_FAILED"
    # Written as nulls, so the merge patch clears them rather than leaving them be.
    assert ("subState", None) in patch.items()
    assert ("runner", None) in patch.items()
    assert patch["message"] == "The model call failed: openai: 503."
    error = conditions_by_type(patch)["Error"]
    assert error["status"] == "True"
    assert error["reason"] == "ModelUnavailable"
    assert error["message"] == "The model call failed: openai: 503."
    assert error["observedGeneration"] == 3
    assert error["lastTransitionTime"].endswith("Z")


def test_a_failure_replaces_an_earlier_error_and_keeps_other_conditions() -> None:
    status = TaskStatus(
        state=TaskState.WORKING,
        conditions=(
            condition("Accepted", "True", "Valid"),
            condition("Error", "False", "Resumed"),
        ),
    )

    patch = failed_status(status, "OperatorError", "The operator could not work on this task.")

    assert [c["type"] for c in patch["conditions"]] == ["Accepted", "Error"]
    by_type = conditions_by_type(patch)
    assert by_type["Accepted"] == {
        "type": "Accepted",
        "status": "True",
        "reason": "Valid",
        "message": "",
        "lastTransitionTime": EARLIER,
    }
    assert by_type["Error"]["status"] == "True"
    assert by_type["Error"]["reason"] == "OperatorError"


def test_a_very_long_failure_message_is_cut_to_what_the_status_holds() -> None:
    patch = bounded(failed_status(TaskStatus(), "OperatorError", "x" * 100_000))

    assert len(patch["message"]) == STATUS_TEXT_CHARS
    assert patch["message"].endswith("the whole text is in the task's history]")
    assert len(conditions_by_type(patch)["Error"]["message"]) == CONDITION_CHARS
    Condition.model_validate(patch["conditions"][0])  # still a valid condition


def test_a_patch_with_short_texts_is_written_as_it_is() -> None:
    patch = {"state": "TASK_STATE_WORKING", "message": "On it."}
    assert bounded(patch) == patch


def test_resuming_turns_the_error_off_and_says_why() -> None:
    conditions = (
        condition("Accepted", "True", "Valid"),
        condition("Error", "True", "ModelUnavailable", "503"),
    )

    resumed = resumed_conditions(conditions)

    assert resumed is not None
    by_type = {c["type"]: c for c in resumed}
    assert by_type["Error"]["status"] == "False"
    assert by_type["Error"]["reason"] == "Resumed"
    assert "resumed" in by_type["Error"]["message"]
    assert by_type["Accepted"]["status"] == "True"


@pytest.mark.parametrize(
    "conditions",
    [
        (),
        (condition("Accepted", "True", "Valid"),),
        (condition("Error", "False", "Resumed"),),
    ],
)
def test_resuming_without_an_active_error_changes_nothing(
    conditions: tuple[Condition, ...],
) -> None:
    assert resumed_conditions(conditions) is None


# -- failure_text ---------------------------------------------------------------------------------


def test_a_failed_conversation_tells_its_participants_how_to_go_on() -> None:
    exc = ModelUnavailableError(
        "openai", "HTTP 503", status=503, attempts=4, reason="ModelUnavailable"
    )

    assert failure_text(exc, Lifecycle.CONVERSATION) == (
        "The model call failed: openai: HTTP 503. Send a message to try again once it is fixed."
    )
    assert failure_text(exc, Lifecycle.DELEGATED) == "The model call failed: openai: HTTP 503."


# -- may_cut (row T2 of decide_during_turn) --------------------------------------------------


def snapshot() -> Snapshot:
    obj: dict[str, Any] = {
        "metadata": {"name": "release-docs", "namespace": "team-a", "resourceVersion": "7"},
        "spec": {
            "goal": "write the docs",
            "participants": [
                {"id": "alice", "role": "assignee"},
                {"id": "bob", "role": "watcher"},
                {"id": "carol", "role": "reporter"},
            ],
            "parent": {"taskId": "release"},
        },
        "status": {"state": "TASK_STATE_WORKING", "turn": 1},
    }
    return Snapshot(obj, [], [], [])


@pytest.mark.parametrize(
    ("sender", "cuts"),
    [("alice", True), ("carol", True), ("task:release", True), ("bob", False), ("mallory", False)],
)
def test_only_a_control_its_sender_may_give_cuts_a_running_turn(sender: str, cuts: bool) -> None:
    assert may_cut(snapshot().spec, Pending("c1", sender, "control", "cancel")) is cuts


# -- the first message a task's creator announced (row 11 of decide) ------------------------------


def announced(
    message_id: str | None,
    *pending: str,
    records: tuple[TurnRecord, ...] = (),
    state: str = "TASK_STATE_SUBMITTED",
) -> Snapshot:
    obj: dict[str, Any] = {
        "metadata": {
            "name": "release",
            "resourceVersion": "3",
            "annotations": {FIRST_MESSAGE_ANNOTATION: message_id} if message_id else {},
        },
        "spec": {"goal": "ship it", "participants": [{"id": "alice", "role": "assignee"}]},
        "status": {"state": state, "startTime": "2026-11-30T12:00:00Z"},
    }
    messages = [
        StoredMessage(
            name=f"release-{mid}",
            spec=MessageSpec(
                task="release", message_id=mid, sender="alice", parts=(MessagePart(text="hi"),)
            ),
            created="",
            resource_version="4",
        )
        for mid in pending
    ]
    return Snapshot(obj, list(records), messages, [])


def test_an_announced_first_message_is_awaited_until_it_is_seen() -> None:
    assert awaited_first_message(announced("m-first")) == "m-first"
    assert awaited_first_message(announced("m-first", "m-other")) == "m-first"


def test_an_announced_first_message_that_is_pending_or_taken_is_no_longer_awaited() -> None:
    taken = record(1, drain("d1", "m-first", "hi"))

    assert awaited_first_message(announced("m-first", "m-first")) is None
    assert awaited_first_message(announced("m-first", records=(taken,))) is None


def test_a_task_without_the_annotation_awaits_no_first_message() -> None:
    assert awaited_first_message(announced(None)) is None


def test_the_wait_for_an_announced_first_message_runs_from_the_start_while_submitted() -> None:
    settings = OperatorSettings(first_message_seconds=30)
    ten_in = dt.datetime(2026, 11, 30, 12, 0, 10, tzinfo=dt.UTC)

    assert first_message_wait(announced("m-first"), settings, ten_in) == 20.0
    assert first_message_wait(announced("m-first", "m-first"), settings, ten_in) is None
    assert first_message_wait(announced(None), settings, ten_in) is None
    parked = announced("m-first", state="TASK_STATE_INPUT_REQUIRED")
    assert first_message_wait(parked, settings, ten_in) is None
