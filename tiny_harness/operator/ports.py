"""The narrow interfaces between the operator's parts, so that each part depends on what it
uses and never on the part that uses it.

Without them the runtime, the worker, the turn host and the remote follower imported each
other (a cycle hidden behind ``TYPE_CHECKING``): the host took the whole worker and reached
through it to the runtime's cache, metrics and records. Now:

- a worker runs inside an :class:`OperatorRuntime` (the process: its cache, settings, metrics,
  the lease observer, the wake-up clock, Events), which the runtime satisfies;
- a turn's host, and each step outside a turn, writes through a :class:`TaskIO` (the task's
  name and namespace, its objects, its one status writer), which the worker satisfies; the
  steps outside a turn also through the worker's small writers (:class:`Acting`: notices,
  fences, budgets), each a part of its own;
- the remote follower checkpoints through a :class:`JournalHost` (drain, checkpoint, flush,
  end the turn, defer a cut over one step), which the host satisfies.

An import-linter contract (``acyclic_siblings`` in pyproject.toml) keeps the package free of
import cycles, so a new reach across these lines fails CI instead of growing a cycle again.
"""

from __future__ import annotations

import asyncio
from collections.abc import Mapping, Sequence
from contextlib import AbstractContextManager
from typing import Any, Protocol

from kubernetes_asyncio import client

from tiny_harness.core.agent import AgentChoice
from tiny_harness.core.approval import ApprovalPolicy
from tiny_harness.core.catalog import ModelCatalog
from tiny_harness.core.commands.setup import BuiltCommands
from tiny_harness.core.decide import Facts
from tiny_harness.core.history import RecordEntry
from tiny_harness.core.loop import CoreLoop
from tiny_harness.core.settings import OperatorSettings
from tiny_harness.core.task import TaskSpec
from tiny_harness.core.tools import TurnTools
from tiny_harness.core.turn import (
    InboundMessage,
    JournalEntry,
    RemoteRef,
    TaskSettings,
    TurnHost,
    TurnInput,
    TurnOutcome,
)
from tiny_harness.kube.client import HarnessTasks, Obj
from tiny_harness.kube.journal import TurnRecord, TurnRecords
from tiny_harness.kube.messages import HarnessMessages, StoredMessage
from tiny_harness.operator.budgets import TaskBudgets
from tiny_harness.operator.cache import Cache
from tiny_harness.operator.lease import Holding, LeaseObserver
from tiny_harness.operator.metrics import OperatorMetrics
from tiny_harness.operator.slots import Ticket
from tiny_harness.operator.snapshot import Snapshot
from tiny_harness.operator.tool_offers import Offer


class JournalHost(Protocol):
    """What the remote follower needs of the turn it runs in: the messages to relay, and the
    journal to checkpoint each step in before the next side effect."""

    async def drain(self) -> Sequence[InboundMessage]: ...

    async def checkpoint(self, entry: JournalEntry) -> None: ...

    async def flush(self) -> None: ...

    async def end_turn(self, outcome: TurnOutcome) -> None: ...

    def cut_deferred(self) -> AbstractContextManager[None]:
        """A step that a cut of the turn waits for, at most its bound: the send of a brief
        until the remote task's id is recorded (operator/cut.py)."""
        ...


class OperatorHost(TurnHost, JournalHost, Protocol):
    """A turn's host as the operator gives it to every loop: the core loop's host and the
    remote follower's journal in one."""


class TurnLoop(Protocol):
    """Whatever runs one turn through its host: the core loop, the remote follower, the loop
    that takes a person's answer."""

    async def run_turn(
        self, host: OperatorHost, turn: TurnInput, tools: TurnTools | None = None
    ) -> TurnOutcome: ...


class ToolOffers(Protocol):
    """The tool servers a task's turn is offered (operator/tool_discovery.py)."""

    async def offer(self, namespace: str, spec: TaskSpec) -> Offer: ...


class AgentOffers(Protocol):
    def offered(self, namespace: str) -> tuple[AgentChoice, ...]: ...

    def approvals(self, namespace: str) -> tuple[tuple[str, ApprovalPolicy | None], ...]: ...


class RemoteAgents(Protocol):
    """The remote agents sub-tasks run on (operator/remote.py)."""

    @property
    def directory(self) -> AgentOffers: ...

    def loop(self, namespace: str) -> TurnLoop: ...

    async def cancel(self, namespace: str, name: str, ref: RemoteRef | None) -> str | None: ...

    async def complete(self, namespace: str, name: str, ref: RemoteRef | None) -> str | None: ...


class OperatorRuntime(Protocol):
    """What a task's worker needs of the operator process it runs in."""

    api: client.ApiClient
    loop: CoreLoop
    catalog: ModelCatalog
    settings: OperatorSettings
    metrics: OperatorMetrics
    cache: Cache
    identity: str
    leases: LeaseObserver
    commands: BuiltCommands

    @property
    def remotes(self) -> RemoteAgents | None: ...

    @property
    def tool_servers(self) -> ToolOffers: ...

    def owns(self, namespace: str, name: str) -> bool: ...

    def wake_later(self, namespace: str, name: str, delay: float) -> None: ...

    def written(self, namespace: str, name: str, resource_version: str) -> None: ...

    def written_record(self, namespace: str, record: TurnRecord) -> None: ...

    async def event(
        self, obj: dict[str, Any], reason: str, message: str, *, warning: bool = False
    ) -> None: ...


class StatusWrites(Protocol):
    """The one writer of a task's status (operator/status_writer.py), and the runner lease a
    turn's writes are made under."""

    holding: Holding | None

    async def write(
        self, patch: Mapping[str, Any], *, leased: bool = False, renewal: bool = False
    ) -> Obj | None: ...


class TaskIO(Protocol):
    """One task's objects and its one status writer: what every part that acts on the task
    (a turn's host, the steps outside a turn) reads and writes through."""

    @property
    def name(self) -> str: ...

    @property
    def namespace(self) -> str: ...

    @property
    def key(self) -> tuple[str, str]: ...

    @property
    def rt(self) -> OperatorRuntime: ...

    @property
    def tasks(self) -> HarnessTasks: ...

    @property
    def messages(self) -> HarnessMessages: ...

    @property
    def records(self) -> TurnRecords: ...

    @property
    def status(self) -> StatusWrites: ...


class NoticeWrites(Protocol):
    """Notices and acknowledgements outside a turn (operator/notices.py)."""

    async def append(self, snap: Snapshot, entries: tuple[RecordEntry, ...]) -> None: ...

    async def refuse(self, snap: Snapshot, message: StoredMessage, reason: str) -> None: ...


class TurnFences(Protocol):
    """The runner lease taken with a new epoch, and a turn's record fenced with it
    (operator/fences.py)."""

    async def take_lease(self, snap: Snapshot, extra: Mapping[str, Any]) -> Holding: ...

    async def fence_turn(self, snap: Snapshot, turn: int, epoch: int) -> list[TurnRecord]: ...

    async def close_open_turn(self, snap: Snapshot) -> None: ...


class CommandHost(Protocol):
    """The running turn a command is run beside: its settings (a /model takes effect for the
    turn's next model call) and its journal (the reply is written under the turn's fence)."""

    task_settings: TaskSettings

    async def record_notices(self, entries: Sequence[RecordEntry]) -> None: ...


class CommandSteps(Protocol):
    """A participant's command, run between turns or beside one (operator/command_step.py)."""

    async def run(
        self, snap: Snapshot, message: StoredMessage, host: CommandHost | None = None
    ) -> None: ...


class Acting(TaskIO, Protocol):
    """What a pass's steps outside a turn (operator/first_status.py, endings.py,
    command_step.py, approval_decisions.py) act through: the task's objects, its writers, and
    the one way to fail it."""

    @property
    def notices(self) -> NoticeWrites: ...

    @property
    def fences(self) -> TurnFences: ...

    @property
    def budgets(self) -> TaskBudgets: ...

    async def fail_task(self, reason: str, message: str) -> None: ...


class SupervisedWorker(TaskIO, Protocol):
    """What a turn's supervisor (operator/supervisor.py) and its guards (turn_guards.py) need
    of the worker whose turn they run: the lease, the budgets, the task as the cache has it
    now, and the commands a participant sends while the turn runs."""

    ticket: Ticket | None

    @property
    def changed(self) -> asyncio.Event: ...

    @property
    def fences(self) -> TurnFences: ...

    @property
    def budgets(self) -> TaskBudgets: ...

    @property
    def command_step(self) -> CommandSteps: ...

    def snapshot(self) -> Snapshot | None: ...

    def facts(self, snap: Snapshot) -> Facts: ...
