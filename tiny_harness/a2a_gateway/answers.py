"""What the journal says became of a message a send wrote: the questions a send's wait asks.

A send waits until its message is answered (:mod:`.waiting`), and the answer is in the turn
journals: the turn that gave the message to the model has ended, or a notice answered it
outside a turn. :class:`Answers` asks the journal those questions, from the records of the
turns that can have taken the message alone (:meth:`Answers.records`): those from the task's
turn when the message was written, so an open send costs the same in a conversation of three
turns or three thousand. Only records of the task of that name *now* are read: a record of an
older task of the same name is never read as this one's.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable

from tiny_harness.core.reply_ids import Fate, answered_as_of, fate_of
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.participant_view import ParticipantView

#: The task of a name as the gateway holds it now (None: there is none).
Lookup = Callable[[str], Awaitable[ParticipantView | None]]


class Answers:
    """The journal's answers to a send's wait, over ``turns`` and the task ``lookup`` finds."""

    def __init__(self, turns: TurnRecords, lookup: Lookup) -> None:
        self._turns = turns
        self._lookup = lookup

    async def records(
        self, task_id: str, *, since: int | None = None, upto: int | None = None
    ) -> list[TurnRecord]:
        """The turn records of the task of that name now (none once it is gone).

        **Only the turns that can have taken a message** (``since``: the task's turn when the
        message was written; None: every turn). A message written while the status showed
        turn T0 is taken, drained or acknowledged, by turn T0 (still running) or a later one,
        and a notice written outside a turn goes to the latest turn's record (the operator's
        ``Notices.append``), which is T0 or later too; a status read from the index may lag,
        never lead, so its turn only widens the read. The records read are those of turns
        ``since`` to ``upto`` (default: the task's latest turn and the one after it, whose
        record may be written before the status shows it)."""
        task = await self._lookup(task_id)
        if task is None:
            return []
        if since is None:
            return await self._turns.for_task(task.obj)
        if upto is None:
            upto = task.turn + 1
        return await self._turns.for_task(task.obj, turns=range(since, max(since, upto) + 1))

    async def answered(
        self, task_id: str, message_id: str, *, turn: int, running: bool, since: int | None
    ) -> bool:
        """:func:`tiny_harness.core.reply_ids.answered_as_of` a status showing ``turn`` (running
        or not), with the records read now: they only grow, and the answer is as of that
        status. ``since``: the turn the message was written at (None: not known, a retry), so
        only turns ``since`` to ``turn`` are read: a turn after ``turn`` has not ended as of
        that status."""
        if since is not None and turn < since:
            return False  # no turn that can take the message had begun at that status
        records = await self.records(task_id, since=since, upto=turn)
        return answered_as_of(records, message_id, turn=turn, running=running)

    async def fate(self, task_id: str, message_id: str, *, since: int | None) -> Fate:
        """What the journal says of the message now (:func:`.reply_ids.fate_of`), from the
        records of the turns since ``since``, the turn it was written at (None: every turn)."""
        return fate_of(await self.records(task_id, since=since), message_id)

    async def turn_stand(self, task_id: str) -> tuple[int, bool] | None:
        """The task's latest turn and whether it runs, read now (None: the task is gone)."""
        task = await self._lookup(task_id)
        return None if task is None else (task.turn, task.running)
