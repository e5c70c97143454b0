"""A question put to a person, set up as the UI tests need it: the parent ``release`` (alice's,
bob watching) is asked to get a budget approved, and its scripted turn calls
``create_task_for_participant`` for carol; once carol answers, its next turn says "Carol
approved." Real control plane, operator and scripted model."""

from __future__ import annotations

from collections.abc import Callable
from typing import Final

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tests.integration.test_participant_tasks import ASK_CAROL, asked

QUESTION: Final = "Approve the budget of 40k?"


async def carol_is_asked(
    model_server: ModelServer, operator: Callable[..., OperatorProcess], tasks: Tasks
) -> str:
    """The participant task put to carol, once it waits for her answer."""
    await model_server.control.script(
        [
            ASK_CAROL,
            {"type": "text", "text": "I asked carol."},
            {"type": "text", "text": "Carol approved.", "when": "answered by carol"},
        ]
    )
    operator()
    await tasks.create("release")
    await tasks.send("release", "Get the budget approved.")
    return await asked(tasks, "release")
