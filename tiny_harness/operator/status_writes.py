"""What the operator writes into a task's status for texts and conditions of its own: a
failure (state, message, ``Error`` condition), the ``Error`` condition cleared when a new turn
resumes the task, and the id of a status text that is in no history. The steps outside a turn
and the turn's host both write them, so they live below both. Conditions are set by
:func:`~tiny_harness.core.conditions.set_condition`: a condition's transition time moves only
when its status does.
"""

from __future__ import annotations

import uuid
from collections.abc import Mapping
from typing import Any

from tiny_harness.core.clock import rfc3339
from tiny_harness.core.conditions import Condition, set_condition
from tiny_harness.core.sizes import PLAN_TEXT_CHARS, condition_text, excerpt, status_text
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import TaskStatus


def bounded(patch: Mapping[str, Any]) -> Mapping[str, Any]:
    """``patch`` with its texts within the sizes a status keeps (``core/sizes.py``): the
    status text cut with a note saying the whole text is in the history, each condition's
    message cut, and each plan step's description and output. The one status writer
    (:class:`~tiny_harness.operator.status_writer.StatusWriter`) passes every patch through
    here, so no reply, answer, remote result or plan, however long, makes the write refused."""
    message = patch.get("message")
    conditions = patch.get("conditions")
    plan = patch.get("plan")
    if not isinstance(message, str) and not isinstance(conditions, list) and plan is None:
        return patch
    out = dict(patch)
    if isinstance(plan, dict) and isinstance(plan.get("steps"), list):
        out["plan"] = {
            **plan,
            "steps": [
                {
                    **step,
                    **{
                        k: excerpt(step[k], PLAN_TEXT_CHARS)
                        for k in ("description", "output")
                        if isinstance(step.get(k), str)
                    },
                }
                if isinstance(step, dict)
                else step
                for step in plan["steps"]
            ],
        }
    if isinstance(message, str):
        out["message"] = status_text(message)
    if isinstance(conditions, list):
        out["conditions"] = [
            {**c, "message": condition_text(c["message"])}
            if isinstance(c, dict) and isinstance(c.get("message"), str)
            else c
            for c in conditions
        ]
    return out


def own_message_id() -> str:
    """An id for a status text the operator writes that is in no history (a cancel, a failure,
    a retry notice): new for every text written, so no two texts share one."""
    return f"status-{uuid.uuid4().hex}"


def failed_status(status: TaskStatus, reason: str, message: str) -> dict[str, Any]:
    error = Condition(
        type="Error",
        status="True",
        reason=reason,
        message=condition_text(message),
        last_transition_time=rfc3339(digits=0),
        observed_generation=status.observed_generation,
    )
    return {
        "state": TaskState.FAILED.value,
        "subState": None,
        "runner": None,
        "message": message,
        "messageId": own_message_id(),
        "conditions": _conditions_json(set_condition(status.conditions, error)),
    }


def resumed_conditions(conditions: tuple[Condition, ...]) -> list[dict[str, Any]] | None:
    """A new turn after a failure turns its ``Error`` condition off; otherwise no change."""
    error = next((c for c in conditions if c.type == "Error" and c.status == "True"), None)
    if error is None:
        return None
    cleared = error.model_copy(
        update={
            "status": "False",
            "reason": "Resumed",
            "message": "a participant's message resumed the task",
            "last_transition_time": rfc3339(digits=0),
        }
    )
    return _conditions_json(set_condition(conditions, cleared))


def _conditions_json(conditions: tuple[Condition, ...]) -> list[dict[str, Any]]:
    return [c.model_dump(mode="json", by_alias=True, exclude_none=True) for c in conditions]
