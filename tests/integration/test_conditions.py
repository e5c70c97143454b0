"""Conditions on the real API server: the CRD refuses a condition without the fields the API
conventions require and two conditions of one type, and what the operator writes has them all."""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import pytest

from tests.conftest import Kubectl, OperatorProcess
from tests.eventually import eventually
from tests.integration.lifecycle_support import Tasks

pytestmark = pytest.mark.controlplane

WHEN = "2026-11-30T15:00:00Z"


def patch_conditions(kubectl: Kubectl, name: str, conditions: list[dict[str, Any]]) -> Any:
    return kubectl.run(
        "patch", "harnesstask", name, "--subresource=status", "--type=merge",
        "-p", json.dumps({"status": {"conditions": conditions}}), check=False,
    )  # fmt: skip


async def test_the_api_server_refuses_a_condition_without_reason_or_transition_time(
    tasks: Tasks, kubectl: Kubectl
) -> None:
    await tasks.create("strict")

    unreasoned = patch_conditions(
        kubectl, "strict", [{"type": "Ready", "status": "True", "lastTransitionTime": WHEN}]
    )
    untimed = patch_conditions(
        kubectl, "strict", [{"type": "Ready", "status": "True", "reason": "Ok", "message": ""}]
    )
    spaced = patch_conditions(
        kubectl,
        "strict",
        [{"type": "Ready", "status": "True", "reason": "not ok", "message": "",
          "lastTransitionTime": WHEN}],
    )  # fmt: skip

    assert unreasoned.returncode != 0
    assert "status.conditions[0].reason: Required value" in unreasoned.stderr
    assert "status.conditions[0].message: Required value" in unreasoned.stderr
    assert untimed.returncode != 0
    assert "status.conditions[0].lastTransitionTime: Required value" in untimed.stderr
    assert spaced.returncode != 0
    assert "status.conditions[0].reason" in spaced.stderr
    assert not (kubectl.get_json("harnesstask", "strict").get("status") or {}).get("conditions")


async def test_the_api_server_refuses_two_conditions_of_one_type(
    tasks: Tasks, kubectl: Kubectl
) -> None:
    await tasks.create("twice")
    ready = {"type": "Ready", "status": "True", "reason": "Ok", "message": "",
             "lastTransitionTime": WHEN}  # fmt: skip

    refused = patch_conditions(kubectl, "twice", [ready, {**ready, "status": "False"}])

    assert refused.returncode != 0
    assert "Duplicate value" in refused.stderr
    assert patch_conditions(kubectl, "twice", [ready]).returncode == 0


async def test_the_operators_conditions_carry_every_field_the_convention_requires(
    tasks: Tasks, kubectl: Kubectl, operator: Callable[..., OperatorProcess]
) -> None:
    operator()
    await tasks.create("accepted")

    status = eventually(
        lambda: (
            (s := kubectl.get_json("harnesstask", "accepted").get("status") or {}).get("conditions")
            and s
        ),
        within=60,
        what="the operator to accept the task",
    )

    [accepted] = status["conditions"]
    assert accepted["type"] == "Accepted"
    assert accepted["status"] == "True"
    assert accepted["reason"] == "Initialised"
    assert accepted["message"] == "accepted as a conversation task"
    assert accepted["lastTransitionTime"].endswith("Z")
    assert accepted["observedGeneration"] == 1
