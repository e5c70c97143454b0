"""The runner lease, timed only by this replica's monotonic clock.

Two replicas' wall clocks can disagree by minutes. If a lease were judged by the renew time
another replica wrote, a fast clock here would take a live turn over and two replicas would run
it at once. So the observer counts how long *it* has seen the same (holder, epoch, renewTime),
and the holder gives up before anyone else could count its lease out.
"""

from __future__ import annotations

import pytest

from tiny_harness.core.decide import Lease
from tiny_harness.core.task import Runner
from tiny_harness.operator.lease import SAFETY, Holding, LeaseLostError, LeaseObserver

LEASE_SECONDS = 30.0
KEY = ("team-a", "release")
NOW = "2026-11-30T16:00:00.000000Z"


class FakeClock:
    """A monotonic clock the test moves by hand."""

    def __init__(self, start: float = 1000.0) -> None:
        self.now = start

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def runner(holder: str = "replica-b", renew_time: str = NOW, epoch: int = 1) -> Runner:
    return Runner(holder=holder, renew_time=renew_time, epoch=epoch)


@pytest.fixture
def clock() -> FakeClock:
    return FakeClock()


@pytest.fixture
def observer(clock: FakeClock) -> LeaseObserver:
    return LeaseObserver("replica-a", LEASE_SECONDS, clock=clock)


# -- LeaseObserver --------------------------------------------------------------------------------


def test_no_runner_is_a_free_lease(observer: LeaseObserver) -> None:
    assert observer.judge(KEY, None) == (Lease.FREE, 0.0)


def test_a_lease_in_this_replicas_name_is_mine_however_old(
    observer: LeaseObserver, clock: FakeClock
) -> None:
    mine = runner(holder="replica-a", renew_time="2001-01-01T00:00:00Z")

    assert observer.judge(KEY, mine) == (Lease.MINE, 0.0)
    clock.advance(10 * LEASE_SECONDS)
    assert observer.judge(KEY, mine) == (Lease.MINE, 0.0)


def test_another_replicas_lease_is_held_for_the_whole_lease_time_from_first_sight(
    observer: LeaseObserver, clock: FakeClock
) -> None:
    assert observer.judge(KEY, runner()) == (Lease.HELD, LEASE_SECONDS)

    clock.advance(12.0)
    assert observer.judge(KEY, runner()) == (Lease.HELD, 18.0)

    clock.advance(17.9)
    state, remaining = observer.judge(KEY, runner())
    assert state is Lease.HELD
    assert remaining == pytest.approx(0.1)


def test_an_unrenewed_lease_expires_after_the_lease_time_on_this_clock(
    observer: LeaseObserver, clock: FakeClock
) -> None:
    observer.judge(KEY, runner())

    clock.advance(LEASE_SECONDS)

    assert observer.judge(KEY, runner()) == (Lease.EXPIRED, 0.0)
    clock.advance(100.0)
    assert observer.judge(KEY, runner()) == (Lease.EXPIRED, 0.0)


@pytest.mark.parametrize(
    "renew_time",
    [
        "1970-01-01T00:00:00Z",  # the holder's clock is decades slow
        "2999-12-31T23:59:59Z",  # or centuries fast
        "not a time at all",
    ],
)
def test_the_renew_time_written_says_nothing_about_expiry(
    observer: LeaseObserver, clock: FakeClock, renew_time: str
) -> None:
    lease = runner(renew_time=renew_time)

    assert observer.judge(KEY, lease) == (Lease.HELD, LEASE_SECONDS)
    clock.advance(LEASE_SECONDS - 1)
    assert observer.judge(KEY, lease)[0] is Lease.HELD
    clock.advance(1)
    assert observer.judge(KEY, lease)[0] is Lease.EXPIRED


def test_a_lease_first_seen_late_gets_the_whole_lease_time(
    observer: LeaseObserver, clock: FakeClock
) -> None:
    """A replica that just started cannot know how long the lease has gone unrenewed."""
    clock.advance(3600.0)

    assert observer.judge(KEY, runner(renew_time="2026-11-30T15:00:00Z")) == (
        Lease.HELD,
        LEASE_SECONDS,
    )


def test_a_renewal_restarts_the_count(observer: LeaseObserver, clock: FakeClock) -> None:
    observer.judge(KEY, runner(renew_time="2026-11-30T16:00:00Z"))
    clock.advance(25.0)

    renewed = runner(renew_time="2026-11-30T16:00:10Z")
    assert observer.judge(KEY, renewed) == (Lease.HELD, LEASE_SECONDS)
    clock.advance(25.0)
    assert observer.judge(KEY, renewed) == (Lease.HELD, 5.0)


def test_a_new_epoch_restarts_the_count_even_with_the_same_renew_time(
    observer: LeaseObserver, clock: FakeClock
) -> None:
    observer.judge(KEY, runner(epoch=1))
    clock.advance(LEASE_SECONDS)
    assert observer.judge(KEY, runner(epoch=1))[0] is Lease.EXPIRED

    assert observer.judge(KEY, runner(epoch=2)) == (Lease.HELD, LEASE_SECONDS)


def test_a_new_holder_restarts_the_count(observer: LeaseObserver, clock: FakeClock) -> None:
    observer.judge(KEY, runner(holder="replica-b"))
    clock.advance(LEASE_SECONDS)

    assert observer.judge(KEY, runner(holder="replica-c")) == (Lease.HELD, LEASE_SECONDS)


def test_each_task_is_counted_on_its_own(observer: LeaseObserver, clock: FakeClock) -> None:
    other = ("team-a", "changelog")
    observer.judge(KEY, runner())
    clock.advance(20.0)
    observer.judge(other, runner())
    clock.advance(10.0)

    assert observer.judge(KEY, runner())[0] is Lease.EXPIRED
    assert observer.judge(other, runner()) == (Lease.HELD, 20.0)


@pytest.mark.parametrize("interlude", [None, "mine"])
def test_a_lease_freed_or_taken_here_is_counted_afresh_when_seen_again(
    observer: LeaseObserver, clock: FakeClock, interlude: str | None
) -> None:
    observer.judge(KEY, runner())
    clock.advance(LEASE_SECONDS - 1)
    observer.judge(KEY, None if interlude is None else runner(holder="replica-a"))
    clock.advance(5.0)

    assert observer.judge(KEY, runner()) == (Lease.HELD, LEASE_SECONDS)


def test_forgetting_a_task_restarts_its_count(observer: LeaseObserver, clock: FakeClock) -> None:
    observer.judge(KEY, runner())
    clock.advance(LEASE_SECONDS - 1)

    observer.forget(KEY)
    clock.advance(5.0)

    assert observer.judge(KEY, runner()) == (Lease.HELD, LEASE_SECONDS)


# -- Holding --------------------------------------------------------------------------------------


def test_a_holding_lasts_a_safe_share_of_the_lease(clock: FakeClock) -> None:
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)

    assert holding.deadline == clock.now + LEASE_SECONDS * SAFETY
    assert SAFETY < 1, "the holder must stop before anyone else can count its lease out"


def test_a_holding_checks_out_until_its_deadline_then_is_lost(clock: FakeClock) -> None:
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)

    clock.advance(LEASE_SECONDS * SAFETY - 0.01)
    holding.check()
    assert not holding.lost

    clock.advance(0.01)
    with pytest.raises(LeaseLostError, match="ran out before it could be renewed"):
        holding.check()
    assert holding.lost


def test_a_renewal_counts_from_when_it_was_sent(clock: FakeClock) -> None:
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)
    clock.advance(10.0)
    sent_at = clock.now
    clock.advance(5.0)  # the renewal took five seconds to come back

    holding.renewed(sent_at)

    assert holding.deadline == sent_at + LEASE_SECONDS * SAFETY
    clock.now = sent_at + LEASE_SECONDS * SAFETY - 0.01
    holding.check()
    clock.advance(0.01)
    with pytest.raises(LeaseLostError):
        holding.check()


def test_a_late_answer_to_an_older_renewal_does_not_shorten_the_holding(clock: FakeClock) -> None:
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)
    start = clock.now
    holding.renewed(start + 10.0)

    holding.renewed(start + 4.0)

    assert holding.deadline == start + 10.0 + LEASE_SECONDS * SAFETY


def test_a_lost_holding_stays_lost_even_after_a_renewal(clock: FakeClock) -> None:
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)
    clock.advance(LEASE_SECONDS)
    with pytest.raises(LeaseLostError):
        holding.check()

    holding.renewed(clock.now)

    with pytest.raises(LeaseLostError):
        holding.check()


def test_a_holding_marked_lost_elsewhere_refuses_at_once(clock: FakeClock) -> None:
    """The worker marks a holding lost when a write finds another holder or a fenced record."""
    holding = Holding(epoch=3, lease_seconds=LEASE_SECONDS, clock=clock)

    holding.lost = True

    with pytest.raises(LeaseLostError):
        holding.check()
