"""decide(): the one next step for a task, from the facts the worker gathered.

The worker carries out whatever :func:`decide` returns without second-guessing it, so every
rule a participant relies on (who may speak, who may end the task, that an ended task stays
ended, that only one replica runs a turn) has to hold here for *every* combination of facts.
The example tests walk the decision table row by row; the property tests check the promises
across generated facts, with a speaker oracle written independently of
:mod:`tiny_harness.core.speakers`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from tiny_harness.core.actions import (
    Acknowledge,
    Action,
    ApplyControl,
    AwaitFirstMessage,
    AwaitRecords,
    Collect,
    EndWithParent,
    FailPastDeadline,
    GiveUpTurn,
    IdleEnded,
    Initialise,
    InputTimedOut,
    Nothing,
    Park,
    Refuse,
    RunCommand,
    RunTurn,
    SyncRows,
    WaitForInput,
    WaitForLease,
    WaitToCollect,
)
from tiny_harness.core.decide import MAX_TURN_ATTEMPTS, Facts, Lease, MessageKind, Pending, decide
from tiny_harness.core.states import TaskState
from tiny_harness.core.task import Lifecycle, Participant, Role, TaskLink, TaskSpec

PARENT = "parent-1"
PARENT_SENDER = f"task:{PARENT}"
SENDERS = ("alice", "bob", "carol", "mallory", PARENT_SENDER, "system")
KINDS: tuple[MessageKind, ...] = ("ordinary", "control", "command")

ALL_ACTIONS = (
    Nothing,
    Initialise,
    AwaitRecords,
    WaitForLease,
    Refuse,
    Acknowledge,
    ApplyControl,
    RunCommand,
    RunTurn,
    Park,
    AwaitFirstMessage,
    SyncRows,
    Collect,
    WaitToCollect,
    FailPastDeadline,
    InputTimedOut,
    WaitForInput,
    GiveUpTurn,
    IdleEnded,
)
#: Actions that write something (a record, a status, a turn, a deletion). Initialise writes
#: too, but it is row 1 and comes before anything else is known.
WRITES = (
    Refuse,
    Acknowledge,
    ApplyControl,
    RunCommand,
    RunTurn,
    Park,
    SyncRows,
    Collect,
    FailPastDeadline,
    InputTimedOut,
    GiveUpTurn,
    IdleEnded,
)
#: Actions that act on one pending message, named by ``message_id``.
ABOUT_A_MESSAGE = (Refuse, Acknowledge, ApplyControl, RunCommand)
#: The terminal state each control leaves the task in, as a participant understands it.
ENDS_IN = {"cancel": TaskState.CANCELED, "complete": TaskState.COMPLETED}


def make_spec(*, parent: str | None = None) -> TaskSpec:
    return TaskSpec(
        goal="ship the release",
        participants=(
            Participant(id="alice", role=Role.ASSIGNEE),
            Participant(id="bob", role=Role.WATCHER),
            Participant(id="carol", role=Role.REPORTER),
        ),
        parent=TaskLink(task_id=parent) if parent else None,
    )


SPEC = make_spec()
CHILD_SPEC = make_spec(parent=PARENT)


def facts(**changes: Any) -> Facts:
    """A live conversation in INPUT_REQUIRED after turn 2, lease free, nothing pending."""
    base = Facts(
        initialised=True,
        state=TaskState.INPUT_REQUIRED,
        lifecycle=Lifecycle.CONVERSATION,
        spec=SPEC,
        turn=2,
    )
    return replace(base, **changes)


def say(sender: str, message_id: str = "m1") -> Pending:
    return Pending(message_id, sender, "ordinary")


def control(sender: str, action: str, message_id: str = "c1") -> Pending:
    return Pending(message_id, sender, "control", action)


def command(sender: str, message_id: str = "cmd1") -> Pending:
    return Pending(message_id, sender, "command")


# -- the oracle -----------------------------------------------------------------------------------


def may_speak(f: Facts, m: Pending) -> bool:
    """Who a participant expects the task to listen to, written out from the role rules."""
    assert f.spec is not None
    if m.sender in {p.id for p in f.spec.participants}:
        return True
    if f.spec.parent is not None and m.sender == f"task:{f.spec.parent.task_id}":
        return True
    return m.sender == "system" and m.message_id == "brief" and f.spec.parent is None


def may_end(f: Facts, m: Pending) -> bool:
    """Assignees, reporters and admins may end a task, and so may its parent."""
    assert f.spec is not None
    if f.spec.parent is not None and m.sender == f"task:{f.spec.parent.task_id}":
        return True
    return any(
        p.id == m.sender and p.role.value in ("assignee", "reporter", "admin")
        for p in f.spec.participants
    )


def closed(f: Facts) -> bool:
    """Ended, and not a failed conversation (which a participant's message resumes)."""
    assert f.state is not None
    return f.state.is_terminal and not (
        f.state is TaskState.FAILED and f.lifecycle is Lifecycle.CONVERSATION
    )


def reaches_the_messages(f: Facts) -> bool:
    """Rows 1-4 did not apply: the decision is about the task's messages and turns."""
    return (
        f.initialised
        and f.state is not None
        and f.state is not TaskState.REJECTED
        and f.spec is not None
        and f.records_current
        and f.lease is not Lease.HELD
    )


def subject(f: Facts, action: Action) -> Pending | None:
    """The pending message an action is about, if it is about one."""
    if not isinstance(action, ABOUT_A_MESSAGE):
        return None
    found = [m for m in f.pending if m.message_id == action.message_id]
    assert found, f"{action} names a message that is not pending"
    return found[0]


# -- strategies -----------------------------------------------------------------------------------


@st.composite
def pendings(draw: st.DrawFn, senders: tuple[str, ...] = SENDERS) -> tuple[Pending, ...]:
    """Pending messages, ids unique; ``system`` sometimes uses the brief's id."""
    count = draw(st.integers(min_value=0, max_value=4))
    out: list[Pending] = []
    brief_used = False
    for i in range(count):
        sender = draw(st.sampled_from(senders))
        kind = draw(st.sampled_from(KINDS))
        action = draw(st.sampled_from(("complete", "cancel"))) if kind == "control" else None
        as_brief = not brief_used and draw(st.booleans())
        brief_used = brief_used or as_brief
        out.append(Pending("brief" if as_brief else f"m{i}", sender, kind, action))
    return tuple(out)


@st.composite
def all_facts(draw: st.DrawFn) -> Facts:
    spec = draw(st.sampled_from((SPEC, CHILD_SPEC, None)))
    return Facts(
        initialised=draw(st.booleans()),
        state=draw(st.none() | st.sampled_from(TaskState)),
        lifecycle=draw(st.sampled_from(Lifecycle)),
        spec=spec,
        records_current=draw(st.booleans()),
        lease=draw(st.sampled_from(Lease)),
        lease_wait=draw(st.floats(min_value=-5.0, max_value=60.0, allow_nan=False)),
        turn=draw(st.integers(min_value=0, max_value=5)),
        pending=draw(pendings()),
        news=draw(st.booleans()),
        rows_stale=draw(st.booleans()),
        expires_in=draw(st.none() | st.floats(min_value=-60.0, max_value=60.0)),
        deadline_left=draw(st.none() | st.floats(min_value=-60.0, max_value=60.0)),
        input_left=draw(st.none() | st.floats(min_value=-60.0, max_value=60.0)),
        on_timeout=draw(st.sampled_from(("fail", "complete"))),
        first_message_left=draw(st.none() | st.floats(min_value=-60.0, max_value=60.0)),
    )


@st.composite
def live_facts(draw: st.DrawFn) -> Facts:
    """Facts that pass rows 1-4, so the decision is about messages and turns."""
    f = draw(all_facts())
    live_states = [s for s in TaskState if s is not TaskState.REJECTED]
    return replace(
        f,
        initialised=True,
        state=draw(st.sampled_from(live_states)),
        spec=draw(st.sampled_from((SPEC, CHILD_SPEC))),
        records_current=True,
        lease=draw(st.sampled_from((Lease.FREE, Lease.MINE, Lease.EXPIRED))),
    )


#: Half anything at all, half facts that reach the message rows (rows 1-4 rarely let a fully
#: random example through, and the promises about messages are what matter most).
any_facts = st.one_of(all_facts(), live_facts())


#: Every (state, lifecycle) a task is over in: a failed conversation is not among them.
ENDED = tuple(
    (state, lifecycle)
    for state in TaskState
    for lifecycle in Lifecycle
    if state.is_terminal and (state, lifecycle) != (TaskState.FAILED, Lifecycle.CONVERSATION)
)


@st.composite
def ended_facts(draw: st.DrawFn, facts: st.SearchStrategy[Facts] = any_facts) -> Facts:
    state, lifecycle = draw(st.sampled_from(ENDED))
    return replace(draw(facts), state=state, lifecycle=lifecycle)


# -- the table, one example per row ---------------------------------------------------------------


def test_row_1_a_task_without_a_status_is_initialised() -> None:
    assert decide(Facts(initialised=False)) == Initialise()
    assert decide(facts(state=None, pending=(say("alice"),))) == Initialise()


def test_row_2_a_rejected_task_does_nothing_even_when_spoken_to() -> None:
    assert decide(facts(state=TaskState.REJECTED, pending=(say("alice"),))) == Nothing()
    assert decide(facts(spec=None, pending=(say("alice"),))) == Nothing()


def test_row_2_a_rejected_task_is_still_deleted_when_its_time_to_live_runs_out() -> None:
    rejected = facts(state=TaskState.REJECTED, spec=None, pending=(say("alice"),))
    assert decide(replace(rejected, expires_in=-1.0)) == Collect()
    assert decide(replace(rejected, expires_in=30.0)) == WaitToCollect(30.0)


def test_row_13_an_ended_task_is_deleted_once_its_time_to_live_has_passed() -> None:
    done = facts(state=TaskState.COMPLETED)
    assert decide(replace(done, expires_in=0.0)) == Collect()
    assert decide(replace(done, expires_in=-3600.0)) == Collect()
    assert decide(replace(done, expires_in=12.5)) == WaitToCollect(12.5)
    assert decide(replace(done, expires_in=None)) == Nothing()


def test_row_13_a_message_to_an_ended_task_is_answered_before_it_is_deleted() -> None:
    done = facts(state=TaskState.COMPLETED, pending=(say("alice"),), expires_in=-1.0)
    assert isinstance(decide(done), Refuse)


def test_row_3_a_view_behind_the_status_waits_for_the_last_record() -> None:
    stale = facts(records_current=False, pending=(say("alice"), say("mallory", "m2")))

    assert decide(stale) == AwaitRecords()


def test_row_4_a_turn_run_by_another_replica_is_waited_for() -> None:
    held = facts(lease=Lease.HELD, lease_wait=12.5, pending=(control("alice", "cancel"),))

    assert decide(held) == WaitForLease(12.5)


def test_row_4_never_waits_a_negative_time() -> None:
    assert decide(facts(lease=Lease.HELD, lease_wait=-3.0)) == WaitForLease(0.0)


def test_row_5_a_non_participant_is_refused_by_name() -> None:
    action = decide(facts(pending=(say("mallory"),)))

    assert action == Refuse("m1", "refused: mallory is not a participant of this task")


def test_row_5_a_non_participant_is_refused_before_a_participant_is_served() -> None:
    action = decide(facts(pending=(say("alice", "m1"), control("mallory", "cancel", "m2"))))

    assert isinstance(action, Refuse)
    assert action.message_id == "m2"


def test_row_6_an_ended_task_refuses_a_message_naming_its_state() -> None:
    action = decide(facts(state=TaskState.COMPLETED, pending=(say("alice"),)))

    assert action == Refuse("m1", "refused: the task is in a terminal state (TASK_STATE_COMPLETED)")


@pytest.mark.parametrize(
    ("state", "action"), [(TaskState.CANCELED, "cancel"), (TaskState.COMPLETED, "complete")]
)
def test_row_6_a_control_that_already_took_effect_is_acknowledged(
    state: TaskState, action: str
) -> None:
    assert decide(facts(state=state, pending=(control("alice", action),))) == Acknowledge("c1")


def test_row_6_a_control_asking_for_another_ending_is_refused() -> None:
    action = decide(facts(state=TaskState.COMPLETED, pending=(control("carol", "cancel"),)))

    assert action == Refuse("c1", "refused: the task is in a terminal state (TASK_STATE_COMPLETED)")


def test_row_7_a_participant_who_may_end_the_task_has_the_control_applied() -> None:
    assert decide(facts(pending=(control("alice", "complete"),))) == ApplyControl("c1")
    assert decide(facts(pending=(control("carol", "cancel"),))) == ApplyControl("c1")


def test_row_7_the_parent_may_cancel_its_child() -> None:
    child = facts(spec=CHILD_SPEC, lifecycle=Lifecycle.DELEGATED)

    assert decide(replace(child, pending=(control(PARENT_SENDER, "cancel"),))) == ApplyControl("c1")


def test_row_7_a_watcher_may_not_end_the_task() -> None:
    action = decide(facts(pending=(control("bob", "cancel"),)))

    assert action == Refuse("c1", "refused: bob is a watcher and may not cancel the task")


def test_row_7_a_control_goes_before_an_earlier_ordinary_message() -> None:
    action = decide(facts(pending=(say("alice", "m1"), control("carol", "cancel", "c1"))))

    assert action == ApplyControl("c1")


def test_row_7_a_control_cuts_into_an_open_turn() -> None:
    action = decide(facts(lease=Lease.MINE, pending=(control("alice", "cancel"),)))

    assert action == ApplyControl("c1")


def test_row_8_a_command_sent_first_runs_without_a_turn() -> None:
    action = decide(facts(pending=(command("bob", "cmd1"), say("alice", "m2"))))

    assert action == RunCommand("cmd1")


def test_row_8_a_command_after_an_ordinary_message_waits_for_the_turn() -> None:
    action = decide(facts(pending=(say("alice", "m1"), command("bob", "cmd1"))))

    assert action == RunTurn(3, resume=False)


@pytest.mark.parametrize("lease", [Lease.MINE, Lease.EXPIRED])
def test_row_9_an_open_turn_is_resumed(lease: Lease) -> None:
    open_turn = facts(state=TaskState.WORKING, lease=lease, pending=(say("alice"),))

    assert decide(open_turn) == RunTurn(2, resume=True)


@pytest.mark.parametrize("attempts", [0, 1, MAX_TURN_ATTEMPTS - 1])
def test_row_9_an_open_turn_started_fewer_times_than_the_bound_is_resumed(attempts: int) -> None:
    open_turn = facts(state=TaskState.WORKING, lease=Lease.EXPIRED, attempts=attempts)

    assert decide(open_turn) == RunTurn(2, resume=True)


def test_row_9_an_open_turn_started_the_bound_times_is_given_up() -> None:
    open_turn = facts(state=TaskState.WORKING, lease=Lease.MINE, attempts=MAX_TURN_ATTEMPTS)

    assert decide(open_turn) == GiveUpTurn(MAX_TURN_ATTEMPTS)


@pytest.mark.parametrize("ended", [TaskState.FAILED, TaskState.CANCELED, TaskState.COMPLETED])
def test_row_4a_a_task_whose_parent_has_ended_ends_with_it(ended: TaskState) -> None:
    child = facts(spec=CHILD_SPEC, parent_ended=(PARENT, ended), pending=(say("alice"),))

    assert decide(child) == EndWithParent(PARENT, ended)


def test_row_4a_an_open_turn_of_a_task_whose_parent_has_ended_ends_too() -> None:
    child = facts(
        spec=CHILD_SPEC,
        state=TaskState.WORKING,
        lease=Lease.MINE,
        parent_ended=(PARENT, TaskState.FAILED),
    )

    assert decide(child) == EndWithParent(PARENT, TaskState.FAILED)


def test_row_4a_an_ended_task_stays_as_it_ended_when_its_parent_ends() -> None:
    done = facts(
        spec=CHILD_SPEC, state=TaskState.COMPLETED, parent_ended=(PARENT, TaskState.FAILED)
    )

    assert not isinstance(decide(done), EndWithParent)


def test_row_5_a_message_too_big_to_take_is_refused_whoever_sent_it() -> None:
    too_big = Pending("m1", "alice", "ordinary", refusal="refused: the message carries 1.0 MiB")

    assert decide(facts(pending=(too_big,))) == Refuse("m1", "refused: the message carries 1.0 MiB")


def test_row_10_an_ordinary_message_starts_the_next_turn() -> None:
    assert decide(facts(pending=(say("carol"),))) == RunTurn(3, resume=False)


def test_row_10_a_childs_news_starts_the_next_turn() -> None:
    assert decide(facts(state=TaskState.WORKING, news=True)) == RunTurn(3, resume=False)


def test_row_10_a_delegated_task_starts_from_its_brief() -> None:
    brief = facts(
        state=TaskState.SUBMITTED,
        lifecycle=Lifecycle.DELEGATED,
        turn=0,
        pending=(say("system", "brief"),),
    )

    assert decide(brief) == RunTurn(1, resume=False)


def test_row_10_news_does_not_wake_an_ended_task() -> None:
    assert decide(facts(state=TaskState.COMPLETED, news=True)) == Nothing()


def test_row_11_a_conversation_submitted_without_a_message_parks() -> None:
    assert decide(facts(state=TaskState.SUBMITTED, turn=0)) == Park()


def test_row_11_a_conversation_awaiting_its_announced_first_message_stays_submitted() -> None:
    announced = facts(state=TaskState.SUBMITTED, turn=0, first_message_left=29.5)

    assert decide(announced) == AwaitFirstMessage(29.5)


def test_row_11_the_announced_first_message_arriving_starts_the_first_turn() -> None:
    # The worker stops counting the wait once the message is pending (first_message_left None);
    # the decision goes straight to the turn, whatever the count said.
    for left in (None, 12.0, -1.0):
        arrived = facts(
            state=TaskState.SUBMITTED, turn=0, pending=(say("alice"),), first_message_left=left
        )
        assert decide(arrived) == RunTurn(1, resume=False)


def test_row_11_an_announced_first_message_that_never_came_parks_saying_so() -> None:
    for left in (0.0, -0.5, -3600.0):
        overdue = facts(state=TaskState.SUBMITTED, turn=0, first_message_left=left)
        assert decide(overdue) == Park(overdue=True)


def test_row_11_a_first_command_or_control_is_served_as_itself() -> None:
    waiting = facts(state=TaskState.SUBMITTED, turn=0, first_message_left=10.0)

    assert decide(replace(waiting, pending=(command("alice"),))) == RunCommand("cmd1")
    assert decide(replace(waiting, pending=(control("alice", "cancel"),))) == ApplyControl("c1")


def test_row_11_only_a_submitted_conversation_waits_for_its_first_message() -> None:
    parked = facts(first_message_left=10.0)  # INPUT_REQUIRED after turn 2
    delegated = facts(
        state=TaskState.SUBMITTED, lifecycle=Lifecycle.DELEGATED, turn=0, first_message_left=10.0
    )

    assert decide(parked) == Nothing()
    assert decide(delegated) == Nothing()


def test_row_11_a_task_whose_parent_has_ended_is_cancelled_not_kept_waiting() -> None:
    orphan = facts(
        state=TaskState.SUBMITTED,
        turn=0,
        spec=CHILD_SPEC,
        first_message_left=10.0,
        parent_ended=(PARENT, TaskState.CANCELED),
    )

    assert decide(orphan) == EndWithParent(PARENT, TaskState.CANCELED)


@given(any_facts)
def test_a_conversation_is_parked_unasked_only_with_no_first_message_on_its_way(f: Facts) -> None:
    action = decide(f)
    if isinstance(action, Park) and not action.overdue:
        assert f.first_message_left is None
    if isinstance(action, AwaitFirstMessage):
        assert f.state is TaskState.SUBMITTED
        assert f.first_message_left is not None
        assert f.first_message_left > 0
        assert action.seconds == f.first_message_left


def test_row_11_a_delegated_task_waits_for_its_brief_instead_of_parking() -> None:
    submitted = facts(state=TaskState.SUBMITTED, lifecycle=Lifecycle.DELEGATED, turn=0)

    assert decide(submitted) == Nothing()


def test_row_12_stale_sub_task_rows_are_synced() -> None:
    assert decide(facts(rows_stale=True)) == SyncRows()
    assert decide(facts(state=TaskState.COMPLETED, rows_stale=True)) == SyncRows()


def test_row_13_otherwise_nothing() -> None:
    assert decide(facts()) == Nothing()


def test_a_failed_conversation_resumes_with_a_participants_message() -> None:
    failed = facts(state=TaskState.FAILED, turn=4, pending=(say("alice"),))

    assert decide(failed) == RunTurn(5, resume=False)


def test_a_failed_conversation_may_still_be_cancelled() -> None:
    failed = facts(state=TaskState.FAILED, pending=(control("carol", "cancel"),))

    assert decide(failed) == ApplyControl("c1")


def test_a_failed_delegated_task_refuses_a_message_naming_its_state() -> None:
    failed = facts(
        spec=CHILD_SPEC,
        lifecycle=Lifecycle.DELEGATED,
        state=TaskState.FAILED,
        pending=(say(PARENT_SENDER),),
    )

    assert decide(failed) == Refuse(
        "m1", "refused: the task is in a terminal state (TASK_STATE_FAILED)"
    )


@pytest.mark.parametrize("lease", [Lease.MINE, Lease.EXPIRED])
@pytest.mark.parametrize("state", [TaskState.COMPLETED, TaskState.CANCELED])
def test_an_ended_task_with_a_runner_left_over_does_not_run_a_turn(
    state: TaskState, lease: Lease
) -> None:
    """Every write that ends a task clears its runner, but should one be left over (a lease
    renewal landing after the turn's last write) the task must stay ended."""
    assert not isinstance(decide(facts(state=state, lease=lease)), RunTurn)


# -- properties -----------------------------------------------------------------------------------


@given(any_facts)
def test_decide_is_total_and_deterministic(f: Facts) -> None:
    first = decide(f)

    assert isinstance(first, ALL_ACTIONS)
    assert decide(f) == first


@given(any_facts)
def test_an_action_about_a_message_names_a_pending_one(f: Facts) -> None:
    subject(f, decide(f))  # asserts the id is pending


@given(any_facts)
def test_a_non_participant_never_gets_a_control_applied_or_a_command_run(f: Facts) -> None:
    action = decide(f)
    about = subject(f, action)

    if isinstance(action, (ApplyControl, RunCommand)):
        assert about is not None
        assert may_speak(f, about), f"{about.sender}'s message was acted on"


@given(any_facts)
def test_a_non_participant_pending_holds_everything_else_back(f: Facts) -> None:
    """While a non-participant's message waits, only refusals (or an ended task's acks)
    happen: it never leads to a turn, a control or a command by itself."""
    action = decide(f)
    if not reaches_the_messages(f) or all(may_speak(f, m) for m in f.pending):
        return

    assert isinstance(action, (Refuse, Acknowledge))


@given(any_facts)
def test_a_refused_non_participant_is_named_in_the_reason(f: Facts) -> None:
    action = decide(f)
    about = subject(f, action)

    if isinstance(action, Refuse) and about is not None and not may_speak(f, about):
        assert action.reason == f"refused: {about.sender} is not a participant of this task"


@given(any_facts)
def test_a_new_turn_needs_a_speakers_message_or_news(f: Facts) -> None:
    action = decide(f)
    if not isinstance(action, RunTurn):
        return

    assert f.spec is not None
    if action.resume:
        assert f.lease in (Lease.MINE, Lease.EXPIRED)
        assert action.turn == f.turn
    else:
        assert action.turn == f.turn + 1
        spoken = any(m.kind == "ordinary" and may_speak(f, m) for m in f.pending)
        assert spoken or f.news


@given(any_facts.map(lambda f: replace(f, lease=Lease.HELD)))
def test_a_lease_held_elsewhere_never_lets_this_replica_act(f: Facts) -> None:
    action = decide(f)

    assert isinstance(action, (Initialise, Nothing, AwaitRecords, WaitForLease))
    if isinstance(action, WaitForLease):
        assert action.seconds == max(f.lease_wait, 0.0)


@given(any_facts)
def test_only_a_lease_held_elsewhere_is_waited_for(f: Facts) -> None:
    if isinstance(decide(f), WaitForLease):
        assert f.lease is Lease.HELD


@given(any_facts.map(lambda f: replace(f, records_current=False)))
def test_a_view_behind_the_status_never_writes(f: Facts) -> None:
    action = decide(f)

    assert not isinstance(action, WRITES)
    assert isinstance(action, (Initialise, Nothing, AwaitRecords))


@given(any_facts)
def test_a_watcher_never_ends_the_task(f: Facts) -> None:
    action = decide(f)
    about = subject(f, action)

    if isinstance(action, ApplyControl):
        assert about is not None
        assert about.sender != "bob"


@given(live_facts())
def test_a_watchers_control_on_a_live_task_is_refused_naming_the_watcher(f: Facts) -> None:
    action = decide(f)
    about = subject(f, action)
    if about is None or about.sender != "bob" or about.kind != "control" or closed(f):
        return

    assert isinstance(action, Refuse)
    assert "bob is a watcher" in action.reason
    assert about.control is not None
    assert about.control in action.reason


@given(ended_facts())
def test_an_ended_task_never_runs_a_command_or_applies_a_control(f: Facts) -> None:
    assert not isinstance(decide(f), (RunCommand, ApplyControl, Park))


@given(ended_facts(), st.sampled_from((Lease.FREE, Lease.HELD)))
def test_an_ended_task_without_a_runner_never_runs_a_turn(f: Facts, lease: Lease) -> None:
    """Every write that ends a task clears ``status.runner``, so the lease reads FREE (or,
    briefly, HELD by the replica that wrote it) afterwards."""
    f = replace(f, lease=lease)

    assert not isinstance(decide(f), RunTurn)


@given(ended_facts(live_facts()))
def test_an_ended_task_answers_its_first_message_with_a_refusal_or_an_ack(f: Facts) -> None:
    if f.state is TaskState.REJECTED or not f.pending:
        return
    first = f.pending[0]

    action = decide(f)

    if not may_speak(f, first):
        assert isinstance(action, Refuse)
        assert action.message_id == first.message_id
    elif first.kind == "control" and ENDS_IN[first.control or ""] is f.state and may_end(f, first):
        assert action == Acknowledge(first.message_id)
    else:
        assert f.state is not None
        assert action == Refuse(
            first.message_id, f"refused: the task is in a terminal state ({f.state.value})"
        )


@given(live_facts(), st.data())
def test_an_ending_already_in_effect_is_acknowledged_for_who_may_end_it(
    f: Facts, data: st.DataObject
) -> None:
    enders = ["alice", "carol"] + ([PARENT_SENDER] if f.spec is CHILD_SPEC else [])
    sender = data.draw(st.sampled_from(enders))
    action, state = data.draw(st.sampled_from(sorted(ENDS_IN.items())))
    ended = replace(f, state=state, pending=(control(sender, action, "x1"), *f.pending))

    assert decide(ended) == Acknowledge("x1")


@settings(max_examples=200)
@given(live_facts(), st.data())
def test_a_failed_conversation_starts_a_new_turn_for_a_participants_message(
    f: Facts, data: st.DataObject
) -> None:
    participant = data.draw(st.sampled_from(("alice", "bob", "carol")))
    later = data.draw(pendings(senders=("alice", "bob", "carol")))
    later = tuple(m for m in later if m.kind != "control")
    failed = replace(
        f,
        state=TaskState.FAILED,
        lifecycle=Lifecycle.CONVERSATION,
        lease=Lease.FREE,
        pending=(say(participant, "x1"), *later),
        deadline_left=None,
    )

    assert decide(failed) == RunTurn(f.turn + 1, resume=False)


@given(live_facts(), st.sampled_from(("alice", "bob", "carol", PARENT_SENDER)))
def test_a_failed_delegated_task_refuses_a_participants_message(f: Facts, sender: str) -> None:
    failed = replace(
        f,
        spec=CHILD_SPEC,
        state=TaskState.FAILED,
        lifecycle=Lifecycle.DELEGATED,
        pending=(say(sender, "x1"), *f.pending),
    )

    action = decide(failed)

    assert isinstance(action, Refuse)
    assert action.message_id == "x1"
    assert "terminal state" in action.reason
    assert TaskState.FAILED.value in action.reason


@given(any_facts)
def test_a_task_that_has_not_ended_is_never_deleted_whatever_its_clock_says(f: Facts) -> None:
    if f.state is None or not f.state.is_terminal:
        assert not isinstance(decide(f), (Collect, WaitToCollect))


@given(ended_facts())
def test_an_ended_task_is_deleted_only_with_no_message_left_unanswered(f: Facts) -> None:
    if isinstance(decide(f), Collect) and f.state is not TaskState.REJECTED and f.spec:
        assert not f.pending


def test_row_10_no_new_turn_starts_once_the_working_time_is_spent() -> None:
    asked = facts(state=TaskState.INPUT_REQUIRED, pending=(say("alice"),))
    assert decide(replace(asked, deadline_left=0.0)) == FailPastDeadline()
    assert decide(replace(asked, deadline_left=5.0)) == RunTurn(3, resume=False)


def test_row_9_an_open_turn_past_the_deadline_is_not_resumed() -> None:
    open_turn = facts(state=TaskState.WORKING, lease=Lease.EXPIRED, turn=3, deadline_left=-1.0)
    assert decide(open_turn) == FailPastDeadline()


def test_a_participant_may_still_cancel_a_task_past_its_deadline() -> None:
    spent = facts(state=TaskState.INPUT_REQUIRED, deadline_left=-1.0)
    assert decide(replace(spent, pending=(control("alice", "cancel"),))) == ApplyControl("c1")


def test_row_14_a_task_waiting_past_its_input_timeout_fails_or_completes() -> None:
    waiting = facts(state=TaskState.INPUT_REQUIRED, input_left=-1.0)
    assert decide(waiting) == InputTimedOut(complete=False)
    assert decide(replace(waiting, on_timeout="complete")) == InputTimedOut(complete=True)
    assert decide(replace(waiting, input_left=30.0)) == WaitForInput(30.0)
    assert decide(replace(waiting, input_left=None)) == Nothing()


def test_row_14a_an_idle_conversation_ends_as_on_idle_says() -> None:
    idle = facts(state=TaskState.INPUT_REQUIRED, idle_left=-1.0)
    assert decide(idle) == IdleEnded(complete=True)
    assert decide(replace(idle, on_idle="cancel")) == IdleEnded(complete=False)
    assert decide(replace(idle, idle_left=60.0)) == WaitForInput(60.0)


def test_row_14a_the_nearer_of_the_input_and_idle_timeouts_is_waited_for() -> None:
    both = facts(state=TaskState.INPUT_REQUIRED, idle_left=60.0, input_left=5.0)
    assert decide(both) == WaitForInput(5.0)
    assert decide(replace(both, input_left=-1.0)) == InputTimedOut(complete=False)


def test_row_14a_a_message_that_arrives_before_the_idle_timeout_is_answered() -> None:
    idle = facts(state=TaskState.INPUT_REQUIRED, idle_left=-1.0, pending=(say("alice"),))
    assert decide(idle) == RunTurn(3, resume=False)


def test_row_14_a_message_that_arrives_in_time_is_answered_not_timed_out() -> None:
    waiting = facts(state=TaskState.INPUT_REQUIRED, input_left=-1.0, pending=(say("alice"),))
    assert decide(waiting) == RunTurn(3, resume=False)


@given(any_facts)
def test_only_a_task_waiting_for_a_participant_times_out(f: Facts) -> None:
    if isinstance(decide(f), (InputTimedOut, WaitForInput)):
        assert f.state in (TaskState.INPUT_REQUIRED, TaskState.AUTH_REQUIRED)
        assert not f.pending or f.state is TaskState.REJECTED or f.spec is None


@given(any_facts)
def test_a_turn_never_starts_past_the_deadline(f: Facts) -> None:
    if f.deadline_left is not None and f.deadline_left <= 0:
        assert not isinstance(decide(f), RunTurn)


def test_row_10_a_raised_budget_starts_a_turn_that_goes_on() -> None:
    waiting = facts(state=TaskState.INPUT_REQUIRED, budget_freed=True)
    assert decide(waiting) == RunTurn(3, resume=False)
    assert decide(replace(waiting, budget_freed=False)) == Nothing()


# -- participant tasks (row 7a) --------------------------------------------------------------------


QUESTION_SPEC = TaskSpec(
    goal="Approve the budget?",
    participants=(
        Participant(id="bob", role=Role.ASSIGNEE),
        Participant(id="alice", role=Role.WATCHER),
        Participant(id="carol", role=Role.REPORTER),
    ),
    parent=TaskLink(task_id=PARENT),
)


def question(**changes: Any) -> Facts:
    """A participant task waiting for bob's answer."""
    return replace(facts(spec=QUESTION_SPEC, lifecycle=Lifecycle.PARTICIPANT, turn=0), **changes)


def test_row_7a_the_assignees_answer_starts_the_turn_that_takes_it() -> None:
    assert decide(question(pending=(say("bob"),))) == RunTurn(1, resume=False)


@pytest.mark.parametrize("sender", ["alice", "carol", PARENT_SENDER])
def test_row_7a_anyone_elses_words_are_refused_naming_whose_answer_it_waits_for(
    sender: str,
) -> None:
    action = decide(question(pending=(say(sender),)))
    assert action == Refuse(
        "m1",
        f"refused: this task waits for bob's answer; a message from {sender} does not answer it",
    )


def test_row_7a_a_watchers_words_before_the_answer_are_refused_first() -> None:
    action = decide(question(pending=(say("alice", "m1"), say("bob", "m2"))))
    assert isinstance(action, Refuse)
    assert action.message_id == "m1"


def test_row_7a_commands_and_controls_of_others_are_not_answers_and_are_served() -> None:
    assert decide(question(pending=(command("carol"),))) == RunCommand("cmd1")
    assert decide(question(pending=(control(PARENT_SENDER, "cancel"),))) == ApplyControl("c1")


@given(any_facts.map(lambda f: replace(f, lifecycle=Lifecycle.PARTICIPANT, spec=QUESTION_SPEC)))
def test_a_participant_task_starts_a_new_turn_only_for_its_assignees_answer_or_news(
    f: Facts,
) -> None:
    action = decide(f)
    if isinstance(action, RunTurn) and not action.resume:
        answered = any(m.kind == "ordinary" and m.sender == "bob" for m in f.pending)
        assert answered or f.news or f.budget_freed
        assert not any(
            m.kind == "ordinary" and m.sender != "bob" and may_speak(f, m) for m in f.pending
        )


# -- while a turn runs: decide_during_turn ---------------------------------------------------------

# The second table's names, kept with it.
from tiny_harness.core.actions import (  # noqa: E402
    CutReason,
    CutTurn,
    KeepGoing,
    RunCommandNow,
    SyncRowsNow,
)
from tiny_harness.core.decide import TurnFacts, decide_during_turn  # noqa: E402

_TEAM = TaskSpec.model_validate(
    {
        "goal": "ship it",
        "participants": [
            {"id": "alice", "role": "assignee"},
            {"id": "bob", "role": "watcher"},
        ],
    }
)
_CANCEL_BY_ALICE = Pending("c1", "alice", "control", "cancel")
_CANCEL_BY_BOB = Pending("c2", "bob", "control", "cancel")
_CANCEL_BY_MALLORY = Pending("c3", "mallory", "control", "cancel")
_STATUS = Pending("s1", "bob", "command")
_HELLO = Pending("m1", "alice", "ordinary")


@pytest.mark.parametrize(
    ("facts", "expected"),
    [
        # T1: the task is gone
        (TurnFacts(present=False), CutTurn(CutReason.GONE)),
        (
            TurnFacts(present=True, spec=_TEAM, pending=(_STATUS,), parent_ended=True),
            CutTurn(CutReason.PARENT),
        ),
        # T2: a control from someone who may end the task cuts, whatever else is pending
        (
            TurnFacts(present=True, spec=_TEAM, pending=(_STATUS, _CANCEL_BY_ALICE)),
            CutTurn(CutReason.CONTROL),
        ),
        (
            TurnFacts(present=True, spec=_TEAM, pending=(_CANCEL_BY_ALICE,), closed=True),
            CutTurn(CutReason.CONTROL),
        ),
        # a completion that would be refused does not cut: the turn answers first
        (
            TurnFacts(
                present=True,
                spec=_TEAM,
                pending=(Pending("k1", "alice", "control", "complete"),),
                refused=frozenset({"k1"}),
            ),
            KeepGoing(),
        ),
        (
            TurnFacts(
                present=True, spec=_TEAM, pending=(Pending("k1", "alice", "control", "complete"),)
            ),
            CutTurn(CutReason.CONTROL),
        ),
        # a watcher's or a stranger's control does not cut (the next pass refuses it)
        (TurnFacts(present=True, spec=_TEAM, pending=(_CANCEL_BY_BOB,)), KeepGoing()),
        (TurnFacts(present=True, spec=_TEAM, pending=(_CANCEL_BY_MALLORY,)), KeepGoing()),
        # T3: a closed turn takes nothing more
        (
            TurnFacts(present=True, spec=_TEAM, pending=(_STATUS,), closed=True, rows_stale=True),
            KeepGoing(),
        ),
        # T4: a command not yet run runs now; one already run does not run twice
        (TurnFacts(present=True, spec=_TEAM, pending=(_HELLO, _STATUS)), RunCommandNow("s1")),
        (
            TurnFacts(present=True, spec=_TEAM, pending=(_STATUS,), commands_run=frozenset({"s1"})),
            KeepGoing(),
        ),
        # T5: stale rows are written
        (TurnFacts(present=True, spec=_TEAM, pending=(_HELLO,), rows_stale=True), SyncRowsNow()),
        # T6: an ordinary message is the running turn's to take at its next drain
        (TurnFacts(present=True, spec=_TEAM, pending=(_HELLO,)), KeepGoing()),
    ],
)
def test_what_happens_while_a_turn_runs(facts: TurnFacts, expected: object) -> None:
    assert decide_during_turn(facts) == expected
