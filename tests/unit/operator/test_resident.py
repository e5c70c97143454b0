"""What the operator keeps whole: the most recently used within its bytes, never a pinned
task's group (operator/resident.py)."""

from __future__ import annotations

from dataclasses import dataclass

from tiny_harness.operator.resident import Resident


@dataclass(eq=False)
class Text:
    name: str
    size: int
    groups: tuple[tuple[str, str], ...]
    kept: bool = True

    def drop_text(self) -> None:
        self.kept = False


def text(name: str, size: int = 10, task: str | None = None) -> Text:
    return Text(name, size, (("ns", task or name),))


def test_the_least_recently_used_are_dropped_to_stay_within_the_budget() -> None:
    store = Resident(budget=30)
    a, b, c, d = (text(n) for n in "abcd")
    for t in (a, b, c):
        store.keep(t)
    store.touch(a)  # read: the newest now
    store.keep(d)
    assert (a.kept, b.kept, c.kept, d.kept) == (True, False, True, True)
    assert store.bytes == 30
    assert store.dropped == 1


def test_a_pinned_group_is_never_dropped_and_the_rest_make_room() -> None:
    store = Resident(budget=30)
    task, message, other = text("t", task="t"), text("m", task="t"), text("o")
    store.pin(("ns", "t"))
    for t in (task, message, other):
        store.keep(t)
    store.keep(text("new"))
    assert task.kept
    assert message.kept
    assert not other.kept


def test_while_everything_is_pinned_the_budget_is_passed_and_kept_again_once_unpinned() -> None:
    store = Resident(budget=15)
    a, b = text("a", task="t"), text("b", task="t")
    store.pin(("ns", "t"))
    store.keep(a)
    store.keep(b)
    assert a.kept
    assert b.kept
    assert store.bytes == 20
    store.unpin(("ns", "t"))
    assert store.bytes <= 15
    assert not a.kept
    assert b.kept


def test_pins_count_so_one_worker_ending_leaves_anothers_pin() -> None:
    store = Resident(budget=5)
    a = text("a", task="t")
    store.pin(("ns", "t"))
    store.pin(("ns", "t"))
    store.keep(a)
    store.unpin(("ns", "t"))
    assert a.kept
    store.unpin(("ns", "t"))
    assert not a.kept


def test_a_replaced_or_deleted_object_gives_its_bytes_back() -> None:
    store = Resident(budget=100)
    a = text("a", size=40)
    store.keep(a)
    store.keep(a)  # kept again: counted once
    assert store.bytes == 40
    store.forget(a)
    store.forget(a)
    assert store.bytes == 0
    assert len(store) == 0
