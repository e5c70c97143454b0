"""Hooks: ordered chains of executors around the operations an operator may want to change.

A command's body, a policy that refuses some commands, a rule that lets a task complete with an
open sub-task: each is an *executor* on a *hook point*, registered from code or from a plugin,
so none of them needs a change to the operator. A point is an operation and a phase::

    command.invoked.pre    may refuse the command (raise HookAbort)
    command.invoked.in     the body: sets the command's result
    command.invoked.post   sees (and may amend) the result
    task.complete.pre      may refuse an override (raise HookAbort)
    task.complete.in       may set override=True: complete although a sub-task is open
    task.complete.post     sees the outcome

Each chain runs its executors in priority order (lower first; ties in registration order). An
executor takes the context and returns it changed, or ``None`` for "unchanged"; contexts are
frozen pydantic models, so the only way to change one is to return a new one. Executors may be
sync or async, except on ``task.complete``, which runs inside the pure, synchronous
:func:`~tiny_harness.core.completion.decide_completion` and so takes synchronous executors only.

The runner is filled at start-up and frozen before the operator runs, so what runs is fixed for
the life of the process.
"""

from __future__ import annotations

import inspect
import logging
from collections.abc import Awaitable, Callable
from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Final, NamedTuple, TypeVar

from pydantic import BaseModel, ConfigDict

from tiny_harness.core.commands.command_errors import HookAbort, HookError
from tiny_harness.core.completion import CompletionDecision, CompletionOverride
from tiny_harness.core.task import TaskExtension

log = logging.getLogger(__name__)

#: The priority of an executor registered without one.
DEFAULT_PRIORITY: Final = 500


class Operation(StrEnum):
    """The operations that have hook points."""

    COMMAND_INVOKED = "command.invoked"
    TASK_COMPLETE = "task.complete"

    @property
    def synchronous(self) -> bool:
        """Whether the operation runs inside synchronous code, so its executors must be sync."""
        return self is Operation.TASK_COMPLETE


class Phase(StrEnum):
    PRE = "pre"
    IN = "in"
    POST = "post"


class HookPoint(NamedTuple):
    """Where an executor runs: an operation and a phase, written ``<operation>.<phase>``."""

    operation: Operation
    phase: Phase

    def __str__(self) -> str:
        return f"{self.operation.value}.{self.phase.value}"

    @classmethod
    def parse(cls, text: str) -> HookPoint:
        """The point named ``text`` (``"command.invoked.pre"``); :class:`HookError` if none."""
        operation, _, phase = text.rpartition(".")
        try:
            return cls(Operation(operation), Phase(phase))
        except ValueError:
            known = ", ".join(HOOK_POINT_NAMES)
            raise HookError(f"unknown hook point {text!r}; use one of {known}") from None


#: Every hook point, as plugin files spell them.
HOOK_POINTS: Final = tuple(HookPoint(o, p) for o in Operation for p in Phase)
HOOK_POINT_NAMES: Final = tuple(str(p) for p in HOOK_POINTS)


class HookContext(BaseModel):
    """Base of every context a chain passes along: frozen, so executors return a new one."""

    model_config = ConfigDict(frozen=True, extra="forbid")


C = TypeVar("C", bound=HookContext)

#: An executor: takes its point's context and returns it (changed or not), or ``None``.
#: Plugin executors arrive untyped, so the runner checks what each one returns.
HookExecutor = Callable[[C], C | Awaitable[C | None] | None]


@dataclass(frozen=True)
class RegisteredHook:
    """One executor on one point, as the runner holds it."""

    name: str
    point: HookPoint
    priority: int
    order: int
    executor: Callable[[Any], object]


def is_async(executor: object) -> bool:
    """Whether calling ``executor`` returns an awaitable it declares (a coroutine function or an
    object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(executor) or inspect.iscoroutinefunction(
        getattr(executor, "__call__", None)  # noqa: B004 - the method itself, not callable()
    )


def promote(ctx: HookContext, to: type[C], **fields: Any) -> C:
    """``ctx`` as the next phase's context type ``to``, with ``fields`` added."""
    return to(**dict(ctx), **fields)


class HookRunner:
    """The executors of every hook point, and the chains that run them."""

    def __init__(self) -> None:
        self._chains: dict[HookPoint, list[RegisteredHook]] = {p: [] for p in HOOK_POINTS}
        self._order = 0
        self._frozen = False

    @property
    def frozen(self) -> bool:
        return self._frozen

    def freeze(self) -> None:
        """Refuse any further registration; call once everything is registered."""
        self._frozen = True

    def register(
        self,
        point: HookPoint | str,
        executor: HookExecutor[Any],
        *,
        priority: int = DEFAULT_PRIORITY,
        name: str | None = None,
    ) -> RegisteredHook:
        """Add ``executor`` to ``point``'s chain at ``priority`` (lower runs first).

        Raises :class:`HookError` when the runner is frozen, the point is unknown, or an async
        executor is registered on a synchronous operation.
        """
        if self._frozen:
            raise HookError("the hook runner is frozen: register hooks before the operator starts")
        where = point if isinstance(point, HookPoint) else HookPoint.parse(point)
        label = name or getattr(executor, "__qualname__", None) or repr(executor)
        if not callable(executor):
            raise HookError(f"hook {label!r} on {where}: the executor is not callable")
        if where.operation.synchronous and is_async(executor):
            raise HookError(
                f"hook {label!r} on {where}: {where.operation} executors must be synchronous "
                "(they run inside the completion decision); make it a plain function"
            )
        hook = RegisteredHook(label, where, priority, self._order, executor)
        self._order += 1
        self._chains[where].append(hook)
        self._chains[where].sort(key=lambda h: (h.priority, h.order))
        return hook

    def chain(self, point: HookPoint | str) -> tuple[RegisteredHook, ...]:
        """The executors of ``point`` in the order they run."""
        where = point if isinstance(point, HookPoint) else HookPoint.parse(point)
        return tuple(self._chains[where])

    async def run_chain(self, point: HookPoint, ctx: C) -> C:
        """Run ``point``'s chain over ``ctx`` and return the last context.

        A :class:`HookAbort` from a pre executor propagates; from any other phase it is a
        :class:`HookError`, as is an executor returning something other than its context. Any
        other exception an executor raises propagates unchanged.
        """
        for hook in self._chains[point]:
            returned = self._call(hook, ctx)
            if inspect.isawaitable(returned):
                returned = await self._await(hook, returned)
            ctx = _checked(hook, ctx, returned)
        return ctx

    def run_chain_sync(self, point: HookPoint, ctx: C) -> C:
        """:meth:`run_chain` for synchronous operations; an awaitable result is a HookError."""
        for hook in self._chains[point]:
            returned = self._call(hook, ctx)
            if inspect.isawaitable(returned):
                if inspect.iscoroutine(returned):
                    returned.close()
                raise HookError(
                    f"hook {hook.name!r} on {point} returned an awaitable; "
                    f"{point.operation} executors must be synchronous"
                )
            ctx = _checked(hook, ctx, returned)
        return ctx

    @staticmethod
    def _call(hook: RegisteredHook, ctx: HookContext) -> object:
        try:
            return hook.executor(ctx)
        except HookAbort as abort:
            raise _misplaced_abort(hook, abort) from abort

    @staticmethod
    async def _await(hook: RegisteredHook, awaitable: Awaitable[object]) -> object:
        try:
            return await awaitable
        except HookAbort as abort:
            raise _misplaced_abort(hook, abort) from abort


def _misplaced_abort(hook: RegisteredHook, abort: HookAbort) -> HookAbort | HookError:
    if hook.point.phase is Phase.PRE:
        return abort
    return HookError(
        f"hook {hook.name!r} raised HookAbort on {hook.point}; only a pre executor may refuse"
    )


def _checked(hook: RegisteredHook, ctx: C, returned: object) -> C:
    if returned is None:
        return ctx
    if isinstance(returned, type(ctx)):
        return returned
    raise HookError(
        f"hook {hook.name!r} on {hook.point} returned {type(returned).__name__}; "
        f"return the {type(ctx).__name__} it was given (changed or not), or None"
    )


# -- task.complete --------------------------------------------------------------------------------


class TaskCompletePre(HookContext):
    """A completion the rule refused (an open sub-task, or an unread result at a turn's end)."""

    task: TaskExtension
    decision: CompletionDecision
    requested_by: str | None = None


class TaskCompleteIn(TaskCompletePre):
    """Set ``override=True`` to let the task complete anyway."""

    override: bool = False


class TaskCompletePost(TaskCompleteIn):
    """The outcome; ``override`` as it stands after this chain is what the task gets."""


TASK_COMPLETE_PRE: Final = HookPoint(Operation.TASK_COMPLETE, Phase.PRE)
TASK_COMPLETE_IN: Final = HookPoint(Operation.TASK_COMPLETE, Phase.IN)
TASK_COMPLETE_POST: Final = HookPoint(Operation.TASK_COMPLETE, Phase.POST)


def completion_override(runner: HookRunner, requested_by: str | None = None) -> CompletionOverride:
    """The ``task.complete`` chains as a :data:`~tiny_harness.core.completion.CompletionOverride`.

    Pass ``requested_by`` (the participant asking) for a complete request, and nothing for a
    delegated turn's end::

        decide_completion(ext, requested_by=sender, override=completion_override(runner, sender))

    Fails closed: a pre executor's abort, or any executor error (logged), means no override.
    """

    def override(task: TaskExtension, decision: CompletionDecision) -> bool:
        if not any(runner.chain(p) for p in (TASK_COMPLETE_IN, TASK_COMPLETE_POST)):
            return False
        try:
            pre = runner.run_chain_sync(
                TASK_COMPLETE_PRE,
                TaskCompletePre(task=task, decision=decision, requested_by=requested_by),
            )
            within = runner.run_chain_sync(TASK_COMPLETE_IN, promote(pre, TaskCompleteIn))
            post = runner.run_chain_sync(TASK_COMPLETE_POST, promote(within, TaskCompletePost))
        except HookAbort as abort:
            log.info("task.complete override refused by a pre hook: %s", abort.reason)
            return False
        except Exception:
            log.exception("a task.complete hook failed; the completion rule stands")
            return False
        return post.override

    return override
