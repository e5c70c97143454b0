"""Heavy input on the real control plane, with the operator and the scripted model: every
size reached is a state or a refusal a participant reads, never a retry loop and never a
second model call for one step (core/sizes.py, docs/design/limits.md)."""

from __future__ import annotations

from collections.abc import Callable

import pytest

from tests.conftest import ModelServer, OperatorProcess
from tests.integration.lifecycle_support import Tasks
from tiny_harness.core.history import after_turn
from tiny_harness.core.inbox import MessagePart, MessageSpec
from tiny_harness.core.sizes import CHUNK_BYTES, STATUS_TEXT_CHARS

pytestmark = pytest.mark.controlplane

Operator = Callable[..., OperatorProcess]


async def send_parts(tasks: Tasks, task: str, message_id: str, *texts: str) -> None:
    parts = tuple(MessagePart(text=t) for t in texts)
    spec = MessageSpec(task=task, message_id=message_id, sender="alice", parts=parts)
    await tasks.messages.send(spec, task=await tasks.tasks.get(task))


async def test_a_message_too_big_to_take_is_refused_and_the_model_is_not_asked(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    await model_server.control.script([{"type": "text", "text": "Read the small one."}])
    operator()
    await tasks.create("heavy")
    await tasks.wait("heavy", "TASK_STATE_INPUT_REQUIRED")

    await send_parts(tasks, "heavy", "huge", *("x" * (250 * 1024) for _ in range(4)))

    refused = await tasks.wait_agent_message("heavy", "refused: the message carries")
    assert "1000 KiB" in refused.text
    assert "at most 256 KiB" in refused.text
    assert await model_server.control.requests() == []
    # The task goes on: the next message is answered, in one model call.
    await tasks.send("heavy", "A small one.")
    status = await tasks.wait("heavy", "TASK_STATE_INPUT_REQUIRED", turn=1)
    assert status["message"] == "Read the small one."
    assert len(await model_server.control.requests()) == 1


async def test_a_reply_longer_than_a_status_holds_is_cut_there_and_whole_in_the_history(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    reply = "A long answer. " * 5000  # 75,000 characters: over the CRD's 65,536
    await model_server.control.script([{"type": "text", "text": reply}])
    operator()
    await tasks.create("verbose")
    await tasks.send("verbose", "Tell me everything.")

    status = await tasks.wait("verbose", "TASK_STATE_INPUT_REQUIRED", turn=1)

    assert len(status["message"]) == STATUS_TEXT_CHARS
    assert status["message"].startswith("A long answer. A long answer.")
    assert status["message"].endswith("the whole text is in the task's history]")
    [record] = await tasks.records_of("verbose", turn=1)
    assert record.history is not None
    assert record.history.messages[-1].content == reply
    assert len(await model_server.control.requests()) == 1


async def test_a_turn_bigger_than_a_chunk_is_stored_in_chunks_and_read_back_whole(
    tasks: Tasks, operator: Operator, model_server: ModelServer
) -> None:
    """A 250 KiB question and a 600 KiB answer: the drain, the answer and the history delta
    together are over a chunk, so they are split, and exactly the last chunk ends the turn;
    the next turn reads the whole history back."""
    answer = "An answer that runs on. " * 25_600  # about 600 KiB
    await model_server.control.script(
        [{"type": "text", "text": answer}, {"type": "text", "text": "Short now."}]
    )
    operator()
    await tasks.create("bulky")
    question = "q" * (250 * 1024)
    await send_parts(tasks, "bulky", "big-question", question)
    await tasks.wait("bulky", "TASK_STATE_INPUT_REQUIRED", turn=1, within=60)

    records = await tasks.records_of("bulky", turn=1)
    assert len(records) > 1
    assert all(r.size < CHUNK_BYTES for r in records)
    assert [r.ended for r in records].count(True) == 1
    assert records[-1].ended
    history = after_turn((), records)
    assert [m.content for m in history] == [question, answer]
    # The question is stored once in the turn's records (in its drain; the delta refers to
    # it), the answer in the model's entry and in the delta.
    assert sum(r.size for r in records) < len(question) + 2 * len(answer) + 64 * 1024

    await tasks.send("bulky", "And now?")
    status = await tasks.wait("bulky", "TASK_STATE_INPUT_REQUIRED", turn=2, within=60)
    assert "Error" not in [c["type"] for c in status.get("conditions", [])]
    # The next turn's first request reads the history back (the model's answer, or the
    # compaction that so long a history calls for on a small window).
    later = (await model_server.control.requests())[1]
    assert "An answer that runs on." in str(later.body)
