"""The runtime's side of sharding: which tasks are this replica's to work (by the shard label
its cache last saw), and what a shard no longer watched leaves behind (nothing)."""

from __future__ import annotations

from typing import Any

from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.feed import Feed
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.runtime import Runtime

NS = "team-a"


class Holds:
    """The one call the runtime makes on the shard manager to decide, plus what it drops."""

    shards = 8

    def __init__(self, *held: int) -> None:
        self.held = set(held)
        self.missed: list[tuple[int, tuple[str, str]]] = []

    def holds(self, shard: int) -> bool:
        return shard in self.held

    def dropped(self, shard: int, task: tuple[str, str]) -> None:
        self.missed.append((shard, task))


def runtime_with(feeds: dict[int, dict[str, str]], holds: Holds) -> tuple[Runtime, OperatorMetrics]:
    cache = Cache()
    for shard, tasks in feeds.items():
        feed = Feed()
        feed.shards.update({(NS, name): label for name, label in tasks.items()})
        cache.adopt(shard, feed)
    metrics = OperatorMetrics()
    catalog = ModelCatalog(default="m", selectable=("m",))
    rt = Runtime(None, None, catalog, OperatorSettings(), metrics, cache)  # type: ignore[arg-type]
    rt.shards = holds  # type: ignore[assignment]
    return rt, metrics


def gauge(metrics: OperatorMetrics, state: str) -> float:
    value: Any = metrics.registry.get_sample_value("tiny_harness_tasks", {"state": state})
    return float(value or 0)


def test_a_task_is_worked_only_while_its_labelled_shard_is_held() -> None:
    holds = Holds(3)
    rt, _ = runtime_with({3: {"mine": "3"}, 5: {"theirs": "5"}}, holds)
    assert rt.owns(NS, "mine")
    assert not rt.owns(NS, "theirs")
    assert holds.missed == [(5, (NS, "theirs"))]  # the dropped look is reported
    assert rt.owns(NS, "unknown")  # not seen yet: a look finds nothing to do


def test_a_shard_no_longer_watched_leaves_the_cache_and_the_tasks_gauge() -> None:
    rt, metrics = runtime_with({3: {"a": "3", "b": "3"}, 4: {"c": "4"}}, Holds(3, 4))
    for name in ("a", "b", "c"):
        metrics.task_state(NS, name, "TASK_STATE_INPUT_REQUIRED")
    assert gauge(metrics, "TASK_STATE_INPUT_REQUIRED") == 3
    rt.unwatched(3)
    assert gauge(metrics, "TASK_STATE_INPUT_REQUIRED") == 1
    assert rt.cache.feeds.in_shard("3") == []
    assert rt.cache.feeds.in_shard("4") == [(NS, "c")]
