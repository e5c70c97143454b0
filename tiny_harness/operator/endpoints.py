"""Declared endpoints: the objects a namespace declares to name a server the harness calls
(``HarnessAgent``, ``HarnessToolServer``), followed, resolved once per spec, and told Ready.

Both kinds are the same loop, kept here once; what differs (what resolving one means, and
what its status holds) is each kind's own (operator/agents.py, operator/tool_discovery.py):

- **Followed.** One follower per watched namespace (or one for the cluster) keeps every object
  in memory (:func:`~tiny_harness.kube.watching.follow`: on a watch client of its own, and
  deletions are heard even when the watch had to list again). They are few and rarely change,
  and a task must see its namespace's endpoints whatever shard it is in, so they are not part
  of the sharded kopf instances.
- **Resolved once per spec.** A new spec (a new ``generation``, or what else the kind counts,
  :meth:`Endpoints.mark`) starts an attempt at once, in place of one in flight: the newest
  spec is what is resolved. An event of the same spec (a status write, ours or another
  replica's) starts none. Everything runs on the event loop's one thread.
- **Bounded.** A failed attempt (:class:`NotReadyError`) is tried again after 1, 2, 4 ...
  seconds (:meth:`Endpoints.backoff`), at most :attr:`Endpoints.max_attempts` times; one that
  trying again will not mend (``lasting``) is not tried again at all. The Ready condition's
  message says which attempt it was and what comes next ("trying again in 4s", or how to
  have it tried again). The waits have no jitter: replicas that found the same write the same.
- **Replicas agree without talking.** The status is written only when what was found differs
  from what it says (times aside), on the version read; after a conflict the object is read
  again and written once more if it still differs. The ``Ready`` condition keeps the time it
  last turned while its status stays.
- **Secrets** (:func:`secret_headers`) are read with the operator's identity, used only where
  their annotation lets the object send them (kube/secrets.py), and never logged or written.
"""

from __future__ import annotations

import asyncio
import logging
import time
from collections.abc import Collection, Iterable
from dataclasses import dataclass
from typing import ClassVar, Final, Generic, Literal, TypeVar

import aiohttp
from kubernetes_asyncio import client

from tiny_harness.core.agent import AgentStatus
from tiny_harness.core.backoff import Backoff
from tiny_harness.core.clock import rfc3339
from tiny_harness.core.conditions import Condition, transitioned
from tiny_harness.core.errors import HarnessError
from tiny_harness.core.secret_destinations import BoundHeader
from tiny_harness.core.tool_server import SecretKeyRef, ToolServerStatus
from tiny_harness.kube.client import ConflictError, KubeError, Obj
from tiny_harness.kube.declared import patch_declared_status, read_declared
from tiny_harness.kube.secrets import SecretUnusableError, secret_values
from tiny_harness.kube.watching import Synced, follow

log = logging.getLogger(__name__)

Key = tuple[str, str]

#: The longest message a condition holds (the CRD's bound).
MESSAGE_MAX: Final = 32768


class NotReadyError(HarnessError):
    """Why a declared endpoint cannot be used now: the Ready condition's reason and message.
    ``lasting``: trying again will not help until the spec (or a Secret) changes."""

    def __init__(self, reason: str, message: str, *, lasting: bool = False) -> None:
        super().__init__(message)
        self.reason = reason
        self.message = message
        self.lasting = lasting


@dataclass(eq=False)
class Declared:
    """One declared object as this replica knows it, and its attempts to resolve it."""

    namespace: str
    name: str
    #: The object as last seen (a watch event, or the response to our own status write).
    obj: Obj
    #: Failed attempts in a row for the current spec.
    failures: int = 0
    #: The spec (:meth:`Endpoints.mark`) the last attempt was started for.
    attempted: object = None
    running: asyncio.Task[None] | None = None
    retry: asyncio.TimerHandle | None = None
    #: When the last attempt started (monotonic).
    tried: float = float("-inf")

    @property
    def key(self) -> Key:
        return self.namespace, self.name

    @property
    def generation(self) -> int:
        return int(self.obj["metadata"].get("generation") or 0)

    @property
    def resolving(self) -> bool:
        """Is an attempt in flight?"""
        return self.running is not None and not self.running.done()


#: The kinds' status models: each has ``conditions`` and ``observed_generation``.
S = TypeVar("S", AgentStatus, ToolServerStatus)
E = TypeVar("E", bound=Declared)


def key_of(obj: Obj) -> Key:
    meta = obj["metadata"]
    return str(meta.get("namespace") or ""), str(meta["name"])


def ready_condition(
    status: Literal["True", "False"], reason: str, message: str, generation: int
) -> Condition:
    """The ``Ready`` condition, as of now (its time is kept by :func:`kept_transition` when
    the status it replaces has the same)."""
    return Condition(
        type="Ready",
        status=status,
        reason=reason,
        message=message[:MESSAGE_MAX],
        last_transition_time=rfc3339(digits=0),
        observed_generation=generation,
    )


def unchanged(current: S, wanted: S, times: Collection[str]) -> bool:
    """Does ``current`` already say what ``wanted`` says, but for when its conditions turned
    and the kind's own ``times`` (when a card was read, tools listed)?"""

    def plain(status: S) -> object:
        out = status.model_dump(exclude={"conditions", *times})
        out["conditions"] = [
            c.model_dump(exclude={"last_transition_time"}) for c in status.conditions
        ]
        return out

    return plain(current) == plain(wanted)


def kept_transition(current: S, wanted: S) -> S:
    """``wanted`` with each condition's ``lastTransitionTime`` as ``current`` has it when
    its status is the same: a condition's time says when it last turned."""
    before = {c.type: c for c in current.conditions}
    conditions = tuple(transitioned(before.get(c.type), c) for c in wanted.conditions)
    return wanted.model_copy(update={"conditions": conditions})


async def secret_headers(
    api: client.ApiClient,
    namespace: str,
    refs: Iterable[tuple[str, SecretKeyRef]],
    *,
    user: str,
    name: str,
    annotation: str,
    destination: str,
    where: str,
    refusals_last: bool,
) -> tuple[BoundHeader, ...]:
    """The headers' values from their Secrets (:func:`~tiny_harness.kube.secrets.secret_values`), or
    :class:`NotReadyError` with the Secret's reason. A Secret still to be created may come, so a
    missing one is tried again; a refusal (``refusals_last``) will not change by itself."""
    try:
        return await secret_values(
            api,
            namespace,
            refs,
            user=user,
            name=name,
            annotation=annotation,
            destination=destination,
            where=where,
        )
    except SecretUnusableError as exc:
        lasting = refusals_last and exc.reason != "SecretNotFound"
        raise NotReadyError(exc.reason, str(exc), lasting=lasting) from None
    except KubeError as exc:
        raise NotReadyError("SecretUnreadable", str(exc)) from None


class Endpoints(Generic[E, S]):
    """The declared endpoints of one kind in the watched namespaces (none: the whole
    cluster), kept current by :meth:`run`. A kind says how to make an entry
    (:meth:`declared`), how to resolve one (:meth:`resolve`) and what to record when that
    fails (:meth:`not_ready`)."""

    #: The kind's plural: what is followed and written.
    plural: ClassVar[str]
    #: Attempts for one spec before the background retries stop.
    max_attempts: ClassVar[int]
    #: What the status says after the last attempt: how to have it tried again.
    gave_up: ClassVar[str]
    #: The status fields that are times, which alone never make a status write.
    times: ClassVar[frozenset[str]]

    def __init__(self, api: client.ApiClient, namespaces: Collection[str]) -> None:
        self.api = api
        self.namespaces: tuple[str | None, ...] = tuple(namespaces) or (None,)
        self.entries: dict[Key, E] = {}
        #: Set once a namespace's first listing has been heard.
        self._listed: dict[str | None, asyncio.Event] = {
            ns: asyncio.Event() for ns in self.namespaces
        }

    # -- what a kind says -------------------------------------------------------------------

    def declared(self, namespace: str, name: str, obj: Obj) -> E:
        """A new entry for an object first seen."""
        raise NotImplementedError

    def parse_status(self, obj: Obj) -> S:
        """The object's status as the kind's model (an unreadable one as an empty one)."""
        raise NotImplementedError

    async def resolve(self, entry: E) -> None:
        """One attempt: find what the spec names, record it; :class:`NotReadyError` why not."""
        raise NotImplementedError

    async def not_ready(self, entry: E, error: NotReadyError, message: str) -> None:
        """Record a failed attempt (``message``: the error's, with the attempt's count)."""
        raise NotImplementedError

    def mark(self, entry: E) -> object:
        """What a resolution is for: a different mark is a new spec to resolve."""
        return entry.generation

    async def respecified(self, entry: E) -> None:
        """A new spec arrived: forget what the old one resolved to."""

    async def dropped(self, entry: E) -> None:
        """The object is gone (or the directory stops): release what it holds."""

    def backoff(self) -> Backoff:
        """The waits between attempts (no jitter: see the module)."""
        return Backoff(first=1.0, cap=30.0, jitter=0.0)

    # -- following --------------------------------------------------------------------------

    async def run(self) -> None:
        """Follow every watched namespace until cancelled."""
        try:
            await asyncio.gather(*(self._follow(ns) for ns in self.namespaces))
        finally:
            for entry in list(self.entries.values()):
                self._stop(entry)
                await self.dropped(entry)
            self.entries.clear()

    async def _follow(self, namespace: str | None) -> None:
        async for change in follow(self.api, namespace, self.plural):
            try:
                if isinstance(change, Synced):
                    self._listed[namespace].set()
                elif change.type == "DELETED":
                    await self.gone(key_of(change.object))
                else:
                    await self.seen(change.object)
            except Exception:  # a bug in one object's handling stops no other's
                log.exception("%s in %s: an event could not be taken", self.plural, namespace)

    async def seen(self, obj: Obj) -> None:
        """The object as a watch event or a listing shows it."""
        key = key_of(obj)
        entry = self.entries.get(key)
        if entry is None:
            entry = self.entries[key] = self.declared(*key, obj)
        else:
            entry.obj = obj
        if self.mark(entry) != entry.attempted:
            self._stop(entry)  # first: the old spec's attempt records nothing more
            await self.respecified(entry)
            self.resolve_now(entry)

    async def gone(self, key: Key) -> None:
        entry = self.entries.pop(key, None)
        if entry is not None:
            self._stop(entry)
            await self.dropped(entry)

    def _stop(self, entry: E) -> None:
        if entry.retry is not None:
            entry.retry.cancel()
            entry.retry = None
        if entry.running is not None and not entry.running.done():
            entry.running.cancel()

    # -- attempts ---------------------------------------------------------------------------

    def resolve_now(self, entry: E) -> None:
        """Start an attempt at once, in place of one in flight or waiting."""
        mark = self.mark(entry)
        if mark != entry.attempted:
            entry.failures = 0  # a new spec starts its attempts afresh
            entry.attempted = mark
        self._stop(entry)
        entry.tried = time.monotonic()
        entry.running = asyncio.create_task(
            self._attempt(entry), name=f"resolve {self.plural} {entry.namespace}/{entry.name}"
        )

    async def _attempt(self, entry: E) -> None:
        try:
            await self.resolve(entry)
        except NotReadyError as exc:
            entry.failures += 1
            wait = self._next_wait(entry, lasting=exc.lasting)
            then = self.gave_up if wait is None else f"trying again in {wait:.0f}s"
            message = f"{exc.message} ({self._count(entry)}; {then})"
            try:
                await self.not_ready(entry, exc, message)
            except Exception:
                log.exception("%s %s/%s: not recorded: %s", self.plural, *entry.key, message)
        except Exception:
            log.exception("%s %s/%s: resolving failed", self.plural, *entry.key)
            entry.failures += 1
            wait = self._next_wait(entry, lasting=False)
        else:
            entry.failures = 0
            return
        # Not when cancelled: then a newer attempt has taken this one's place.
        if wait is not None and self.entries.get(entry.key) is entry:
            entry.retry = asyncio.get_running_loop().call_later(wait, self.resolve_now, entry)

    def _next_wait(self, entry: E, *, lasting: bool) -> float | None:
        if lasting or entry.failures >= self.max_attempts:
            return None
        return self.backoff().delay(entry.failures)

    def _count(self, entry: E) -> str:
        if entry.failures > self.max_attempts:  # one asked for after the retries stopped
            return f"attempt {entry.failures}"
        return f"attempt {entry.failures} of {self.max_attempts}"

    # -- the status -------------------------------------------------------------------------

    async def write_status(self, entry: E, wanted: S) -> None:
        """Record ``wanted`` as the object's status, unless it already says the same (times
        aside); on the version last seen, and once more on a fresh read after a conflict.
        A failure is logged: the next event or attempt writes it."""
        for _ in range(2):
            current = self.parse_status(entry.obj)
            if unchanged(current, wanted, self.times):
                return
            body = kept_transition(current, wanted).model_dump(mode="json", by_alias=True)
            try:
                entry.obj = await patch_declared_status(
                    self.api,
                    entry.namespace,
                    self.plural,
                    entry.name,
                    body,
                    resource_version=str(entry.obj["metadata"].get("resourceVersion") or ""),
                )
                return
            except ConflictError:
                try:
                    entry.obj = await read_declared(
                        self.api, entry.namespace, self.plural, entry.name
                    )
                except (KubeError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                    log.info("%s %s/%s: not read again: %s", self.plural, *entry.key, exc)
                    return
            except (KubeError, aiohttp.ClientError, OSError, TimeoutError) as exc:
                log.warning(
                    "%s %s/%s: the status could not be written: %s", self.plural, *entry.key, exc
                )
                return
