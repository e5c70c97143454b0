"""This replica's own latest writes, read over the lagging feed until it delivers them.

The watch lags the writes this replica makes by a few milliseconds. So every write's response
goes into the overlay, and until the feed has delivered exactly that version, a read takes the
overlay's copy (:class:`~tiny_harness.operator.cache.Cache`). Versions are compared for
equality only: the API conventions make a ``resourceVersion`` opaque, never to be ordered.
None needs ordering here, because kopf's watch delivers an object's events in the order etcd
committed them: any version the feed delivers before our write's own is older than our write,
and the moment it delivers ours the feed has caught up, and the overlay entry is dropped. So
the overlay holds only the last moments' writes.

Two cases need a memory of what the feed delivered:

- **The watch was faster than the write's response** (the feed delivered our version before
  the write was told here, and maybe later ones after it): the last few versions the feed
  delivered of each object are kept (:data:`DELIVERED_KEPT`), and a write whose version is
  among them does not enter the overlay.
- **The watch passed over our version** (kopf listed afresh after 410 Gone, and the listing
  had a later one): an entry the feed has not matched for :data:`OVERLAY_SECONDS`, while it
  delivered other versions since, is dropped. A watch that is merely away delivers nothing,
  and keeps the entry. Every write is made on the version read, so a read that is older than
  it should be costs a conflict and a fresh read, never a lost update.
"""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Final, Generic, TypeVar

from tiny_harness.kube.client import Obj
from tiny_harness.kube.journal import TurnRecord
from tiny_harness.operator.feed import TASK, TURNS, Key

#: Versions of one object the feed delivered that are remembered (events can come after the
#: next write already happened), and for how many objects at most (the ones written lately).
DELIVERED_KEPT: Final = 8
DELIVERED_OBJECTS: Final = 4096
#: How long an own write waits in the overlay for its own event while others come (see above).
OVERLAY_SECONDS: Final = 30.0

V = TypeVar("V")


@dataclass(slots=True)
class Own(Generic[V]):
    """A write of this replica whose version the feed has not delivered yet."""

    value: V
    resource_version: str
    #: When it was written (the overlay's clock).
    at: float
    #: The feed has delivered another version of the object since.
    passed: bool = False


class Overlay:
    """This replica's writes the feed has not caught up with (see the module docstring)."""

    def __init__(self, clock: Callable[[], float]) -> None:
        self.tasks: dict[Key, Own[Obj]] = {}
        #: Per task, its records written here, by name.
        self.records: dict[Key, dict[str, Own[TurnRecord]]] = {}
        #: The versions the feed delivered lately: ``(TASK or TURNS, namespace, name)``.
        self.delivered: OrderedDict[tuple[str, str, str], tuple[str, ...]] = OrderedDict()
        self.clock = clock

    # -- reads ----------------------------------------------------------------------------------

    def task(self, key: Key, indexed: str | None, *, keep: bool = False) -> Obj | None:
        """This replica's copy of the task while the feed (holding version ``indexed``) has not
        caught up with it; else None, and the copy is dropped unless ``keep``."""
        own = self.tasks.get(key)
        if own is not None and not self.caught_up(own, indexed):
            return own.value
        if not keep:
            self.tasks.pop(key, None)
        return None

    def task_records(self, key: Key, stored: Mapping[str, Any]) -> dict[str, TurnRecord]:
        """This replica's record writes the feed (holding ``stored``, by name) has not caught up
        with (the rest dropped)."""
        own = self.records.get(key, {})
        out: dict[str, TurnRecord] = {}
        for name, record in list(own.items()):
            indexed = stored.get(name)
            if self.caught_up(record, indexed.resource_version if indexed else None):
                del own[name]
            else:
                out[name] = record.value
        if not own:
            self.records.pop(key, None)
        return out

    def caught_up(self, own: Own[Any], indexed: str | None) -> bool:
        """Does the feed hold this write (``indexed``, the version it holds, is its very
        version), or has it passed over it (see the module)?"""
        if indexed == own.resource_version:
            return True
        return own.passed and self.clock() - own.at >= OVERLAY_SECONDS

    # -- writes ---------------------------------------------------------------------------------

    def wrote_task(self, key: Key, obj: Obj, rv: str, indexed: str | None) -> None:
        """This replica wrote version ``rv`` of the task; the feed holds ``indexed``."""
        if rv in self.delivered.get((TASK, *key), ()) or indexed == rv:
            return  # the watch was faster than the write's response: the feed has it
        self.tasks[key] = Own(obj, rv, self.clock())

    def wrote_record(self, namespace: str, record: TurnRecord, indexed: str | None) -> None:
        """As :meth:`wrote_task`, for a turn record."""
        rv = record.resource_version
        delivered = self.delivered.get((TURNS, namespace, record.name), ())
        if rv in delivered or indexed == rv:
            return  # the watch was faster than the write's response
        own = self.records.setdefault((namespace, record.task), {})
        own[record.name] = Own(record, rv, self.clock())

    def forget(self, namespace: str, name: str) -> None:
        self.tasks.pop((namespace, name), None)
        self.records.pop((namespace, name), None)
        self.delivered.pop((TASK, namespace, name), None)

    # -- what the feed delivered ----------------------------------------------------------------

    def delivered_task(self, namespace: str, name: str, rv: str) -> None:
        """The feed delivered version ``rv`` of the task: our write of exactly that version is
        dropped, so a parked task keeps no second copy of itself in memory. Any other version
        came before our write's own event (kopf delivers in etcd order) and changes nothing,
        unless it is passed over for good (see the module)."""
        self._deliver(TASK, namespace, name, rv)
        own = self.tasks.get((namespace, name))
        if own is not None and self._matched(own, rv):
            del self.tasks[(namespace, name)]

    def delivered_record(self, namespace: str, record: TurnRecord) -> None:
        """As :meth:`delivered_task`, for a turn record."""
        self._deliver(TURNS, namespace, record.name, record.resource_version)
        own = self.records.get((namespace, record.task))
        if own is None:
            return
        mine = own.get(record.name)
        if mine is not None and self._matched(mine, record.resource_version):
            del own[record.name]
        if not own:
            del self.records[(namespace, record.task)]

    def _matched(self, own: Own[Any], rv: str) -> bool:
        """Is ``rv``, just delivered, this write's own version? Another one marks the write as
        passed, and ends it once it has waited :data:`OVERLAY_SECONDS` (see the module)."""
        if rv == own.resource_version:
            return True
        own.passed = True
        return self.clock() - own.at >= OVERLAY_SECONDS

    def _deliver(self, kind: str, namespace: str, name: str, rv: str) -> None:
        key = (kind, namespace, name)
        before = self.delivered.pop(key, ())
        self.delivered[key] = (*(v for v in before if v != rv), rv)[-DELIVERED_KEPT:]
        if len(self.delivered) > DELIVERED_OBJECTS:
            self.delivered.popitem(last=False)
