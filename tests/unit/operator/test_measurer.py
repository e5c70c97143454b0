"""What the operator writes on a message its participant wrote (``operator/measurer.py``): the
bytes it carries, measured as the gateway measures, and the sender label when it has none;
nothing on a message that has both, or whose spec does not read."""

from __future__ import annotations

from typing import Any

from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.sizes import message_bytes
from tiny_harness.kube.labels import label_value
from tiny_harness.kube.names import BYTES_ANNOTATION, SENDER_LABEL, TASK_LABEL
from tiny_harness.operator.measurer import measurement

SPEC = MessageSpec(
    task="release", message_id="m1", sender="alice", parts=(MessagePart(text="ship it"),)
)


def stored(labels: dict[str, str], annotations: dict[str, str] | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": "m1", "labels": labels}
    if annotations is not None:
        meta["annotations"] = annotations
    return {"metadata": meta, "spec": SPEC.model_dump(mode="json", by_alias=True)}


def test_a_message_sent_as_its_participant_is_given_its_measured_bytes() -> None:
    patch = measurement(stored({TASK_LABEL: "release", SENDER_LABEL: "alice"}))

    assert patch == {"metadata": {"annotations": {BYTES_ANNOTATION: str(message_bytes(SPEC))}}}


def test_a_sender_whose_id_is_no_label_value_is_labelled_with_its_hash() -> None:
    account = "system:serviceaccount:team:alice"
    spec = SPEC.model_copy(update={"sender": account})
    obj = stored({TASK_LABEL: "release"})
    obj["spec"] = spec.model_dump(mode="json", by_alias=True)

    patch = measurement(obj)

    assert patch is not None
    assert patch["metadata"]["labels"] == {SENDER_LABEL: label_value(account)}
    assert label_value(account).startswith("h-")


def test_a_message_the_harness_wrote_is_left_as_it_is() -> None:
    obj = stored({SENDER_LABEL: "alice"}, {BYTES_ANNOTATION: "7"})

    assert measurement(obj) is None


def test_a_message_whose_spec_does_not_read_is_left_counted_high() -> None:
    obj = stored({SENDER_LABEL: "alice"})
    obj["spec"] = {"task": "release"}

    assert measurement(obj) is None
