"""Status conditions as the API conventions define them (metav1.Condition): every field the
convention requires is required, a condition's time moves only when its status does, the
operator's own writes keep to that, and the generated CRDs declare the list a map by type."""

from __future__ import annotations

from typing import Any, Literal

import pytest
from pydantic import ValidationError

from tiny_harness.core.conditions import Condition, set_condition
from tiny_harness.core.task import TaskStatus
from tiny_harness.kube.crd import crd_manifests
from tiny_harness.operator.status_writes import failed_status, resumed_conditions

EARLIER = "2026-11-30T15:00:00Z"
LATER = "2026-11-30T16:00:00Z"


def condition(
    type_: str,
    status: Literal["True", "False", "Unknown"],
    reason: str,
    message: str = "",
    at: str = EARLIER,
    generation: int | None = None,
) -> Condition:
    return Condition(
        type=type_,
        status=status,
        reason=reason,
        message=message,
        last_transition_time=at,
        observed_generation=generation,
    )


def test_a_new_type_is_added_at_the_end() -> None:
    accepted = condition("Accepted", "True", "Initialised")

    assert set_condition((accepted,), condition("Error", "True", "OperatorError", at=LATER)) == (
        accepted,
        condition("Error", "True", "OperatorError", at=LATER),
    )


def test_the_same_status_keeps_its_transition_time_and_takes_the_new_words() -> None:
    before = (condition("Ready", "False", "Unreachable", "gone", generation=1),)

    after = set_condition(before, condition("Ready", "False", "Timeout", "slow", LATER, 2))

    assert after == (condition("Ready", "False", "Timeout", "slow", EARLIER, 2),)


def test_a_changed_status_takes_the_new_transition_time_in_the_same_place() -> None:
    before = (condition("Error", "True", "OperatorError"), condition("Accepted", "True", "Ok"))

    after = set_condition(before, condition("Error", "False", "Resumed", at=LATER))

    assert [(c.type, c.status, c.last_transition_time) for c in after] == [
        ("Error", "False", LATER),
        ("Accepted", "True", EARLIER),
    ]


def test_a_second_failure_does_not_move_the_errors_transition_time() -> None:
    failed = TaskStatus(conditions=(condition("Error", "True", "ModelUnavailable", "503"),))

    patch = failed_status(failed, "OperatorError", "The operator could not work on this task.")

    [error] = patch["conditions"]
    assert (error["reason"], error["lastTransitionTime"]) == ("OperatorError", EARLIER)
    assert error["message"] == "The operator could not work on this task."


def test_resuming_turns_the_error_off_at_a_new_time() -> None:
    [error] = resumed_conditions((condition("Error", "True", "ModelUnavailable", "503"),)) or []

    assert (error["status"], error["reason"]) == ("False", "Resumed")
    assert error["lastTransitionTime"] != EARLIER
    assert error["message"]


@pytest.mark.parametrize(
    ("missing", "field"),
    [("reason", "reason"), ("message", "message"), ("last_transition_time", "lastTransitionTime")],
)
def test_every_field_the_convention_requires_is_required(missing: str, field: str) -> None:
    fields: dict[str, Any] = {
        "type": "Ready",
        "status": "True",
        "reason": "Ready",
        "message": "",
        "last_transition_time": EARLIER,
    }
    del fields[missing]

    with pytest.raises(ValidationError, match=field):
        Condition(**fields)


@pytest.mark.parametrize("reason", ["", "not camel case", "9Lives", "Trailing:"])
def test_a_reason_is_a_camel_case_word_as_programs_match_it(reason: str) -> None:
    with pytest.raises(ValidationError, match="reason"):
        condition("Ready", "True", reason)


@pytest.mark.parametrize(
    "file", ["harnesstasks.yaml", "harnessagents.yaml", "harnesstoolservers.yaml"]
)
def test_each_crds_conditions_are_a_list_map_keyed_by_type(file: str) -> None:
    [version] = crd_manifests()[file]["spec"]["versions"]
    status = version["schema"]["openAPIV3Schema"]["properties"]["status"]

    conditions = status["properties"]["conditions"]

    assert conditions["x-kubernetes-list-type"] == "map"
    assert conditions["x-kubernetes-list-map-keys"] == ["type"]
    item = conditions["items"]
    assert item["required"] == ["type", "status", "reason", "message", "lastTransitionTime"]
    assert item["properties"]["lastTransitionTime"]["format"] == "date-time"
    assert item["properties"]["reason"]["pattern"] == r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$"
    assert "observedGeneration" not in item["required"]
