"""A question put to a person, set up as the participant-task, TUI and web tests need it: the
parent ``release`` (alice's, bob watching, carol in its reach) is asked to get a budget
approved, and its scripted turn calls ``create_task_for_participant`` for carol; once carol
answers, its next turn says what ``approved`` gives ("Carol approved." unless told). Real
control plane, operator and scripted model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Final

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks

QUESTION: Final = "Approve the budget of 40k?"

ASK_CAROL: Final[dict[str, Any]] = {
    "type": "tool_calls",
    "calls": [
        {
            "name": "create_task_for_participant",
            "arguments": {"participant": "carol", "goal": QUESTION},
        }
    ],
}


async def asked(tasks: Tasks, parent: str) -> str:
    """The participant task the parent's first turn created, once it waits for carol."""
    await tasks.wait(parent, "TASK_STATE_INPUT_REQUIRED", turn=1)
    [child] = await tasks.children(parent)
    name = str(child["metadata"]["name"])
    status = await tasks.wait(name, "TASK_STATE_INPUT_REQUIRED", sub_state="awaiting-answer")
    assert status["lifecycle"] == "participant"
    assert status["message"] == QUESTION
    assert child["spec"]["participants"] == [
        {"id": "carol", "role": "assignee"},
        {"id": "alice", "role": "watcher"},
        {"id": "bob", "role": "watcher"},
    ]
    return name


async def carol_is_asked(
    model_server: ModelServer,
    operator: Callable[..., OperatorProcess],
    tasks: Tasks,
    *,
    approved: str | None = "Carol approved.",
) -> str:
    """The participant task put to carol, once it waits for her answer (``approved``: the
    parent's reply to her answer; None scripts no such turn)."""
    script: list[dict[str, Any]] = [ASK_CAROL, {"type": "text", "text": "I asked carol."}]
    if approved is not None:
        script.append({"type": "text", "text": approved, "when": "answered by carol"})
    await model_server.control.script(script)
    operator()
    await tasks.create("release", reach=["carol"])
    await tasks.send("release", "Get the budget approved.")
    return await asked(tasks, "release")
