"""The gateway's checks before anything is written, on tasks as the store reads them.

"May this participant end the task?" is the operator's question
(:func:`tiny_harness.core.speakers.refuse_ending`); the gateway asks it first only to answer
with an A2A error instead of a refusal in the history, so both must give the same answer for
every role.
"""

from __future__ import annotations

import pytest
from a2a.types import TaskState
from a2a.utils.errors import InvalidParamsError, TaskNotFoundError, UnsupportedOperationError

from tiny_harness.a2a_gateway.policy import require_ending_role, validate_status_filter
from tiny_harness.core.speakers import refuse_ending
from tiny_harness.core.task import Participant, Role, TaskLink, TaskSpec
from tiny_harness.kube.participant_view import ParticipantView

SPEC = TaskSpec(
    goal="ship the release",
    participants=(
        Participant(id="alice", role=Role.ASSIGNEE),
        Participant(id="bob", role=Role.WATCHER),
        Participant(id="carol", role=Role.REPORTER),
        Participant(id="dave", role=Role.ADMIN),
    ),
    parent=TaskLink(task_id="boss"),
)
TASK = ParticipantView(
    {
        "metadata": {"name": "release", "resourceVersion": "1"},
        "spec": SPEC.model_dump(mode="json", by_alias=True, exclude_none=True),
    }
)


@pytest.mark.parametrize("who", ["alice", "bob", "carol", "dave", "task:boss"])
@pytest.mark.parametrize("action", ["complete", "cancel"])
def test_the_gateway_refuses_an_ending_exactly_when_the_operator_would(
    who: str, action: str
) -> None:
    operator_says = refuse_ending(SPEC, who, action)

    if operator_says is None:
        require_ending_role(TASK, who, action)
    else:
        with pytest.raises(UnsupportedOperationError) as refused:
            require_ending_role(TASK, who, action)
        assert refused.value.message == f"{operator_says}; ask its assignee or reporter"


def test_someone_not_on_the_task_is_told_it_does_not_exist() -> None:
    with pytest.raises(TaskNotFoundError, match="'release' not found"):
        require_ending_role(TASK, "mallory", "cancel")


@pytest.mark.parametrize(
    "raw", [None, "", "TASK_STATE_WORKING", "TASK_STATE_INPUT_REQUIRED", 3, "3"]
)
def test_a_status_filter_that_names_a_task_state_passes(raw: object) -> None:
    validate_status_filter(raw)


@pytest.mark.parametrize(
    "raw", ["WORKING", "TASK_STATE_BOGUS", "working", 999, "999", -1, True, 2.5, ["x"], {"a": 1}]
)
def test_a_status_filter_that_is_not_a_task_state_is_invalid_params_naming_the_field(
    raw: object,
) -> None:
    with pytest.raises(InvalidParamsError) as refused:
        validate_status_filter(raw)

    assert refused.value.message.startswith(f"status: {raw!r} is not a task state")
    assert "TASK_STATE_WORKING" in refused.value.message
    assert "TASK_STATE_UNSPECIFIED" not in refused.value.message


def test_the_state_names_listed_are_the_protocols() -> None:
    with pytest.raises(InvalidParamsError) as refused:
        validate_status_filter("nope")
    listed = refused.value.message.split("use one of ")[1].split(", ")
    assert sorted(listed) == sorted(n for n in TaskState.keys() if n != "TASK_STATE_UNSPECIFIED")  # noqa: SIM118
