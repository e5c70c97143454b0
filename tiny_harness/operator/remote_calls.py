"""How a call to a remote agent fails, and how often it is tried again.

A call that fails for a reason that may pass (unreachable, HTTP 429 or 5xx, a stream that
breaks) is tried again after about 0.5, 1, 2 ... seconds (jittered, at most 10 s; an agent's
``Retry-After`` is believed within that), ``spec.maxRetries`` times. Every failure ends the
sub-task in FAILED with a reason and a message naming what to look at
(:class:`RemoteCallError`): ``RemoteAgentNotReady``, ``RemoteUnauthorized``,
``RemoteUnavailable``, ``RemoteNoAnswer``, ``RemoteRefused``, ``RemoteTaskGone``, and
``RemoteDestinationRefused`` when the destination policy refuses the address (never retried).
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Awaitable, Callable
from typing import Final, TypeVar

import httpx
from a2a.client.errors import A2AClientError, A2AClientTimeoutError
from a2a.utils.errors import A2AError, TaskNotFoundError

from tiny_harness.core.backoff import Backoff, retry_after
from tiny_harness.core.errors import HarnessError
from tiny_harness.operator.agents import Agent, AgentDirectory, AgentNotReadyError
from tiny_harness.outbound.guard import refusal_in

log = logging.getLogger(__name__)

T = TypeVar("T")

#: The waits before a failed call to an agent is tried again (``spec.maxRetries`` times).
RETRY: Final = Backoff(first=0.5, cap=10.0)


class RemoteCallError(HarnessError):
    """The remote agent could not be talked to, or refused: the sub-task fails with ``reason``
    and this message. ``transient`` errors are tried again first, a bounded number of times."""

    def __init__(
        self,
        reason: str,
        message: str,
        *,
        transient: bool = False,
        retry_after: float | None = None,
    ) -> None:
        super().__init__(message)
        self.reason = reason
        self.transient = transient
        #: The wait the agent asked for (``Retry-After``), believed within the backoff's cap.
        self.retry_after = retry_after


def classify(agent: str, exc: BaseException) -> RemoteCallError:
    """What a failed call to ``agent`` means for the sub-task."""
    if isinstance(exc, RemoteCallError):
        return exc
    refused = refusal_in(exc)
    if refused is not None:
        return RemoteCallError(
            "RemoteDestinationRefused", f"agent {agent} was not called: {refused}"
        )
    cause = exc.__cause__
    if isinstance(exc, A2AClientTimeoutError) or isinstance(cause, httpx.TimeoutException):
        return RemoteCallError(
            "RemoteUnavailable", f"agent {agent} did not answer in time", transient=True
        )
    if isinstance(cause, httpx.HTTPStatusError):
        code = cause.response.status_code
        if code in (401, 403):
            return RemoteCallError(
                "RemoteUnauthorized",
                f"agent {agent} refused the harness's credentials (HTTP {code}): check the "
                f"Secret that harnessagent {agent}'s spec.headers name",
            )
        if code == 404:
            return RemoteCallError(
                "RemoteAgentUnavailable",
                f"agent {agent} is not at the address its card gave (HTTP 404): the agent has "
                f"moved or gone; check harnessagent {agent}'s spec.cardUrl",
            )
        if code == 429 or code >= 500:
            return RemoteCallError(
                "RemoteUnavailable",
                f"agent {agent} answered HTTP {code}",
                transient=True,
                retry_after=retry_after(cause.response.headers),
            )
        return RemoteCallError("RemoteRefused", f"agent {agent} answered HTTP {code}: {exc}")
    if isinstance(cause, httpx.RequestError) or isinstance(exc, (OSError, httpx.RequestError)):
        return RemoteCallError(
            "RemoteUnavailable", f"agent {agent} could not be reached ({exc})", transient=True
        )
    if isinstance(exc, TaskNotFoundError):
        return RemoteCallError(
            "RemoteTaskGone", f"agent {agent} no longer has the remote task: {exc}"
        )
    if isinstance(exc, A2AClientError) and cause is None:
        return RemoteCallError("RemoteUnavailable", f"agent {agent}: {exc}", transient=True)
    if isinstance(exc, A2AError | A2AClientError):
        return RemoteCallError("RemoteRefused", f"agent {agent} refused the request: {exc}")
    raise exc


async def with_retries(agent: Agent, call: Callable[[], Awaitable[T]]) -> T:
    """``call``, tried again on transient failures as the agent's spec allows."""
    budget = agent.spec.max_retries if agent.spec is not None else 0
    for attempt in range(budget + 1):
        try:
            return await call()
        except asyncio.CancelledError:
            raise
        except Exception as exc:
            failure = classify(agent.name, exc)
            if not failure.transient or attempt == budget:
                if failure.transient:
                    failure = RemoteCallError(
                        failure.reason, f"{failure} ({attempt + 1} attempts)", transient=True
                    )
                raise failure from None
            delay = RETRY.delay(attempt + 1, retry_after=failure.retry_after)
            log.info("agent %s: %s; trying again in %.1fs", agent.name, failure, delay)
            await asyncio.sleep(delay)
    raise AssertionError("unreachable")  # pragma: no cover


async def settled_agent(directory: AgentDirectory, namespace: str, name: str) -> Agent:
    """The agent a sub-task runs on, once its card is known; else why not, as the sub-task's
    failure."""
    try:
        return await directory.settled(namespace, name)
    except AgentNotReadyError as exc:
        raise RemoteCallError("RemoteAgentNotReady", str(exc)) from None
