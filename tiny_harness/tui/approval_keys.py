"""The approval keys: ``f5`` approves the chosen call, ``f6`` rejects it.

A task awaiting approval lists its calls above the conversation, the ones the viewer may
decide first (:mod:`.approvals` says how each reads). A key asks the operator's own question
first (:func:`~tiny_harness.tui.approvals.refusal_to`), so a decision the operator would refuse
is not sent and the reason shown is its sentence; then a prompt takes an optional reason (and,
when the call's policy allows it, the arguments to run it with), and the decision is sent
naming the park the call waits in. The operator's answer, or its refusal, is the harness's
line in the conversation and a notice too. The keys are in the footer only while a call of
the open task waits.
"""

from __future__ import annotations

import uuid

from textual import work
from textual.widgets import ListItem, ListView

from tiny_harness.core.approval import Verdict
from tiny_harness.tui.approvals import Call, refusal_to, unseen
from tiny_harness.tui.decision import Asked, DecisionPrompt
from tiny_harness.tui.following import FollowingApp
from tiny_harness.tui.plain import Plain, PlainLabel
from tiny_harness.tui.session import Session, SessionError, decision_message


class ApprovalKeys(FollowingApp):
    """The calls list and the keys that decide its calls."""

    def __init__(self, session: Session) -> None:
        super().__init__(session)
        #: Whether a call of the open task waits (Approve and Reject are in the footer).
        self.deciding_shown = False
        #: The calls listed, as drawn: the list is drawn again only when they change.
        self.calls_shown: list[tuple[str, str]] = []

    def draw_calls(self, calls: tuple[Call, ...]) -> None:
        """The calls that wait for approval, the viewer's first, the chosen one kept."""
        title = self.query_one("#approvals-title", Plain)
        items = self.query_one("#approvals", ListView)
        waiting = [c for c in calls if not c.decided]
        if any(c.mine for c in waiting):
            heading = "Calls waiting for approval: f5 approve, f6 reject (tab, then ↑ ↓ to choose)"
        elif waiting:
            heading = "Calls waiting for someone else's approval"
        else:
            heading = "Calls decided: the next turn runs what was approved" if calls else ""
        title.update(heading)
        title.display = items.display = bool(calls)
        wanted = [(c.call_id, "\n".join(c.lines())) for c in calls]
        if self.calls_shown != wanted:
            self.calls_shown = wanted
            chosen = self._chosen("#approvals")
            items.clear()
            for call_id, text in wanted:
                items.append(ListItem(PlainLabel(text), name=call_id))
            ids = [call_id for call_id, _ in wanted]
            # The same call stays chosen while it waits; else the first (the viewer's first).
            still = chosen is not None and chosen in ids and not calls[ids.index(chosen)].decided
            items.index = ids.index(chosen) if still and chosen else (0 if ids else None)
        if bool(waiting) != self.deciding_shown:
            self.deciding_shown = bool(waiting)
            self.refresh_bindings()

    def action_decide(self, verdict: Verdict) -> None:
        """Approve or reject the chosen call, after the prompt; refused with the operator's
        reason, before anything is sent, when the viewer may not decide it."""
        view = self.view
        if view is None:
            self.notify("no task is open", severity="warning")
            return
        if isinstance(self.screen, DecisionPrompt):
            return
        calls = view.calls()
        if not any(not c.decided for c in calls):
            self.notify("no call waits for a decision on this task", severity="warning")
            return
        chosen = self._chosen("#approvals") or calls[0].call_id
        refusal = refusal_to(calls, chosen)
        if refusal is not None:
            self.notify(refusal, severity="warning")
            return
        call = next(c for c in calls if c.call_id == chosen)
        blind = unseen(call.pending, verdict, view.task_id)
        if blind is not None:
            self.notify(blind, severity="warning")
            return

        def asked(decision: Asked | None) -> None:
            if decision is not None:
                self.deciding(view.task_id, call.call_id, call.pending.park, verdict, decision)

        self.push_screen(DecisionPrompt(call, verdict), asked)

    @work(group="send")
    async def deciding(
        self, task_id: str, call_id: str, park: str, verdict: Verdict, asked: Asked
    ) -> None:
        """Send the decision, and say the operator's answer (or its refusal) as a notice too."""
        message_id = str(uuid.uuid4())
        # Shown once the gateway has taken it (its first event), or just before the answer to
        # it when the followed stream brings that first.
        sent = decision_message(
            task_id, call_id, verdict, park=park, reason=asked.reason, message_id=message_id
        )
        if self.view is not None and self.view.task_id == task_id:
            self.view.sending(sent)
        try:
            async for event in self.session.decide(
                task_id,
                call_id,
                verdict,
                park=park,
                reason=asked.reason,
                arguments=asked.arguments,
                message_id=message_id,
            ):
                if self.view is not None and self.view.task_id == task_id:
                    self.view.take_message(sent)
                self._take(task_id, event, message_id)
        except SessionError as exc:
            self.notify(str(exc), severity="error")
            return
        answer = self.view.answer_to(message_id) if self.view is not None else None
        if answer is not None:
            refused = answer.who == "harness" and answer.text.startswith("refused")
            self.notify(answer.text, severity="warning" if refused else "information")
