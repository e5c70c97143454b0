"""The decisions on a remote task's calls, sent to it once each.

A sub-task parked on its remote task's approvals (:mod:`tiny_harness.operator.relay`) takes the
decisions made here; its next turn sends each to the remote task (a tiny-harness agent: one
control envelope per decision; kagent: every decision in one message), journals it as sent
before the next, so a resumed turn sends none twice, and then follows the remote task until
it has answered them.
"""

from __future__ import annotations

from a2a.types import Message, SendMessageRequest

from tiny_harness.core.remote_view import RemoteView
from tiny_harness.core.turn import RemoteSentEntry, TurnInput
from tiny_harness.operator.agents import Agent
from tiny_harness.operator.ports import JournalHost
from tiny_harness.operator.relay import awaited, decision_message, kagent_response
from tiny_harness.operator.remote_calls import with_retries


async def send_decisions(
    agent: Agent, host: JournalHost, turn: TurnInput, view: RemoteView
) -> tuple[RemoteSentEntry, frozenset[str]]:
    """Send each decision to the remote task once (journaled as sent, so a resumed turn
    does not send it again), and the status messages that do not answer them."""
    assert view.task_id is not None
    prefix = f"{turn.ref.prefix}/relay-"
    done = {
        e.message_id: e
        for e in turn.journal
        if isinstance(e, RemoteSentEntry) and e.id.startswith(prefix)
    }
    before = next(iter(done.values())).before if done else view.message_id
    client = agent.client()
    last: RemoteSentEntry | None = None
    if agent.speaks_harness:
        messages = [
            decision_message(turn.ref, d, view.task_id, view.context_id, turn.task_id)
            for d in turn.decided
        ]
    else:  # kagent's hitl extension: every decision in one message
        messages = [
            kagent_response(turn.ref, turn.decided, view.task_id, view.context_id, turn.task_id)
        ]
    for index, message in enumerate(messages):
        message_id = message.message_id
        entry = done.get(message_id)
        if entry is None:

            async def send(message: Message = message) -> None:
                events = client.send_message(SendMessageRequest(message=message))
                try:
                    await anext(events)  # taken: the remote task answers it in its status
                finally:
                    await events.aclose()  # type: ignore[attr-defined]

            await with_retries(agent, send)
            entry = RemoteSentEntry(
                id=f"{prefix}{index}",
                message_id=message_id,
                task_id=view.task_id,
                context_id=view.context_id,
                before=before,
            )
            await host.checkpoint(entry)
            await host.flush()
        last = entry
    assert last is not None
    if not agent.speaks_harness:
        return last, frozenset({before})  # kagent answers a response by going on
    return last, awaited(before, turn.ref, turn.decided)
