"""The one backoff (core/backoff.py): waits double from the first up to the cap, jitter takes
at most its share off each, and a server's Retry-After is believed within the cap."""

from __future__ import annotations

import random

import pytest

from tiny_harness.core.backoff import Backoff


def test_waits_double_from_the_first_and_stop_at_the_cap() -> None:
    waits = Backoff(first=1.0, cap=30.0, jitter=0.0)

    assert [waits.delay(n) for n in range(1, 8)] == [1.0, 2.0, 4.0, 8.0, 16.0, 30.0, 30.0]


def test_a_retry_far_along_is_the_cap_not_an_overflow() -> None:
    assert Backoff(first=0.5, cap=10.0, jitter=0.0).delay(5000) == 10.0


def test_retry_zero_or_less_waits_the_first() -> None:
    assert Backoff(first=0.5, cap=10.0, jitter=0.0).delay(0) == 0.5


@pytest.mark.parametrize("jitter", [0.25, 0.5, 1.0])
def test_jitter_takes_at_most_its_share_off_each_wait(jitter: float) -> None:
    seeded = random.Random(7)
    waits = Backoff(first=2.0, cap=8.0, jitter=jitter, draw=seeded.random)

    for retry, full in ((1, 2.0), (2, 4.0), (3, 8.0), (9, 8.0)):
        seen = [waits.delay(retry) for _ in range(200)]
        assert all(full * (1 - jitter) <= w <= full for w in seen)
        assert max(seen) - min(seen) > full * jitter / 2  # spread out, not in lockstep


def test_the_ends_of_the_jitter_range() -> None:
    assert Backoff(first=4.0, cap=4.0, draw=lambda: 0.0).delay(1) == 4.0
    assert Backoff(first=4.0, cap=4.0, draw=lambda: 0.999).delay(1) == pytest.approx(2.002)


def test_retry_after_is_honoured_within_the_cap_and_without_jitter() -> None:
    waits = Backoff(first=1.0, cap=8.0, draw=lambda: 0.5)

    assert waits.delay(1, retry_after=3.0) == 3.0
    assert waits.delay(4, retry_after=0.25) == 0.25
    assert waits.delay(1, retry_after=60.0) == 8.0
    assert waits.delay(1, retry_after=-5.0) == 0.0


@pytest.mark.parametrize(
    "options", [{"first": -1.0, "cap": 1.0}, {"first": 1.0, "cap": -1.0}, {"jitter": 1.5}]
)
def test_a_backoff_that_cannot_be_is_refused(options: dict[str, float]) -> None:
    with pytest.raises(ValueError, match="backoff"):
        Backoff(**{"first": 1.0, "cap": 1.0, **options})
