"""The walking skeleton on a real control plane: the CRD, the API server's validation, and the
operator initialising tasks."""

from __future__ import annotations

import textwrap
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import Kubectl, ModelServer, OperatorProcess
from tests.eventually import eventually
from tiny_harness.kube.crd import REPO_ROOT

EXAMPLE = (REPO_ROOT / "examples" / "task.yaml").read_text()


def task_manifest(name: str, spec: str) -> str:
    return textwrap.dedent(
        f"""\
        apiVersion: tiny-harness.madarauchiha-314.github.io/v1alpha1
        kind: HarnessTask
        metadata:
          name: {name}
        spec:
        """
    ) + textwrap.indent(textwrap.dedent(spec), "  ")


def status_of(kubectl: Kubectl, name: str) -> dict[str, Any]:
    obj = kubectl.get_json("ht", name)
    return dict(obj.get("status") or {})


def wait_state(kubectl: Kubectl, name: str, state: str) -> dict[str, Any]:
    return eventually(
        lambda: (s := status_of(kubectl, name)).get("state") == state and s,
        within=20,
        what=f"{name} to reach {state}",
    )


async def test_applied_example_task_is_initialised_as_a_conversation_and_parks(
    kubectl: Kubectl, operator: Callable[..., OperatorProcess], model_server: ModelServer
) -> None:
    operator()
    applied = kubectl.apply(EXAMPLE)
    assert applied.returncode == 0, applied.stderr

    status = wait_state(kubectl, "hello-harness", "TASK_STATE_INPUT_REQUIRED")

    assert status["subState"] == "awaiting-next-message"
    assert status["lifecycle"] == "conversation"
    assert status["model"] == "scripted-model"
    assert await model_server.control.requests() == []
    accepted = next(c for c in status["conditions"] if c["type"] == "Accepted")
    assert accepted["status"] == "True"
    assert status["observedGeneration"] == 1
    events = eventually(
        lambda: [
            e
            for e in kubectl.get_json("events")["items"]
            if e["involvedObject"].get("name") == "hello-harness" and e["reason"] == "Initialised"
        ],
        within=20,
        what="an Initialised event",
    )
    assert "conversation" in events[0]["message"]


def test_kubectl_get_shows_state_sub_state_lifecycle_parent_and_age(
    kubectl: Kubectl, operator: Callable[..., OperatorProcess]
) -> None:
    operator()
    kubectl.apply(
        task_manifest(
            "child",
            """\
            goal: Count the words.
            parent:
              taskId: hello-harness
            """,
        )
    )
    eventually(
        lambda: status_of(kubectl, "child").get("lifecycle"), within=20, what="child initialised"
    )

    # The task moves on while we look: read the table between two reads of the object and
    # keep a look in which the object did not change, so both show the same moment.
    def consistent() -> tuple[list[str], dict[str, Any]] | None:
        before = kubectl.get_json("ht", "child")
        lines = kubectl.run("get", "ht").stdout.splitlines()
        after = kubectl.get_json("ht", "child")
        same = before["metadata"]["resourceVersion"] == after["metadata"]["resourceVersion"]
        return (lines, after.get("status") or {}) if same else None

    lines, status = eventually(
        consistent, within=20, what="a table read while the task stood still"
    )

    assert lines[0].split() == ["NAME", "STATE", "SUB-STATE", "LIFECYCLE", "PARENT", "AGE"]
    header = lines[0]
    starts = [header.index(col) for col in header.split()]
    cells = [
        lines[1][a:b].strip() for a, b in zip(starts, [*starts[1:], len(lines[1])], strict=True)
    ]
    assert cells[:5] == [
        "child",
        status["state"],
        status.get("subState", ""),
        "delegated",
        "hello-harness",
    ]
    assert cells[5].endswith("s")


@pytest.mark.parametrize(
    ("spec", "field", "message"),
    [
        (
            """\
            goal: Do it.
            participants:
              - {id: alice, role: owner}
            """,
            "spec.participants[0].role",
            "Unsupported value",
        ),
        (
            """\
            description: no goal here
            """,
            "spec.goal",
            "Required value",
        ),
        (
            """\
            goal: Do it.
            participants:
              - {id: alice, role: assignee}
              - {id: alice, role: watcher}
            """,
            "spec.participants",
            "each participant id must appear once",
        ),
        (
            """\
            goal: Do it.
            participants:
              - {id: bob, role: watcher}
            """,
            "spec.participants",
            "needs an assignee",
        ),
    ],
    ids=["unknown-role", "no-goal", "duplicate-participant", "no-assignee"],
)
def test_api_server_refuses_invalid_task_and_creates_nothing(
    kubectl: Kubectl, spec: str, field: str, message: str
) -> None:
    result = kubectl.apply(task_manifest("bad", spec))

    assert result.returncode != 0
    assert field in result.stderr
    assert message in result.stderr
    assert kubectl.get_json("ht")["items"] == []


def test_status_written_through_the_main_resource_is_ignored(
    kubectl: Kubectl, operator: Callable[..., OperatorProcess]
) -> None:
    operator()
    kubectl.apply(EXAMPLE)
    wait_state(kubectl, "hello-harness", "TASK_STATE_INPUT_REQUIRED")

    kubectl.run(
        "patch",
        "ht",
        "hello-harness",
        "--type=merge",
        "-p",
        '{"status": {"state": "TASK_STATE_COMPLETED", "model": "gpt-evil"}}',
    )

    status = status_of(kubectl, "hello-harness")
    assert status["state"] == "TASK_STATE_INPUT_REQUIRED"
    assert status["model"] == "scripted-model"


def test_a_plan_with_a_cycle_is_rejected_with_a_condition_naming_the_field(
    kubectl: Kubectl, operator: Callable[..., OperatorProcess]
) -> None:
    operator()
    kubectl.apply(
        task_manifest(
            "loopy",
            """\
            goal: Go round.
            plan:
              steps:
                - {name: a, dependencies: [b]}
                - {name: b, dependencies: [a]}
            """,
        )
    )

    status = wait_state(kubectl, "loopy", "TASK_STATE_REJECTED")

    accepted = next(c for c in status["conditions"] if c["type"] == "Accepted")
    assert accepted["status"] == "False"
    assert accepted["message"].startswith("spec.plan")
    assert "a -> b -> a" in accepted["message"]


def test_a_restarted_operator_leaves_an_initialised_task_as_it_is(
    kubectl: Kubectl, operator: Callable[..., OperatorProcess]
) -> None:
    first = operator()
    kubectl.apply(EXAMPLE)
    wait_state(kubectl, "hello-harness", "TASK_STATE_INPUT_REQUIRED")
    first.stop()
    # The task moves on while no operator runs (as if a turn had started).
    kubectl.run(
        "patch",
        "ht",
        "hello-harness",
        "--subresource=status",
        "--type=merge",
        "-p",
        '{"status": {"state": "TASK_STATE_WORKING"}}',
    )

    second = operator()
    kubectl.apply(task_manifest("later", "goal: Arrive after the restart.\n"))
    wait_state(kubectl, "later", "TASK_STATE_INPUT_REQUIRED")

    assert status_of(kubectl, "hello-harness")["state"] == "TASK_STATE_WORKING"
    assert "hello-harness" not in second.log()


def test_the_crd_file_is_generated_from_the_task_model() -> None:
    from tiny_harness.kube.crd import render

    for path, text in render().items():
        assert Path(path).read_text() == text, f"{path} is stale: run make generate"
