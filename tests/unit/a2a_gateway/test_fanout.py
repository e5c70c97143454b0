"""The fan-out (``a2a_gateway/fanout.py``): each change rendered once and queued for every
reader of its task, in order; a full queue ends only its own subscription; an end is said once,
after what was queued."""

from __future__ import annotations

import asyncio
from typing import Any

from tiny_harness.a2a_gateway.fanout import Ended, Fanout


def obj(name: str, version: int) -> dict[str, Any]:
    return {"metadata": {"name": name, "resourceVersion": str(version)}}


class Renders:
    def __init__(self) -> None:
        self.calls = 0

    def __call__(self, o: dict[str, Any]) -> int:
        self.calls += 1
        return int(o["metadata"]["resourceVersion"])


async def test_a_change_is_rendered_once_and_queued_in_order_for_every_reader() -> None:
    render = Renders()
    fanout: Fanout[int] = Fanout(render, bound=8)
    readers = [fanout.subscribe("t") for _ in range(100)]
    other = fanout.subscribe("u")
    for version in (5, 6, 7):
        fanout.tell(obj("t", version))
    assert render.calls == 3
    for reader in readers:
        assert [await reader.next() for _ in range(3)] == [5, 6, 7]
    fanout.tell(obj("u", 9))
    assert await other.next() == 9


async def test_a_task_no_one_follows_costs_no_rendering() -> None:
    render = Renders()
    fanout: Fanout[int] = Fanout(render, bound=8)
    fanout.tell(obj("t", 1))
    with fanout.subscribe("t"):
        pass
    fanout.tell(obj("t", 2))
    assert render.calls == 0
    assert not fanout.followed("t")


async def test_a_slow_reader_is_ended_behind_and_the_others_read_on() -> None:
    fanout: Fanout[int] = Fanout(Renders(), bound=2)
    slow, quick = fanout.subscribe("t"), fanout.subscribe("t")
    fanout.tell(obj("t", 1))
    assert await quick.next() == 1
    fanout.tell(obj("t", 2))
    assert await quick.next() == 2
    fanout.tell(obj("t", 3))  # slow has 1 and 2 unread: full
    assert await quick.next() == 3
    # What it had queued is read first, then why it ended; nothing after the end.
    assert [await slow.next(), await slow.next()] == [1, 2]
    assert await slow.next() is Ended.BEHIND
    fanout.tell(obj("t", 4))
    assert await slow.next() is Ended.BEHIND
    assert await quick.next() == 4


async def test_a_waiting_reader_is_woken_by_a_change_and_by_a_deletion() -> None:
    fanout: Fanout[int] = Fanout(Renders(), bound=8)
    reader = fanout.subscribe("t")
    waiting = asyncio.ensure_future(reader.next())
    await asyncio.sleep(0)
    assert not waiting.done()
    fanout.tell(obj("t", 3))
    assert await waiting == 3
    waiting = asyncio.ensure_future(reader.next())
    await asyncio.sleep(0)
    fanout.gone("t")
    assert await waiting is Ended.DELETED


async def test_the_first_reason_is_the_one_said() -> None:
    fanout: Fanout[int] = Fanout(Renders(), bound=1)
    reader = fanout.subscribe("t")
    fanout.tell(obj("t", 1))
    fanout.tell(obj("t", 2))  # behind
    fanout.stop()  # then the gateway stops
    assert await reader.next() == 1
    assert await reader.next() is Ended.BEHIND


async def test_a_reader_past_its_lifetime_ends_so() -> None:
    fanout: Fanout[int] = Fanout(Renders(), bound=8)
    reader = fanout.subscribe("t")
    loop = asyncio.get_running_loop()
    assert await reader.next(loop.time() + 0.01) is Ended.LIFETIME


async def test_stopping_ends_every_reader() -> None:
    fanout: Fanout[int] = Fanout(Renders(), bound=8)
    readers = [fanout.subscribe(name) for name in ("a", "b", "b")]
    fanout.stop()
    assert [await r.next() for r in readers] == [Ended.STOPPING] * 3
    assert len(fanout) == 0
