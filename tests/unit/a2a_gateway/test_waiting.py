"""How a send's wait ends (``a2a_gateway/waiting.py``): every rule with plain fakes for the
store and the watch, and the race between a status event and a quiet tick run many times."""

from __future__ import annotations

import asyncio
import random
from collections.abc import AsyncGenerator
from dataclasses import dataclass, field

import pytest
from a2a.types import TaskState as A2AState
from a2a.types import TaskStatusUpdateEvent

from tiny_harness.a2a_gateway.fanout import Fanout, Subscription
from tiny_harness.a2a_gateway.rendering import (
    ResourceVersion,
    TaskChange,
    change_of,
    progress_key,
    status_event,
)
from tiny_harness.a2a_gateway.send import Sends, Sent
from tiny_harness.a2a_gateway.waiting import (
    Quiet,
    Waits,
    at_quiet_tick,
    with_quiet_ticks,
)
from tiny_harness.core.a2a_task import task_to_a2a
from tiny_harness.core.history import AckEntry, NoticeEntry, RecordEntry
from tiny_harness.core.reply_ids import (
    Fate,
    answered_as_of,
    command_reply_id,
    fate_of,
    refusal_id,
)
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Participant, Role, TaskSpec, TaskStatus, TaskUsage
from tiny_harness.core.turn import DrainEntry, InboundMessage

SPEC = TaskSpec(goal="ship", participants=(Participant(id="alice", role=Role.ASSIGNEE),))
MID = "m-1"
FAST = Waits(take=0.2, idle=0.4, first_tick=0.01, tick_cap=0.02)


def parked(
    message: str = "Hello.", message_id: str = "t/turn-1/model-0", turn: int = 1
) -> TaskStatus:
    return TaskStatus(
        state=TaskState.INPUT_REQUIRED,
        sub_state="awaiting-next-message",
        message=message,
        message_id=message_id,
        turn=turn,
    )


def change(status: TaskStatus, version: int, *, running: bool = False) -> TaskChange:
    task = task_to_a2a("t", "ctx", SPEC, status)
    return TaskChange.of(
        status_event(task), ResourceVersion(str(version)), turn=status.turn, running=running
    )


class FakeWatch:
    """The task's streams: the test puts changes in; ``changes`` yields them in order."""

    def __init__(self) -> None:
        self.changes: asyncio.Queue[TaskChange] = asyncio.Queue()
        self.closed = False

    async def changes_of(self) -> AsyncGenerator[TaskChange, None]:
        try:
            while True:
                yield await self.changes.get()
        finally:
            self.closed = True


class FakeStreams:
    """:class:`~tiny_harness.a2a_gateway.stream.TaskStreams` as the wait reads it."""

    def __init__(self, watch: FakeWatch) -> None:
        self.watch = watch

    def changes(
        self, subscription: object, *, after: int, until: float | None = None
    ) -> AsyncGenerator[TaskChange, None]:
        return self.watch.changes_of()


@dataclass
class Record:
    turn: int
    entries: list[RecordEntry] = field(default_factory=list)


class FakeStore:
    """The journal as the wait reads it: records the test writes, read through the same
    functions the gateway's store uses."""

    def __init__(self, *records: Record) -> None:
        self.records = list(records)
        self.reads = 0
        #: The first turn each read asked for (None: every turn).
        self.since: list[int | None] = []
        #: The journal's answers, as the store's part that gives them.
        self.answers = self

    def _from(self, since: int | None) -> list[Record]:
        self.since.append(since)
        return [r for r in self.records if since is None or r.turn >= since]

    async def fate(self, task_id: str, message_id: str, *, since: int | None) -> Fate:
        self.reads += 1
        return fate_of(self._from(since), message_id)

    async def answered(
        self, task_id: str, message_id: str, *, turn: int, running: bool, since: int | None
    ) -> bool:
        records = self._from(since)
        return answered_as_of(records, message_id, turn=turn, running=running)

    async def turn_stand(self, task_id: str) -> tuple[int, bool] | None:
        latest = max((r.turn for r in self.records), default=0)
        return latest, False


def took(turn: int, message_id: str = MID) -> Record:
    """A turn's journal that gave the message to the model."""
    inbound = InboundMessage(id=message_id, sender="alice", content="hi")
    return Record(turn, [DrainEntry(id=f"drain-{message_id}", messages=(inbound,))])


def acked(turn: int, *answers: NoticeEntry) -> Record:
    """A turn's journal that took the message without the model, with its answers."""
    return Record(turn, [AckEntry(id=f"ack-{MID}", message_id=MID, sender="alice"), *answers])


def handler(store: FakeStore, watch: FakeWatch, waits: Waits = FAST) -> Sends:
    return Sends(store, FakeStreams(watch), waits)  # type: ignore[arg-type]


def sent(status: TaskStatus | None = None, *, existed: bool = False) -> Sent:
    status = status or parked()
    task = task_to_a2a("t", "ctx", SPEC, status)
    subscription: Subscription[TaskChange] = Fanout(change_of, bound=10).subscribe("t")
    version = ResourceVersion("1")
    opening = TaskChange.of(status_event(task), version, turn=status.turn, running=False)
    return Sent(task, version, MID, existed, subscription, opening)


async def follow(h: Sends, what: Sent) -> list[TaskStatusUpdateEvent]:
    return [e async for e in h.wait(what) if isinstance(e, TaskStatusUpdateEvent)]


def notice(entry_id: str, text: str) -> NoticeEntry:
    return NoticeEntry(id=entry_id, text=text)


# -- the rules, as pure logic --------------------------------------------------------------------


def test_an_answer_in_the_journal_ends_the_wait_with_that_answer_and_its_id() -> None:
    refusal = notice(refusal_id(MID), "refused: bob is not a participant of this task")
    note = at_quiet_tick(
        Fate(taken=3, answer=refusal), MID, since_written=0.1, since_change=0.1, waits=Waits()
    )
    assert note is not None
    assert (note.message_id, note.text) == (refusal.id, refusal.text)


def test_a_message_no_turn_took_in_time_ends_the_wait_naming_the_operator() -> None:
    waits = Waits(take=60)
    fate = Fate(taken=None, answer=None)
    assert at_quiet_tick(fate, MID, since_written=59, since_change=59, waits=waits) is None
    note = at_quiet_tick(fate, MID, since_written=61, since_change=61, waits=waits)
    assert note is not None
    assert note.message_id == f"waiting-{MID}"
    assert "no operator has taken it" in note.text
    assert "stays queued" in note.text


def test_a_taken_message_waits_on_until_nothing_has_changed_for_the_idle_bound() -> None:
    waits = Waits(take=60, idle=900)
    fate = Fate(taken=2, answer=None)
    assert at_quiet_tick(fate, MID, since_written=600, since_change=899, waits=waits) is None
    note = at_quiet_tick(fate, MID, since_written=1000, since_change=901, waits=waits)
    assert note is not None
    assert note.message_id == f"working-{MID}"
    assert "subscribe to the task" in note.text


# -- quiet ticks -----------------------------------------------------------------------------------


async def test_a_tick_comes_while_nothing_arrives_and_never_loses_the_pending_item() -> None:
    release = asyncio.Event()
    closed = asyncio.Event()

    async def source() -> AsyncGenerator[str, None]:
        try:
            await release.wait()
            yield "a"
            yield "b"
        finally:
            closed.set()

    seen: list[object] = []
    ticks = with_quiet_ticks(source(), first=0.01, cap=0.02)
    async for item in ticks:
        seen.append(item)
        if isinstance(item, Quiet) and seen.count(item) == 3:
            release.set()
    assert seen[:3] == [Quiet(), Quiet(), Quiet()]
    assert seen[3:] == ["a", "b"]
    assert closed.is_set()


async def test_closing_the_ticks_closes_the_source_even_with_a_read_pending() -> None:
    closed = asyncio.Event()

    async def source() -> AsyncGenerator[str, None]:
        try:
            await asyncio.Event().wait()
            yield "never"
        finally:
            closed.set()

    ticks = with_quiet_ticks(source(), first=0.01, cap=0.01)
    assert isinstance(await anext(ticks), Quiet)
    await ticks.aclose()
    assert closed.is_set()


# -- the follow, end to end over the fakes ---------------------------------------------------------


async def test_a_refusal_kept_out_of_the_status_ends_the_stream_with_the_refusal() -> None:
    reason = "refused: alice is not a participant of this task"
    store = FakeStore(acked(2, notice(refusal_id(MID), reason)))
    watch = FakeWatch()

    events = await asyncio.wait_for(follow(handler(store, watch), sent()), 5)

    (last,) = events
    assert last.status.message.message_id == refusal_id(MID)
    assert last.status.message.parts[0].text == reason
    assert last.status.state == A2AState.TASK_STATE_INPUT_REQUIRED  # the state as last seen
    assert watch.closed


async def test_a_command_reply_whose_status_write_was_lost_still_ends_the_wait() -> None:
    store = FakeStore(acked(1, notice(command_reply_id(MID), "model: gpt-5")))
    events = await asyncio.wait_for(follow(handler(store, FakeWatch()), sent()), 5)
    assert [e.status.message.message_id for e in events] == [command_reply_id(MID)]


async def test_a_message_no_operator_takes_ends_with_a_note_once_the_take_bound_passed() -> None:
    store = FakeStore()
    loop = asyncio.get_running_loop()
    started = loop.time()

    events = await asyncio.wait_for(follow(handler(store, FakeWatch()), sent()), 5)

    assert loop.time() - started >= FAST.take
    (last,) = events
    assert last.status.message.message_id == f"waiting-{MID}"
    assert store.reads >= 2  # it looked more than once before giving up


async def test_a_turn_that_stalls_after_taking_the_message_ends_at_the_idle_bound() -> None:
    store = FakeStore(took(2))
    watch = FakeWatch()
    await watch.changes.put(change(TaskStatus(state=TaskState.WORKING, turn=2), 2, running=True))

    events = await asyncio.wait_for(follow(handler(store, watch), sent()), 5)

    assert [e.status.state for e in events] == [
        A2AState.TASK_STATE_WORKING,
        A2AState.TASK_STATE_WORKING,
    ]
    assert events[-1].status.message.message_id == f"working-{MID}"


async def test_the_turn_that_took_the_message_ending_ends_the_wait_before_any_bound() -> None:
    store = FakeStore(took(2))
    watch = FakeWatch()
    await watch.changes.put(change(TaskStatus(state=TaskState.WORKING, turn=2), 2, running=True))
    await watch.changes.put(change(parked("Done.", "t/turn-2/model-0", turn=2), 3))

    events = await asyncio.wait_for(
        follow(handler(store, watch, Waits(take=60, idle=60)), sent()), 5
    )

    assert events[-1].status.message.message_id == "t/turn-2/model-0"


@pytest.mark.parametrize("seed", range(50))
async def test_a_reply_event_racing_a_quiet_tick_ends_the_wait_once_with_the_reply(
    seed: int,
) -> None:
    """The operator writes the command's reply to the journal, then to the status. A tick may
    read the journal before or after the status event arrives: either way the call ends once,
    on the reply, with nothing after it."""
    rng = random.Random(seed)
    reply = notice(command_reply_id(MID), "effort: high")
    store = FakeStore()
    watch = FakeWatch()

    async def operator() -> None:
        await asyncio.sleep(rng.uniform(0, 0.03))
        store.records.append(acked(1, reply))  # the journal entry
        await asyncio.sleep(rng.choice([0, 0, rng.uniform(0, 0.03)]))
        await watch.changes.put(change(parked(reply.text, reply.id), 2))  # the status write

    writer = asyncio.create_task(operator())
    events = await asyncio.wait_for(
        follow(
            handler(store, watch, Waits(take=60, idle=60, first_tick=0.005, tick_cap=0.01)), sent()
        ),
        5,
    )
    await writer

    ids = [e.status.message.message_id for e in events]
    assert ids[-1] == reply.id
    assert ids.count(reply.id) == 1
    assert watch.closed


async def test_a_row_change_before_a_commands_reply_does_not_end_the_commands_wait() -> None:
    """The command is acknowledged in the journal of turn 1, which had ended before it came; a
    child's row changing (turn 1, no runner) arrives before the reply. The first version of
    the wait ended there, on "the turn that took it has ended", with the previous reply."""
    store = FakeStore(acked(1))
    watch = FakeWatch()
    rows_changed = parked("Started sub-task t-child", "cmd-m-0")
    await watch.changes.put(change(rows_changed.model_copy(update={"sub_state": None}), 2))
    await watch.changes.put(change(parked("state: input-required", command_reply_id(MID)), 3))

    events = await asyncio.wait_for(
        follow(handler(store, watch, Waits(take=60, idle=60)), sent()), 5
    )

    assert [e.status.message.message_id for e in events] == ["cmd-m-0", command_reply_id(MID)]


def renewed(calls: int, turn: int = 2) -> TaskStatus:
    """A running turn's status as a lease renewal leaves it: ``calls`` model calls so far."""
    return TaskStatus(state=TaskState.WORKING, turn=turn, turn_usage=TaskUsage(model_calls=calls))


async def test_a_long_turns_progress_reaches_the_stream_and_does_not_end_the_wait() -> None:
    """Each renewal that counts more calls is an event; one that counts none more is not;
    none of them ends the wait, which the turn's reply does."""
    store = FakeStore(took(2))
    watch = FakeWatch()
    for version, status in enumerate(
        [renewed(0), renewed(1), renewed(1), renewed(2), parked("Done.", "t/turn-2/model-2", 2)],
        start=2,
    ):
        await watch.changes.put(change(status, version, running=status.turn_usage is not None))

    events = await asyncio.wait_for(
        follow(handler(store, watch, Waits(take=60, idle=60)), sent()), 5
    )

    assert [(e.status.state, progress_key(e)) for e in events] == [
        (A2AState.TASK_STATE_WORKING, (0, 0)),
        (A2AState.TASK_STATE_WORKING, (1, 0)),
        (A2AState.TASK_STATE_WORKING, (2, 0)),
        (A2AState.TASK_STATE_INPUT_REQUIRED, (0, 0)),
    ]
    assert events[-1].status.message.message_id == "t/turn-2/model-2"


async def test_the_progress_and_end_of_an_earlier_turn_do_not_end_a_later_turns_wait() -> None:
    """A message sent while turn 2 still runs is taken by turn 3: turn 2's progress, its park,
    then turn 3's progress all stream by, and only turn 3's end ends the wait."""
    store = FakeStore(took(3))
    watch = FakeWatch()
    await watch.changes.put(change(renewed(1, turn=2), 2, running=True))
    await watch.changes.put(change(renewed(2, turn=2), 3, running=True))
    await watch.changes.put(change(parked("Turn two.", "t/turn-2/model-1", 2), 4))
    await watch.changes.put(change(renewed(1, turn=3), 5, running=True))
    await watch.changes.put(change(parked("Turn three.", "t/turn-3/model-0", 3), 6))

    events = await asyncio.wait_for(
        follow(handler(store, watch, Waits(take=60, idle=60)), sent(renewed(0, turn=2))), 5
    )

    assert events[-1].status.message.message_id == "t/turn-3/model-0"
    assert [progress_key(e) for e in events] == [(1, 0), (2, 0), (0, 0), (1, 0), (0, 0)]


@pytest.mark.parametrize("seed", range(50))
async def test_renewals_racing_the_turns_end_and_quiet_ticks_end_the_wait_once_on_the_reply(
    seed: int,
) -> None:
    """Renewals (each with more calls), quiet ticks and the turn's end arrive in a random
    rhythm: the wait ends once, on the reply, after every progress event before it, in
    order."""
    rng = random.Random(seed)
    store = FakeStore(took(2))
    watch = FakeWatch()
    renewals = rng.randint(0, 6)

    async def operator() -> None:
        for calls in range(1, renewals + 1):
            await asyncio.sleep(rng.choice([0, rng.uniform(0, 0.02)]))
            await watch.changes.put(change(renewed(calls), 1 + calls, running=True))
        await asyncio.sleep(rng.choice([0, rng.uniform(0, 0.02)]))
        await watch.changes.put(change(parked("Done.", "t/turn-2/model-9", 2), 100))

    writer = asyncio.create_task(operator())
    events = await asyncio.wait_for(
        follow(
            handler(store, watch, Waits(take=60, idle=60, first_tick=0.005, tick_cap=0.01)),
            sent(renewed(0)),
        ),
        5,
    )
    await writer

    ids = [e.status.message.message_id for e in events]
    assert ids[-1] == "t/turn-2/model-9"
    assert ids.count("t/turn-2/model-9") == 1
    assert [progress_key(e)[0] for e in events[:-1]] == list(range(1, renewals + 1))
    assert watch.closed


# -- the turns a wait reads ------------------------------------------------------------------------


async def test_a_sends_wait_reads_only_the_turns_from_the_one_its_message_was_written_at() -> None:
    # Written while the task showed turn 7 of a long conversation: turn 8 takes it, and the
    # wait asks of turns 7 on, never of the conversation before.
    store = FakeStore(*(took(t, f"older-{t}") for t in range(1, 7)), took(8))
    watch = FakeWatch()
    await watch.changes.put(change(renewed(1, turn=8), 2, running=True))
    await watch.changes.put(change(parked("Done.", "t/turn-8/model-0", turn=8), 3))

    events = await asyncio.wait_for(follow(handler(store, watch), sent(parked(turn=7))), 5)

    assert events[-1].status.message.message_id == "t/turn-8/model-0"
    assert store.since
    assert set(store.since) == {7}


async def test_a_retried_messages_wait_reads_every_turn_for_it_may_have_been_taken_long_ago() -> (
    None
):
    store = FakeStore(took(2), Record(7))

    events = await asyncio.wait_for(
        follow(handler(store, FakeWatch()), sent(parked(turn=7), existed=True)), 5
    )

    assert events == []  # turn 2 gave it to the model and has ended: answered long ago
    assert store.since
    assert set(store.since) == {None}
