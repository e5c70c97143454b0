"""The admission of workers: a bound, first come first served, nothing per task while it
waits, and a slot given back exactly once (a turn gives it back early, the exit again)."""

from __future__ import annotations

import asyncio
import random

import pytest

from tiny_harness.operator.slots import Ticket, WorkerSlots


class Started:
    """A start callback that records what it started and keeps the tickets."""

    def __init__(self) -> None:
        self.keys: list[str] = []
        self.tickets: dict[str, Ticket] = {}

    def __call__(self, key: str, ticket: Ticket) -> None:
        self.keys.append(key)
        self.tickets[key] = ticket


def test_keys_start_at_once_up_to_the_limit_then_queue_in_the_order_they_asked() -> None:
    started = Started()
    slots = WorkerSlots(started, limit=2)

    for key in "abcde":
        slots.ask(key)

    assert started.keys == ["a", "b"]
    assert slots.waiting == 3
    started.tickets["b"].release()
    assert started.keys == ["a", "b", "c"]
    started.tickets["a"].release()
    started.tickets["c"].release()
    assert started.keys == ["a", "b", "c", "d", "e"]
    assert slots.waiting == 0


def test_asking_again_while_queued_queues_once_and_keeps_the_place() -> None:
    started = Started()
    slots = WorkerSlots(started, limit=1)
    for key in ["a", "b", "c", "b", "b"]:
        slots.ask(key)

    assert slots.waiting == 2
    started.tickets["a"].release()
    started.tickets["b"].release()
    assert started.keys == ["a", "b", "c"]


def test_a_ticket_released_twice_gives_back_one_slot() -> None:
    started = Started()
    slots = WorkerSlots(started, limit=1)
    for key in "abc":
        slots.ask(key)

    started.tickets["a"].release()  # the turn starts waiting on its model
    started.tickets["a"].release()  # the worker exits
    assert started.keys == ["a", "b"]
    assert slots.active == 1
    assert started.tickets["a"].released


def test_a_dropped_key_is_never_started() -> None:
    started = Started()
    slots = WorkerSlots(started, limit=1)
    for key in "abc":
        slots.ask(key)

    slots.drop("b")
    started.tickets["a"].release()

    assert started.keys == ["a", "c"]


def test_a_start_that_fails_gives_its_slot_back() -> None:
    def start(key: str, ticket: Ticket) -> None:
        raise RuntimeError("no")

    slots = WorkerSlots(start, limit=1)
    with pytest.raises(RuntimeError):
        slots.ask("a")
    assert slots.active == 0


async def test_a_burst_of_workers_never_runs_more_than_the_limit_and_all_finish() -> None:
    """Run the burst many times: workers finish after random awaits, while keys keep asking."""
    for _ in range(50):
        await one_burst()


async def one_burst() -> None:
    running = 0
    most = 0
    finished: list[str] = []
    tasks: list[asyncio.Task[None]] = []

    async def work(key: str, ticket: Ticket) -> None:
        nonlocal running, most
        running += 1
        most = max(most, running)
        for _ in range(random.randint(0, 3)):
            await asyncio.sleep(0)
        running -= 1
        ticket.release()
        finished.append(key)

    def start(key: str, ticket: Ticket) -> None:
        tasks.append(asyncio.create_task(work(key, ticket)))

    slots = WorkerSlots(start, limit=4)
    keys = [f"t{i}" for i in range(60)]
    for key in keys:
        slots.ask(key)
        if random.random() < 0.3:
            await asyncio.sleep(0)
    while len(finished) < len(keys):
        await asyncio.gather(*tasks)

    assert most == 4
    assert sorted(finished) == sorted(keys)
    assert slots.active == 0


def test_a_limit_below_one_is_refused() -> None:
    with pytest.raises(ValueError, match="at least 1"):
        WorkerSlots(Started(), limit=0)


def test_paused_slots_admit_nothing_and_resumed_take_the_queue_in_order() -> None:
    started: list[str] = []
    slots: WorkerSlots[str] = WorkerSlots(lambda key, ticket: started.append(key), limit=2)
    slots.ask("a")
    slots.pause()
    slots.pause()  # two listings at once: both must end
    for key in ("b", "c", "d"):
        slots.ask(key)
    assert started == ["a"]
    slots.resume()
    assert started == ["a"]
    slots.resume()
    assert started == ["a", "b"]  # the limit still holds
    assert slots.waiting == 2
