"""A stored object the models cannot read is skipped by every reader, and flagged: a warning
naming it and the reason (never its content), and the component's count. The readers are
tried against a stand-in API server whose listing holds one bad object among good ones."""

from __future__ import annotations

import logging
from typing import Any

import pytest
from pydantic import ValidationError

from tests.unit.kube.fake_api import FakeCollection, serving
from tiny_harness.core.inbox import MessageSpec
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.kube.names import KIND, MESSAGE_KIND, MESSAGE_PLURAL, TURN_KIND, TURN_PLURAL
from tiny_harness.kube.unreadable import parsed, reason_of

NS = "team-a"
TASK_UID = "uid-release"
TASK: dict[str, Any] = {
    "metadata": {"name": "release", "uid": TASK_UID, "creationTimestamp": "2026-01-01T00:00:00Z"}
}
SECRET = "the launch code is 0000"


def owned() -> dict[str, Any]:
    return {"ownerReferences": [{"kind": KIND, "name": "release", "uid": TASK_UID}]}


def message_spec(message_id: str, **spec: Any) -> dict[str, Any]:
    return {"task": "release", "messageId": message_id, "sender": "alice", **spec}


def messages(*specs: dict[str, Any]) -> FakeCollection:
    collection = FakeCollection(NS, MESSAGE_PLURAL)
    for i, spec in enumerate(specs):
        obj = collection.put(f"release-m-{i}", spec=spec)
        obj["metadata"] |= owned() | {"creationTimestamp": f"2026-01-01T00:00:0{i + 1}Z"}
    return collection


class Counted:
    """A component's metrics, as the readers tell them."""

    def __init__(self) -> None:
        self.kinds: list[str] = []

    def __call__(self, kind: str) -> None:
        self.kinds.append(kind)


# -- the one place that decides ------------------------------------------------------------


def test_an_object_that_parses_is_returned_and_nothing_is_flagged(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted = Counted()
    obj = {"metadata": {"name": "m", "namespace": NS}, "spec": message_spec("a", control="cancel")}

    message = parsed(obj, StoredMessage.of, kind=MESSAGE_KIND, skipped=counted)

    assert message is not None
    assert message.spec.control == "cancel"
    assert counted.kinds == []
    assert caplog.records == []


def test_an_object_that_does_not_parse_is_none_with_a_warning_naming_it_and_a_count(
    caplog: pytest.LogCaptureFixture,
) -> None:
    counted = Counted()
    spec = message_spec("a", parts=[{"text": SECRET, "data": {"k": SECRET}}])
    obj = {"metadata": {"name": "release-m-1", "namespace": NS}, "spec": spec}

    with caplog.at_level(logging.WARNING):
        message = parsed(obj, StoredMessage.of, kind=MESSAGE_KIND, skipped=counted)

    assert message is None
    assert counted.kinds == [MESSAGE_KIND]
    [warning] = caplog.records
    assert warning.levelno == logging.WARNING
    said = warning.getMessage()
    assert f"HarnessMessage {NS}/release-m-1 cannot be read, skipped" in said
    assert "parts.0: Value error, spec.parts: each part has one of text, data, raw or url" in said
    assert SECRET not in said


def test_the_reason_is_the_fields_and_what_is_wrong_never_the_values() -> None:
    with pytest.raises(ValidationError) as caught:
        MessageSpec.model_validate(message_spec("a", control=SECRET, sender=""))

    reason = reason_of(caught.value)

    assert "sender: String should have at least 1 character" in reason
    assert "control: Input should be 'complete' or 'cancel'" in reason
    assert SECRET not in reason


def test_a_reason_of_many_problems_lists_the_first_ones_and_counts_the_rest() -> None:
    parts = [{"text": "a", "data": {}}] * 5
    with pytest.raises(ValidationError) as caught:
        MessageSpec.model_validate(message_spec("a", parts=parts))

    reason = reason_of(caught.value)

    assert reason.count("each part has one of text, data, raw or url") == 3
    assert reason.endswith("; and 2 more")


def test_a_missing_key_is_named_and_another_error_only_by_its_type() -> None:
    assert reason_of(KeyError("turn")) == "turn: missing"
    assert reason_of(ValueError(f"invalid literal for int(): {SECRET!r}")) == "ValueError"


# -- the readers ----------------------------------------------------------------------------


async def test_a_tasks_messages_leave_out_one_that_cannot_be_read_and_count_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collection = messages(
        message_spec("first", parts=[{"text": "Hello."}]),
        message_spec("written-before-the-rule", parts=[]),
        message_spec("last", control="complete"),
    )
    counted = Counted()

    async with serving(collection) as api:
        with caplog.at_level(logging.WARNING):
            read = await HarnessMessages(api, NS, skipped=counted).for_task(TASK)

    assert [m.spec.message_id for m in read] == ["first", "last"]
    assert counted.kinds == [MESSAGE_KIND]
    assert f"HarnessMessage {NS}/release-m-1 cannot be read" in caplog.text


async def test_one_message_that_cannot_be_read_is_none() -> None:
    collection = messages(message_spec("written-before-the-rule"))
    counted = Counted()

    async with serving(collection) as api:
        read = await HarnessMessages(api, NS, skipped=counted).get("release-m-0")

    assert read is None
    assert counted.kinds == [MESSAGE_KIND]


async def test_a_tasks_turn_records_leave_out_one_that_cannot_be_read_and_count_it(
    caplog: pytest.LogCaptureFixture,
) -> None:
    collection = FakeCollection(NS, TURN_PLURAL)
    entries = {
        "release-t1": [{"kind": "notice", "id": "n1", "text": "One."}],
        "release-t2": [{"kind": "no-such-entry", "text": SECRET}],
        "release-t3": [{"kind": "notice", "id": "n3", "text": "Three."}],
    }
    for turn, (name, listed) in enumerate(entries.items(), start=1):
        obj = collection.put(name, spec={"task": "release", "turn": turn, "entries": listed})
        obj["metadata"] |= owned()
    counted = Counted()

    async with serving(collection) as api:
        with caplog.at_level(logging.WARNING):
            read = await TurnRecords(api, NS, skipped=counted).for_task(TASK)

    assert [r.turn for r in read] == [1, 3]
    assert counted.kinds == [TURN_KIND]
    assert f"HarnessTurn {NS}/release-t2 cannot be read" in caplog.text
    assert SECRET not in caplog.text


def test_a_reader_without_metrics_still_warns(caplog: pytest.LogCaptureFixture) -> None:
    obj = {"metadata": {"name": "release-t1", "namespace": NS}, "spec": {"task": "release"}}

    with caplog.at_level(logging.WARNING):
        assert TurnRecord.read(obj) is None

    assert f"HarnessTurn {NS}/release-t1 cannot be read, skipped: turn: missing" in caplog.text
